"""TR105 on real code (issue 11, dev sweep): a download that the module then
unpickles is a defect, summarized at its first place with related locations;
public files read without an unpickler (TensorFlow checkpoints, JSON, text)
are one advice, hidden by default."""

from __future__ import annotations

from torchreview.engine.runner import Settings, run_review

GPT_DOWNLOAD = """\
import json
import os
import urllib.request

import tensorflow as tf


def download_and_load_gpt2(model_size, models_dir):
    base_url = "https://openaipublic.blob.core.windows.net/gpt-2/models"
    filenames = ["checkpoint", "encoder.json", "hparams.json", "model.ckpt.index", "vocab.bpe"]
    model_dir = os.path.join(models_dir, model_size)
    for filename in filenames:
        file_url = os.path.join(base_url, model_size, filename)
        file_path = os.path.join(model_dir, filename)
        urllib.request.urlretrieve(file_url, file_path)
    tf_ckpt_path = tf.train.latest_checkpoint(model_dir)
    settings = json.load(open(os.path.join(model_dir, "hparams.json")))
    return settings, tf.train.load_variable(tf_ckpt_path, "model/wte")
"""

TEXT = """\
import urllib.request

urllib.request.urlretrieve("https://example.org/the-verdict.txt", "the-verdict.txt")
with open("the-verdict.txt") as handle:
    raw_text = handle.read()
"""

PICKLED = """\
import pickle
import urllib.request

import numpy as np
import torch


def features(root):
    urllib.request.urlretrieve("https://example.org/f.pkl", root + "/f.pkl")
    return pickle.load(open(root + "/f.pkl", "rb"))


def weights(root):
    urllib.request.urlretrieve("https://example.org/w.pt", "w.pt")
    return torch.load("w.pt", weights_only=False)


def safe(root):
    urllib.request.urlretrieve("https://example.org/s.pt", "s.pt")
    urllib.request.urlretrieve("https://example.org/a.npy", "a.npy")
    return torch.load("s.pt", weights_only=True), np.load("a.npy")
"""


def _review(tmp_path, files, **kw):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return run_review([str(tmp_path)], Settings(rule_codes=("TR105",), jobs=1, **kw)).findings


def test_public_checkpoints_read_without_pickle_are_one_hidden_advice(tmp_path):
    files = {"gpt_download.py": GPT_DOWNLOAD, "ch02.py": TEXT}
    assert _review(tmp_path, files, advice_codes=()) == []
    (advice,) = _review(tmp_path, files)
    assert advice.kind == "advice" and not advice.related
    assert advice.path.endswith("ch02.py") and advice.line == 3  # the first download, by path
    assert "downloads in" not in advice.message  # no repo-wide tally of files that are not unpickled


def test_unpickled_downloads_are_one_defect_at_the_first_with_related_locations(tmp_path):
    files = {"a_fetch.py": PICKLED, "b_fetch.py": PICKLED, "ch02.py": TEXT}
    shown = _review(tmp_path, files, advice_codes=())
    (defect,) = shown
    assert defect.kind == "defect" and defect.path.endswith("a_fetch.py") and defect.line == 9
    assert sorted((r.path.rsplit("/", 1)[-1], r.line) for r in defect.related) == [
        ("a_fetch.py", 14), ("b_fetch.py", 9), ("b_fetch.py", 14)]
    assert "same in 3 more places" in defect.message
    everything = _review(tmp_path, files)
    assert sorted((f.kind, f.path.rsplit("/", 1)[-1], f.line) for f in everything) == [
        ("advice", "a_fetch.py", 19), ("defect", "a_fetch.py", 9)]


def test_a_plain_torch_load_runs_code_only_before_torch_2_6(tmp_path):
    text = "import torch, urllib.request\nurllib.request.urlretrieve('https://x.org/m.pt', 'm.pt')\n" \
           "model = torch.load('m.pt')\n"
    assert [f.kind for f in _review(tmp_path, {"get.py": text}, target_torch=(2, 4))] == ["defect"]
    assert [f.kind for f in _review(tmp_path, {"get.py": text})] == ["advice"]
