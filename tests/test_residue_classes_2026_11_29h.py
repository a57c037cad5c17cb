"""Classes of findings judged false or noise on the sweeps of the eighth 2026-11-29
session, each as a near-miss that must stay silent beside a positive that must stay."""
from __future__ import annotations

from pathlib import Path

from torchreview.engine.runner import Settings, run_review


def _found(root: Path, codes: tuple[str, ...], **kw) -> list:
    found = run_review([str(root)], Settings(rule_codes=codes, jobs=1, min_confidence="low", **kw)).findings
    return [p for f in found for p in (f.parts or (f,))]


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


# --- TR501: a layer's weight replaced by a parameter built with `requires_grad=False`,
# then filled by slice assignment (a frozen quantizer; mgh, judged false) ------------------

QUANTIZER = '''import torch
from torch import nn


class Quantizer(nn.Module):
    def __init__(self, nq):
        super().__init__()
        self.quantizer = q = nn.Conv1d(1, 2 * nq, kernel_size=1, bias=True)
        q.weight = nn.Parameter(q.weight.detach(), requires_grad=False)
        q.weight[:nq] = -1.0
        q.bias[:nq] = 1.0

    def forward(self, x):
        return self.quantizer(x)
'''


def test_tr501_leaf_replaced_by_frozen_parameter_is_silent(tmp_path):
    found = _found(_write(tmp_path, {"quant.py": QUANTIZER}), ("TR501",))
    # the weight was replaced by a frozen parameter; the bias was not: still reported
    assert [(f.code, f.line) for f in found] == [("TR501", 11)]
