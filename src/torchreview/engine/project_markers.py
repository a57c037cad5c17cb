"""What marks the root folder of a project: the files whose folder is where a project's
code, settings and checkpoints are found relative to (an install marker, a requirements
file, a git checkout). One table for every question that walks up to a project root."""

from __future__ import annotations

import os

PROJECT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", "requirements.txt", ".git")


def marks_project(folder: str) -> bool:
    """``folder`` holds a project marker."""
    return any(os.path.exists(os.path.join(folder, m)) for m in PROJECT_MARKERS)
