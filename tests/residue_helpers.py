"""Helpers of the residue-class tests: review a small written project with chosen rules."""
from __future__ import annotations

from pathlib import Path

from torchreview.engine.runner import Settings, run_review


def found(root: Path, codes: tuple[str, ...], **kw) -> list:
    """The findings of ``codes`` at every confidence, merged findings flattened to their parts."""
    result = run_review([str(root)], Settings(rule_codes=codes, jobs=1, min_confidence="low", **kw))
    # a file the review could not finish (an internal error) would pass any near-miss: none allowed
    assert not [e for e in result.errors if "internal error" in str(e)], result.errors
    return [p for f in result.findings for p in (f.parts or (f,))]


def write(root: Path, files: dict[str, str]) -> Path:
    """Write ``files`` (relative name -> text) under ``root``."""
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


# a model whose dropout makes its mode matter (TR207/TR504 fixtures): `class Net` built on `nn`
DROPOUT_NET = '''class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.drop = nn.Dropout(0.1)
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(self.drop(x))
'''


def pickle_calling(module: bytes, name: bytes, arg: bytes) -> bytes:
    """A protocol-3 pickle that calls ``module.name(arg)``: PROTO 3, GLOBAL module name,
    SHORT_BINUNICODE arg, TUPLE1, REDUCE, STOP (bytes for the scanner, never unpickled)."""
    return b"\x80\x03c" + module + b"\n" + name + b"\nq\x00X" + len(arg).to_bytes(4, "little") + arg + \
        b"q\x01\x85q\x02Rq\x03."

