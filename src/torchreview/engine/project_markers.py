"""What marks the root folder of a project: the files whose folder is where a project's
code, settings and checkpoints are found relative to (an install marker, a requirements
file, a git checkout). One table for every question that walks up to a project root."""

from __future__ import annotations

import os

PROJECT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", "requirements.txt", ".git")


# A folder holding one of these is a saved model, not a project: MLflow writes `MLmodel` with
# the `requirements.txt`/`conda.yaml` of the environment the model was logged from, once per
# run (graphexplainapp's `experiments/<run>/artifacts/model/`: sixteen "projects" that each
# repeated one pickle alert, judged one root cause)
SAVED_MODEL_MARKERS = ("MLmodel",)


def marks_project(folder: str) -> bool:
    """``folder`` holds a project marker and is not a saved model's folder."""
    return any(os.path.exists(os.path.join(folder, m)) for m in PROJECT_MARKERS) and \
        not any(os.path.exists(os.path.join(folder, m)) for m in SAVED_MODEL_MARKERS)
