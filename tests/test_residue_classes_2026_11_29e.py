"""Classes of findings judged noise/false on the sweeps of the fifth 2026-11-29
session (and carry-overs of the fourth), each as a near-miss that must stay
silent (or hidden by default) beside a positive that must stay."""
from __future__ import annotations

from pathlib import Path

from torchreview.engine.runner import Settings, run_review


def _found(root: Path, codes: tuple[str, ...], **kw) -> list:
    return run_review([str(root)], Settings(rule_codes=codes, jobs=1, min_confidence="low", **kw)).findings


def _confidences(root: Path, codes: tuple[str, ...], **kw) -> dict[int, str]:
    """{line: confidence} of the findings of ``codes`` under ``root``."""
    return {f.line: f.confidence for f in _found(root, codes, **kw)}


HOOK_ON_ANOTHER_CLASS = '''import torch
from torch import nn


class Inner(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 8), nn.ReLU())
        self.net.register_full_backward_hook(lambda m, gi, go: (gi[0] * scale,))

    def forward(self, x):
        return self.net(x)


class Outer(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = Inner(2.0)

    def sample(self, x):
        return self.net.forward(x)


class Hooked(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(8, 8)
        self.net.register_forward_hook(lambda m, i, o: o * 2)

    def sample(self, x):
        return self.net.forward(x)
'''


def test_a_hook_on_the_same_attribute_name_of_another_class_is_not_this_receiver(tmp_path):
    """nvdiffrec: `_MLP.__init__` hooks its own `self.net` (a Sequential); `MLPTexture3D`
    calls `self.net.forward(...)` where its `self.net` is the `_MLP`. The texts match, the
    modules do not: the hook still runs inside `_MLP.forward`, so the direct call is at most
    medium (hooks elsewhere in the file), never high. The same class hooking the very
    attribute it calls `.forward` on stays high."""
    (tmp_path / "mlp.py").write_text(HOOK_ON_ANOTHER_CLASS)
    conf = _confidences(tmp_path, ("TR509",))
    assert conf.get(31) == "high"
    assert conf.get(21) in ("medium", "low")


FROZEN_THROUGH_ATTR = '''import torch
from torch import nn


class FrozenTable(nn.Module):
    def __init__(self, vectors, out_dim):
        super().__init__()
        self.pretrained = [nn.Embedding(vectors.size(0), vectors.size(1))]
        self.pretrained[0].weight.data = vectors
        self.pretrained[0].weight.requires_grad = False
        self.projection = nn.Linear(vectors.size(1), out_dim)

    def forward(self, x):
        return self.projection(self.pretrained[0](x.cpu()).to(x.device))


class TrainedTable(nn.Module):
    def __init__(self, vectors, out_dim):
        super().__init__()
        self.pretrained = [nn.Embedding(vectors.size(0), vectors.size(1))]
        self.pretrained[0].weight.data = vectors
        self.projection = nn.Linear(vectors.size(1), out_dim)

    def forward(self, x):
        return self.projection(self.pretrained[0](x))
'''


def test_a_one_element_list_frozen_through_the_attribute_is_kept_out_on_purpose(tmp_path):
    """decaNLP: `self.pretrained_embeddings = [nn.Embedding(...)]` whose `[0].weight` gets the
    GloVe vectors and `requires_grad = False` in the same constructor, looked up on the CPU in
    `forward`: the one-element list keeps the frozen table out of `.cuda()`, the optimizer
    and the checkpoint on purpose. The same list without the freezing stays a defect."""
    (tmp_path / "emb.py").write_text(FROZEN_THROUGH_ATTR)
    lines = {f.line for f in _found(tmp_path, ("TR508",))}
    assert 20 in lines
    assert 8 not in lines
