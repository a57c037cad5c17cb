"""Issue 11/14, held-out sweep judged independently (2026-11-25): classes of
noise and false findings, each checked here by the kind and place of what is
reported (the fixtures check where; these check how it is shown by default)."""

from __future__ import annotations

from pathlib import Path

from torchreview.engine.runner import Settings, run_review

FIXTURES = Path(__file__).parent / "fixtures"


def _review(path, codes: tuple[str, ...], **kw):
    return run_review([str(path)], Settings(rule_codes=codes, jobs=1, **kw)).findings


def _write(tmp_path, files: dict[str, str]):
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return tmp_path


# --- TR518: what breaks a resume is a counter that restarts ---------------------------

def test_resume_kinds_follow_what_restarts():
    folder = FIXTURES / "project" / "TR518_resume_without_training_state"
    got = {(Path(f.path).name, f.line): (f.kind, f.severity.label)
           for f in _review(folder, ("TR518",), advice_codes=("TR518",))}
    assert got[("cifar_resume.py", 14)] == ("defect", "medium")  # the cosine schedule restarts
    assert got[("checkpointing.py", 5)] == ("defect", "medium")  # the saved epoch is not read back
    # Adam whose step counter is restored: the moments restart mid-run
    assert got[("diffusion_trainer.py", 22)] == ("likely-defect", "medium")
    adam_saved = _review(FIXTURES / "project" / "TR518_manual_lr", ("TR518",), advice_codes=())
    assert [(f.kind, "holds it" in f.message) for f in adam_saved] == [("likely-defect", True)]


SGD_RESUME = """\
import argparse
import torch
from torch import nn

parser = argparse.ArgumentParser()
parser.add_argument("--resume", default="")
args = parser.parse_args()
model = nn.Linear(4, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
start = 0
if args.resume:
    ckpt = torch.load(args.resume, weights_only=True)
    model.load_state_dict(ckpt["model"])
    start = ckpt["epoch"] + 1
else:
    model.load_state_dict(torch.load("base_weights.pth", weights_only=True), strict=False)
for epoch in range(start, 10):
    for x, y in [(torch.randn(3, 4), torch.randn(3, 2))]:
        optimizer.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
    torch.save({"model": model.state_dict(), "epoch": epoch}, "last.pt")
"""


def test_momentum_only_resume_is_hidden_advice_and_the_fresh_start_is_no_resume(tmp_path):
    folder = _write(tmp_path / "sgd", {"train.py": SGD_RESUME})
    shown = _review(folder, ("TR518",), advice_codes=("TR518",))
    assert [(f.line, f.kind, f.severity.label) for f in shown] == [(12, "advice", "low")]
    assert _review(folder, ("TR518",), advice_codes=()) == []  # not shown by default
    adam = _write(tmp_path / "adam", {"train.py": SGD_RESUME.replace("SGD(", "Adam(").replace(", momentum=0.9", "")})
    # Adam, and the epoch is restored: the run is meant to continue
    assert [(f.line, f.kind) for f in _review(adam, ("TR518",), advice_codes=())] == [(12, "likely-defect")]
    weights_only = SGD_RESUME.replace("    start = ckpt[\"epoch\"] + 1\n", "").replace(
        "SGD(", "Adam(").replace(", momentum=0.9", "").replace(', "epoch": epoch', "")
    fresh = _write(tmp_path / "adam_weights", {"train.py": weights_only})
    # Adam, but neither the optimizer is saved nor any counter restored: a warm restart
    assert [f.kind for f in _review(fresh, ("TR518",), advice_codes=("TR518",))] == ["advice"]


def test_restarting_lr_counter_names_the_counter_on_the_resume_line():
    findings = _review(FIXTURES / "project" / "TR518_lr_counter_restarts", ("TR518",), advice_codes=())
    got = {(Path(f.path).name, f.line): f for f in findings}
    detector = got[("detector.py", 24)]  # the first statement of the resume branch, not the print
    assert "`decays`" in detector.message and "`opts.first_iter`" in detector.message
    assert (detector.kind, detector.confidence) == ("defect", "high")  # shown at default settings
    assert "`global_step`" in got[("warmup.py", 11)].message
    assert len(findings) == 2


# --- TR207: modes switched through the object's own methods ---------------------------

OWN_SWITCH = """\
import torch
from torch import nn


class Wrapper:
    def __init__(self):
        self.net_ = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))
        self.names = ["net"]

    def _set(self, training=True):
        for name in self.names:
            module = getattr(self, name + "_")
            module.train(training)

    def a(self):
        self._set(False)

    def b(self):
        self._set()

    def c(self, flag):
        self._set(flag)

    def d(self):
        self._set(training=False)


def evaluate(model, x):
    with torch.no_grad():
        return model(x)


def loop(model, x, opt):
    model.train()
    model(x).sum().backward()
    opt.step()
    return evaluate(model, x)
"""


def test_own_method_switches_count_as_the_mode_their_argument_says():
    from model_snippets import ctx_of, node

    ctx = ctx_of(OWN_SWITCH)
    modes = [ctx.flow.own_mode(node(ctx, text)) for text in
             ("self._set(False)", "self._set()", "self._set(flag)", "self._set(training=False)")]
    assert modes == ["eval", "train", "set", "eval"]
    # a caller that trains and then evaluates (the backward is before the call) is no training step
    evaluate = ctx.model.functions["evaluate"][0]
    assert not ctx.flow.shared_forward_helper(evaluate)


# --- TR102: an optional resume of the project's own plain checkpoints ------------------

def test_optional_resume_of_own_plain_checkpoints_is_hidden_advice():
    folder = FIXTURES / "security" / "TR102_own_resume_optional"
    shown = {(Path(p.path).name, p.line): (p.kind, p.severity.label)  # each place, merged or not
             for f in _review(folder, ("TR102",), advice_codes=("TR102",), target_torch=(1, 13))
             for p in (f.parts or (f,))}
    assert shown == {("pretrain.py", 18): ("advice", "low"), ("finetune.py", 16): ("defect", "high"),
                     ("finetune.py", 37): ("defect", "high")}
    default = _review(folder, ("TR102",), advice_codes=(), target_torch=(1, 13))
    # the optional resume is not shown by default
    assert sorted(p.line for f in default for p in (f.parts or (f,))) == [16, 37]
