"""TR108's weights-only claim ("a weights-only load will refuse this file") is
about files torch.load reads: a data pickle that no torch.load of the project
names is low confidence (hidden by default); checkpoint-like files and files a
torch.load names keep it (session-4 dev sweep: benchmarking-gnns
atom_dict.pickle, judged noise)."""

from __future__ import annotations

import artifact_craft as craft
from torchreview.engine.runner import Settings, run_review

NEEDS_TRUST = craft.custom_class_pickle()  # a class outside the allow-list: medium, nothing runs


def _tree(tmp_path, loader: str) -> None:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'molgen'\n")
    data = tmp_path / "data"
    data.mkdir()
    for name in ("atom_dict.pickle", "bond_dict.pkl", "vocab.pickle", "model.pth", "cache.ckpt.gz",
                 "frames_train.pickle", "renamed_checkpoint"):
        (data / name).write_bytes(NEEDS_TRUST)
    (data / "renamed_checkpoint").write_bytes(craft.torch_like_zip(NEEDS_TRUST))  # torch.save's format
    (data / "cache.ckpt.gz").write_bytes(__import__("gzip").compress(NEEDS_TRUST))
    (data / "evil.pickle").write_bytes(craft.os_system_reduce())  # code execution: critical anywhere
    (tmp_path / "prepare.py").write_text(loader)


LOADER = """\
import pickle
import torch

with open("data/atom_dict.pickle", "rb") as f:
    atoms = pickle.load(f)  # plain pickle: not a weights-only load
vocab = torch.load("data/vocab.pickle")
for split in ("train", "val"):
    frames = torch.load(f"data/frames_{split}.pickle")
state = torch.load(checkpoint_path)  # a computed path names no file
"""


def _confidence(tmp_path, loader=LOADER, **kw):
    _tree(tmp_path, loader)
    settings = Settings(rule_codes=("TR108",), jobs=1, **kw)
    report = run_review([str(tmp_path)], settings)
    # files of one kind are one finding (TR108 summarizes per project): its parts, one per file
    return {p.path.rsplit("/", 1)[-1]: (p.severity.name, p.confidence)
            for f in report.findings for p in (f.parts or (f,))}


def test_data_pickles_no_torch_load_names_are_low_confidence(tmp_path):
    found = _confidence(tmp_path)
    assert found["atom_dict.pickle"] == ("MEDIUM", "low")  # read by pickle.load only
    assert found["bond_dict.pkl"] == ("MEDIUM", "low")  # read by nothing
    assert found["vocab.pickle"] == ("MEDIUM", "high")  # a torch.load names it
    assert found["frames_train.pickle"] == ("MEDIUM", "high")  # f"data/{split}.pickle" reads .pickle files
    assert found["model.pth"] == ("MEDIUM", "high")  # a checkpoint extension
    assert found["cache.ckpt.gz"] == ("MEDIUM", "high")  # compressed checkpoint
    assert found["renamed_checkpoint"] == ("MEDIUM", "high")  # a torch zip whatever its name
    assert found["evil.pickle"] == ("CRITICAL", "high")  # code execution stays


def test_low_confidence_data_pickles_are_hidden_by_default(tmp_path):
    found = _confidence(tmp_path, min_confidence="high")
    assert "atom_dict.pickle" not in found and "bond_dict.pkl" not in found
    assert {"vocab.pickle", "model.pth", "evil.pickle"} <= set(found)


def test_without_python_files_every_finding_is_kept(tmp_path):
    _tree(tmp_path, "")
    (tmp_path / "prepare.py").unlink()
    report = run_review([str(tmp_path)], Settings(rule_codes=("TR108",), jobs=1))
    parts = [p for f in report.findings for p in (f.parts or (f,))]
    assert {p.confidence for p in parts if p.path.endswith("atom_dict.pickle")} == {"high"}
