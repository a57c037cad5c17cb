"""Small installable projects written by tests (shared by the residue-class tests)."""
from __future__ import annotations

from pathlib import Path


def package(root: Path, name: str = "pkg") -> Path:
    """An installable project at ``root`` (a pyproject naming ``name``) with the package
    folder ``name``; returns that folder."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text(f'[project]\nname = "{name}"\n')
    (root / name).mkdir()
    (root / name / "__init__.py").write_text("")
    return root / name
