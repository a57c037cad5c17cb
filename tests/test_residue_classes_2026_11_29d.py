"""Classes of findings judged noise/false on the sweeps of the fourth 2026-11-29
session, each as a near-miss that must stay silent (or hidden by default) beside
a positive that must stay."""
from __future__ import annotations

from pathlib import Path

from projects import package as _package
from torchreview.engine.runner import Settings, run_review


def _found(root: Path, codes: tuple[str, ...], **kw) -> list:
    return run_review([str(root)], Settings(rule_codes=codes, jobs=1, min_confidence="low", **kw)).findings


def _by_line(findings, path_end: str) -> dict[int, str]:
    return {f.line: f.confidence for f in findings if f.path.endswith(path_end)}


HUB_LOADS = '''import torch
from transformers import AutoModel


def feature_extractor():
    return torch.hub.load("facebookresearch/dinov2", "dinov2_vitb14", trust_repo=True)


def third_party_extractor():
    return torch.hub.load("someuser/fancy-features", "extractor", trust_repo=True)


def official_encoder():
    return AutoModel.from_pretrained("microsoft/custom-encoder", trust_remote_code=True)


def community_encoder():
    return AutoModel.from_pretrained("someuser/custom-encoder", trust_remote_code=True)


def encoder_unpinned(name):
    return AutoModel.from_pretrained(name, trust_remote_code=True)
'''

PINNED = '''from transformers import AutoConfig


def heads_of(model_id, revision):
    config = AutoConfig.from_pretrained(model_id, revision=revision, trust_remote_code=True)
    return config.num_attention_heads
'''


def test_remote_code_of_a_model_publisher_or_a_pinned_variable_revision_is_medium(tmp_path):
    """pyiqa and k-diffusion loading DINOv2 from facebookresearch with `trust_repo=True`,
    learn2learn loading RoBERTa from pytorch/fairseq, open-r1 passing its own revision
    variable: judged noise (the model's own authors, a deliberate pin). A third-party
    repository and an unpinned model id in shipped code stay high."""
    pkg = _package(tmp_path / "proj", "proj")
    (pkg / "features.py").write_text(HUB_LOADS)
    findings = _found(tmp_path / "proj", ("TR104",))
    assert _by_line(findings, "features.py") == {6: "medium", 10: "high", 14: "medium", 18: "high", 22: "high"}
    pinned = _package(tmp_path / "pinned", "pinned")
    (pinned / "hub.py").write_text(PINNED)
    assert _by_line(_found(tmp_path / "pinned", ("TR104",)), "hub.py") == {5: "medium"}


ONE_EPOCH = '''import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler


def train(model, dataset, optimizer, num_epochs):
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, sampler=sampler, batch_size=32)
    for epoch in range(num_epochs):
        for x, y in loader:
            optimizer.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()


def main(model, dataset, optimizer):
    num_epochs = 1
    train(model, dataset, optimizer, num_epochs)
'''


def test_set_epoch_is_not_asked_of_an_epoch_loop_that_runs_once(tmp_path):
    """accel-training-pt2's DDP chapter hard-codes `num_epochs = 1` in `main()`: with one
    epoch there is no second one to repeat the order (judged noise). Ten epochs in the
    caller stay reported."""
    (tmp_path / "once").mkdir()
    (tmp_path / "once" / "ddp.py").write_text(ONE_EPOCH)
    assert not _found(tmp_path / "once", ("TR513",))
    (tmp_path / "many").mkdir()
    (tmp_path / "many" / "ddp.py").write_text(ONE_EPOCH.replace("num_epochs = 1", "num_epochs = 10"))
    assert [f.line for f in _found(tmp_path / "many", ("TR513",))] == [7]
