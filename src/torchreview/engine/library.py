"""Library knowledge as data (``data/library_models.json``), read once.

* ``constructor(qualname)``: what a library call returns -- its kind, the mode
  the module comes back in (``"train"``/``"eval"``) and the layers it may hold
  (``"batchnorm"``, ``"dropout"``) -- for torchvision/timm builders, hub loads,
  ``from_pretrained`` of transformers/diffusers model classes, ``torch.jit.load``.
* ``frameworks(model)`` / ``takes_over(model, duty)``: the training frameworks a
  file hands its loop to, recognised by evidence (an entry call such as
  ``Trainer(...)``, ``Accelerator(...)``, ``create_supervised_trainer(...)``, or
  a class deriving from ``LightningModule`` / ``transformers.Trainer``), never by
  a plain import (``from transformers import AutoModel`` trains nothing), and
  the duties each performs for the user (``zero_grad``, ``backward``, ``step``,
  ``eval``, ``no_grad``, ``set_epoch``, ``scaling``, ``device``, ``clipping``,
  ``no_sync``).
"""

from __future__ import annotations

import fnmatch
import json
from functools import lru_cache
from importlib import resources

DUTIES = frozenset({"zero_grad", "backward", "step", "eval", "no_grad", "set_epoch", "scaling", "device",
                    "clipping", "no_sync"})


@lru_cache(maxsize=None)
def _table() -> dict:
    text = resources.files("torchreview.data").joinpath("library_models.json").read_text(encoding="utf-8")
    return json.loads(text)


@lru_cache(maxsize=4096)
def constructor(qualname: str | None) -> dict | None:
    """The entry of ``constructors`` a library call's qualified name matches (the
    most specific pattern first), or None."""
    if not qualname:
        return None
    best = None
    for entry in _table()["constructors"]:
        if fnmatch.fnmatchcase(qualname, entry["match"]):
            words = entry.get("class_words")
            if words and not any(w in qualname.split(".")[-2] for w in words):
                continue
            if best is None or len(entry["match"]) > len(best["match"]):
                best = entry
    return best


def frameworks(model) -> list[dict]:
    """The frameworks this file (a ``SemanticModel``) hands its loop to, by evidence."""
    memo = model.__dict__.setdefault("_tr_frameworks", None)
    if memo is not None:
        return memo
    table = _table()["frameworks"]
    entries = {q: f for f in table for q in f["entry"]}
    bases = {q: f for f in table for q in f["base_classes"]}
    found: list[dict] = []
    for call in model.calls:
        f = entries.get(model.qualname(call.func) or "")
        if f is not None and f not in found:
            found.append(f)
    for cls in model.classes.values():
        for base in cls.bases:
            f = bases.get(model.qualname(base) or "")
            if f is not None and f not in found:
                found.append(f)
    model.__dict__["_tr_frameworks"] = found
    return found


def takes_over(model, duty: str) -> bool:
    """Does a framework this file uses perform ``duty`` for the user?"""
    if duty not in DUTIES:
        raise ValueError(f"unknown framework duty: {duty}")
    return any(duty in f["takes_over"] for f in frameworks(model))


def returns_in_mode(qualname: str | None) -> str | None:
    """The mode a library constructor's module comes back in, when the table says."""
    entry = constructor(qualname)
    return entry.get("mode") if entry is not None else None


class FileLibrary:
    """``ctx.library``: the library knowledge as it applies to one file."""

    def __init__(self, model) -> None:
        self._model = model

    @property
    def frameworks(self) -> tuple[str, ...]:
        """Names of the training frameworks this file hands its loop to (by evidence)."""
        return tuple(f["name"] for f in frameworks(self._model))

    def takes_over(self, duty: str) -> bool:
        """A framework this file uses performs ``duty`` (one of ``DUTIES``) for the user."""
        return takes_over(self._model, duty)

    @staticmethod
    def constructor(qualname: str | None) -> dict | None:
        """What a library call returns: ``{"kind", "mode", "contains", ...}`` or None."""
        return constructor(qualname)
