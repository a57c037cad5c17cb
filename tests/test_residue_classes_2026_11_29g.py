"""Classes of findings judged false or noise on the sweeps of the seventh 2026-11-29
session, each as a near-miss that must stay silent beside a positive that must stay."""
from __future__ import annotations

from torchreview.engine.runner import Settings, run_review
from residue_helpers import found as _found, write as _write


# --- TR504: a trainer class keeps the model its constructor is handed (`self.model =
# model.to(device)`); a sampling helper calls `self.model.eval()` each epoch. When every
# construction of the trainer (in another file) passes a model without dropout or
# BatchNorm, eval mode changes nothing (generative-pytorch, judged noise) ------------------

MODEL = '''import torch
from torch import nn


class UNet(nn.Module):
    def __init__(self, channels, dropout=0.0):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1)
        self.norm = nn.GroupNorm(1, channels)
        self.drop = nn.Dropout(dropout)

    def forward(self, x):
        return self.drop(self.norm(self.conv(x)))


class Trainer:
    def __init__(self, model, loader, optimizer, device="cpu"):
        self.model = model.to(device)
        self.loader = loader
        self.optimizer = optimizer

    def train(self, epochs):
        self.model.train()
        for epoch in range(epochs):
            for x, y in self.loader:
                self.optimizer.zero_grad()
                loss = ((self.model(x) - y) ** 2).mean()
                loss.backward()
                self.optimizer.step()
            self.sample(epoch)

    @torch.no_grad()
    def sample(self, epoch):
        self.model.eval()
        return self.model(torch.randn(4, 3, 8, 8))
'''

TRAIN = '''import torch

from model import Trainer, UNet


def main(loader):
    model = UNet(3{dropout})
    optimizer = torch.optim.Adam(model.parameters())
    trainer = Trainer(model, loader, optimizer)
    trainer.train(10)
'''


def test_tr504_trainer_handed_a_mode_free_model_is_silent(tmp_path):
    root = _write(tmp_path, {"model.py": MODEL, "train.py": TRAIN.format(dropout="")})
    assert not _found(root, ("TR504",))


def test_tr504_trainer_handed_a_model_with_dropout_is_reported(tmp_path):
    root = _write(tmp_path, {"model.py": MODEL, "train.py": TRAIN.format(dropout=", dropout=0.1")})
    assert [f.code for f in _found(root, ("TR504",))] == ["TR504"]


def test_tr504_trainer_that_replaces_its_model_is_reported(tmp_path):
    # `self.model` is also assigned outside the constructor: what it holds is not
    # only what the constructions pass
    model = MODEL.replace("    @torch.no_grad()\n", "    def load(self, net):\n        self.model = net\n\n"
                          "    @torch.no_grad()\n")
    root = _write(tmp_path, {"model.py": model, "train.py": TRAIN.format(dropout="")})
    assert [f.code for f in _found(root, ("TR504",))] == ["TR504"]


# --- one root cause, one finding: a training step pasted into two otherwise different
# scripts carries its mistake into both (pytorch-in-a-day TR507, judged noise as a
# repeat); the copy becomes a related location. Two different functions that share
# only the flagged line stay two findings ---------------------------------------------

STEP = '''
def train_step(model, loader, loss_fn, optimizer, device):
    model.train()
    train_loss, train_acc = 0, 0
    for X, y in loader:
        X, y = X.to(device), y.to(device)
        y_pred = model(X)
        loss = loss_fn(y_pred, y)
        train_loss += loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    train_loss = train_loss / len(loader)
    print(f"Train loss: {train_loss:.5f}")
'''

OTHER_STEP = '''
def run_epoch(model, loader, loss_fn, optimizer, scheduler, epoch):
    model.train()
    train_loss = 0
    for X, y in loader:
        y_pred = model(X)
        loss = loss_fn(y_pred, y)
        train_loss += loss
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        scheduler.step()
    print("epoch", epoch, "lr", scheduler.get_last_lr(), "loss", train_loss)
'''


def _script(head: str, body: str, tail: str) -> str:
    return f"import torch\nfrom torch import nn\n\n{head}\n{body}\n\n{tail}\n"


def test_function_pasted_into_two_scripts_is_one_finding(tmp_path):
    a = _script("EPOCHS = 3\nBATCH = 32\nprint('tensors and shapes first')", STEP,
                "def plot(history):\n    print(sorted(history.items()))\n    return len(history)")
    b = _script("import torchvision\nDATA = torchvision.datasets.FashionMNIST", STEP,
                "def make_model():\n    return nn.Sequential(nn.Flatten(), nn.Linear(784, 10))")
    root = _write(tmp_path, {"01_basics.py": a, "03_vision.py": b})
    found = run_review([str(root)], Settings(rule_codes=("TR507",), jobs=1, min_confidence="low")).findings
    assert len(found) == 1 and len(found[0].parts) == 2


def test_different_functions_sharing_the_flagged_line_are_one_finding_too(tmp_path):
    # no copies of one function, but the same line and the same message in two files of one
    # project: the same mistake again (engine/merge.py, project-wide repeats)
    a = _script("EPOCHS = 3", STEP, "")
    b = _script("EPOCHS = 4", OTHER_STEP, "")
    root = _write(tmp_path, {"01_basics.py": a, "03_vision.py": b})
    found = run_review([str(root)], Settings(rule_codes=("TR507",), jobs=1, min_confidence="low")).findings
    assert len(found) == 1 and len(found[0].parts) == 2


# --- TR508/TR511: an attribute nothing reads (rl4co's `self.pointer` list of modules,
# SSLRec's `self.beh_embedding = nn.Parameter(...).cuda()`, judged noise): how it is
# stored loses nothing. Read in forward, through an instance in another file, or by a
# subclass in another file, it stays reported ----------------------------------------

DECODER = '''import torch
from torch import nn


class Decoder(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.project = nn.Linear(dim, dim)
        self.pointer = [nn.Linear(dim, dim) for _ in range(heads)]
        self.bias = nn.Parameter(torch.zeros(dim)).cuda()

    def forward(self, x):
        return self.project(x){reads}
'''


def test_attributes_nothing_reads_are_silent(tmp_path):
    root = _write(tmp_path, {"decoder.py": DECODER.format(reads="")})
    assert not _found(root, ("TR508", "TR511"))


def test_attributes_read_in_forward_are_reported(tmp_path):
    reads = " + self.bias + sum(p(x) for p in self.pointer)"
    root = _write(tmp_path, {"decoder.py": DECODER.format(reads=reads)})
    assert sorted(f.code for f in _found(root, ("TR508", "TR511"))) == ["TR508", "TR511"]


def test_attributes_read_by_a_subclass_in_another_file_are_reported(tmp_path):
    sub = ("from decoder import Decoder\n\n\nclass Multi(Decoder):\n    def forward(self, x):\n"
           "        return sum(p(x) for p in self.pointer) + self.bias\n")
    root = _write(tmp_path, {"decoder.py": DECODER.format(reads=""), "multi.py": sub})
    assert sorted(f.code for f in _found(root, ("TR508", "TR511"))) == ["TR508", "TR511"]


def test_attributes_read_through_an_instance_in_another_file_are_reported(tmp_path):
    use = ("from decoder import Decoder\n\nnet = Decoder(8, 2)\n"
           "print([p.weight.shape for p in net.pointer], net.bias.shape)\n")
    root = _write(tmp_path, {"decoder.py": DECODER.format(reads=""), "inspect_net.py": use})
    assert sorted(f.code for f in _found(root, ("TR508", "TR511"))) == ["TR508", "TR511"]


# --- TR421: `.permute(...).view(...)` of a tensor whose layout the function cannot see (a
# parameter: TPVFormer's `key`, permuted the same way by its caller, so this permute puts
# it back in order; judged false) is medium, hidden by default; the same of a tensor an
# `nn.Linear` lays out in the function stays high ---------------------------------------

CROSS_ATTENTION = '''import torch
from torch import nn


class CrossAttention(nn.Module):
    def __init__(self, dims):
        super().__init__()
        self.proj = nn.Linear(dims, dims)
        self.dims = dims

    def forward(self, query, key):
        num_cams, l, bs, dims = key.shape
        {source}
        key = key.permute(0, 2, 1, 3).view(num_cams * bs, l, self.dims)
        return query + key.sum()
'''


def test_tr421_permute_of_a_parameter_is_hidden_by_default(tmp_path):
    root = _write(tmp_path, {"attn.py": CROSS_ATTENTION.format(source="pass")})
    found = _found(root, ("TR421",))
    assert [f.confidence for f in found] == ["medium"]
    assert not run_review([str(root)], Settings(rule_codes=("TR421",), jobs=1, min_confidence="high")).findings


def test_tr421_permute_of_a_tensor_laid_out_here_stays_high(tmp_path):
    root = _write(tmp_path, {"attn.py": CROSS_ATTENTION.format(source="key = self.proj(key)")})
    assert [f.confidence for f in _found(root, ("TR421",))] == ["high"]


# --- TR425: `torchvision.transforms.functional_tensor` in a project pinned to torch 1.13 /
# torchvision 0.14 (StableSR, judged noise): the module is the supported one there, not
# reported; unpinned it is a crash (high); pinned to torch 2.1 a deprecation --------------

DEGRADE = ('import torch\nfrom torchvision.transforms.functional_tensor import rgb_to_grayscale\n\n\n'
           'def gray(img):\n    return rgb_to_grayscale(img, num_output_channels=1)\n')


def _tr425(tmp_path, pins):
    files = {"basicsr/degradations.py": DEGRADE}
    if pins:
        files["requirements.txt"] = pins
    root = _write(tmp_path, files)
    return _found(root, ("TR425",), detect_torch=True)


def test_tr425_functional_tensor_in_a_project_pinned_below_torch_2_is_silent(tmp_path):
    assert not _tr425(tmp_path, "torch==1.13.1\ntorchvision==0.14.1\n")


def test_tr425_functional_tensor_unpinned_is_a_crash(tmp_path):
    assert [(f.severity.label, f.kind) for f in _tr425(tmp_path, "")] == [("high", "defect")]


def test_tr425_functional_tensor_on_torch_2_1_is_a_deprecation(tmp_path):
    assert [f.kind for f in _tr425(tmp_path, "torch==2.1.0\n")] == ["advice"]


# --- targeted torch: a lowercase `readme.md` listing `- pytorch ==1.1.0` (SHOT, judged noise
# for `torch._six` findings on that pin) pins torch 1.1; a floor (`pytorch >= 1.1.0`) does not

def test_lowercase_readme_with_spaced_pin_sets_the_target(tmp_path):
    from torchreview.config import detect_target_torch

    (tmp_path / "readme.md").write_text("### Prerequisites\n- python == 3.6.8\n- pytorch ==1.1.0\n"
                                        "- torchvision == 0.3.0\n")
    assert detect_target_torch(str(tmp_path)) == (1, 1)
    (tmp_path / "readme.md").write_text("### Prerequisites\n- pytorch >= 1.1.0\n")
    assert detect_target_torch(str(tmp_path)) is None


def test_singular_requirement_txt_pins_the_target(tmp_path):
    # EnlightenGAN ships `requirement.txt` with `torch==0.3.1` (judged noise: TR425 on that pin)
    from torchreview.config import detect_target_torch

    (tmp_path / "requirement.txt").write_text("torch==0.3.1\ntorchvision==0.2.0\n")
    assert detect_target_torch(str(tmp_path)) == (0, 3)


# --- TR519: the same practice -- the best epoch chosen on the test loader -- in each
# training script of one repository (conv-emotion, four of five judged repeats) is one
# finding listing the places ------------------------------------------------------------

SELECT = '''import torch


def run(model, train_loader, test_loader, optimizer, epochs):
    best = None
    for epoch in range(epochs):
        for x, y in train_loader:
            optimizer.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
        {metric} = evaluate(model, test_loader)
        if best is None or {metric} {op} best:
            best = {metric}
            torch.save(model.state_dict(), "best.pt")


def evaluate(model, loader):
    with torch.no_grad():
        return sum(float(model(x).argmax(1).eq(y).sum()) for x, y in loader)
'''


def test_tr519_one_practice_in_several_scripts_is_one_finding(tmp_path):
    root = _write(tmp_path, {"rnn/train_meld.py": SELECT.format(metric="test_fscore", op=">"),
                             "lstm/train_iemocap.py": SELECT.format(metric="test_loss", op="<")})
    found = run_review([str(root)], Settings(rule_codes=("TR519",), jobs=1, min_confidence="low")).findings
    assert len(found) == 1 and len(found[0].parts) == 2


# --- TR511: `torch.cat` of tensors already placed with `.cuda()` (RLMRec's profile
# embeddings, judged false) is where they are; a cat of fresh CPU constants stays a CPU
# constant. A `.to()` copy whose `.grad` is read after `retain_grad()` (state-spaces'
# gradient check, judged false) has its gradient ----------------------------------------

CAT = '''import torch
from torch import nn


class Profiles(nn.Module):
    def __init__(self, users, items):
        super().__init__()
        a = {a}
        b = {b}
        self.embeds = torch.cat([a, b], dim=0)

    def forward(self, x):
        return x @ self.embeds.t()
'''


def test_tr511_cat_of_placed_tensors_is_silent(tmp_path):
    root = _write(tmp_path, {"m.py": CAT.format(a="torch.tensor(users).float().cuda()",
                                                b="torch.tensor(items).float().cuda()")})
    assert not _found(root, ("TR511",))


def test_tr511_cat_of_cpu_constants_is_reported(tmp_path):
    root = _write(tmp_path, {"m.py": CAT.format(a="torch.zeros(3, 4)", b="torch.ones(3, 4)")})
    assert [f.code for f in _found(root, ("TR511",))] == ["TR511"]


GRADCHECK = '''import torch

device = torch.device("cuda")


def check(dim, n):
    C = torch.ones(dim, n, requires_grad=True).to(device)
    {retain}
    y = (C * 2).sum()
    y.backward()
    print(C.grad)
'''


def test_tr511_copy_with_retain_grad_is_silent(tmp_path):
    root = _write(tmp_path, {"t.py": GRADCHECK.format(retain="C.retain_grad()")})
    assert not _found(root, ("TR511",))


def test_tr511_copy_whose_grad_is_read_is_reported(tmp_path):
    root = _write(tmp_path, {"t.py": GRADCHECK.format(retain="pass")})
    assert [f.code for f in _found(root, ("TR511",))] == ["TR511"]


# --- TR401: a trainer subclass's loop calls `self.standard_loss(x, y)`, a method its base
# class (another module) defines -- and starts with `self.optimizer.zero_grad()`
# (adversarial_robustness's WATrainer, judged false). A method of the class itself that
# does not reset stays reported -----------------------------------------------------------

BASE_TRAINER = '''import torch


class Trainer:
    def __init__(self, model, lr):
        self.model = model
        self.optimizer = torch.optim.SGD(model.parameters(), lr=lr)

    def standard_loss(self, x, y):
        self.optimizer.zero_grad()
        return torch.nn.functional.cross_entropy(self.model(x), y)
'''

SUB_TRAINER = '''from base import Trainer


class AveragedTrainer(Trainer):
{extra}
    def train(self, loader):
        self.model.train()
        for x, y in loader:
            loss = self.standard_loss(x, y)
            loss.backward()
            self.optimizer.step()
'''


def test_tr401_inherited_method_may_reset_the_optimizer(tmp_path):
    root = _write(tmp_path, {"base.py": BASE_TRAINER, "wa.py": SUB_TRAINER.format(extra="")})
    assert not _found(root, ("TR401",))


def test_tr401_own_method_that_does_not_reset_is_reported(tmp_path):
    extra = ("    def standard_loss(self, x, y):\n"
             "        return torch.nn.functional.cross_entropy(self.model(x), y)\n")
    sub = "import torch\n" + SUB_TRAINER.format(extra=extra)
    root = _write(tmp_path, {"base.py": BASE_TRAINER, "wa.py": sub})
    assert [f.code for f in _found(root, ("TR401",))] == ["TR401"]


# --- TR517: a DDP wrap inside a branch that returns (WeakTr's attention-map mode: load,
# wrap, generate, `return`) never wraps the model the training loop below saves (judged
# false); the same wrap without the `return` stays reported --------------------------------

WRAP_THEN_RETURN = '''import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main(args, loader):
    model = nn.Linear(4, 1)
    optimizer = torch.optim.Adam(model.parameters())
    if args.gen_maps:
        checkpoint = torch.load(args.resume, map_location="cpu", weights_only=True)
        model.load_state_dict(checkpoint["model"], strict=False)
        if args.distributed:
            model = DDP(model)
        print(model(torch.randn(2, 4)))
        {leave}
    for epoch in range(10):
        for x, y in loader:
            optimizer.zero_grad()
            (model(x) - y).pow(2).mean().backward()
            optimizer.step()
        torch.save({{"model": model.state_dict(), "epoch": epoch}}, "checkpoint_best.pth")
'''


def test_tr517_wrap_in_a_branch_that_returns_is_silent(tmp_path):
    root = _write(tmp_path, {"main.py": WRAP_THEN_RETURN.format(leave="return")})
    assert not _found(root, ("TR517",))


def test_tr517_wrap_in_a_branch_that_goes_on_is_reported(tmp_path):
    root = _write(tmp_path, {"main.py": WRAP_THEN_RETURN.format(leave="pass")})
    assert [f.code for f in _found(root, ("TR517",))] == ["TR517"]


# --- checkpoint links: one option name (`opt.ckpt_filepath`) in sibling sub-projects names
# each one's own file: the inference script is linked to its own folder's training save,
# not to another baseline's DataParallel save (TVRetrieval, TR517 judged false) -------------

SUB_TRAIN = '''import torch
from torch import nn


def train(opt, loader):
    model = nn.Linear(4, 1)
    {wrap}
    optimizer = torch.optim.Adam(model.parameters())
    for epoch in range(3):
        for x, y in loader:
            optimizer.zero_grad()
            (model(x) - y).pow(2).mean().backward()
            optimizer.step()
        torch.save({{"model": model.state_dict(), "epoch": epoch}}, opt.ckpt_filepath)
'''

SUB_INFER = '''import torch
from torch import nn


def setup_model(opt):
    checkpoint = torch.load(opt.ckpt_filepath, weights_only=True)
    model = nn.Linear(4, 1)
    model.load_state_dict(checkpoint["model"])
    return model
'''


def test_checkpoint_link_prefers_the_loading_folder(tmp_path):
    root = _write(tmp_path, {
        "baselines/cal/train.py": SUB_TRAIN.format(wrap="pass"),
        "baselines/cal/inference.py": SUB_INFER,
        "baselines/xml/train.py": SUB_TRAIN.format(wrap="model = nn.DataParallel(model)"),
    })
    assert not _found(root, ("TR517",))


def test_checkpoint_link_without_a_save_in_the_folder_reaches_the_project(tmp_path):
    root = _write(tmp_path, {
        "baselines/cal/inference.py": SUB_INFER,
        "baselines/xml/train.py": SUB_TRAIN.format(wrap="model = nn.DataParallel(model)"),
    })
    assert [f.code for f in _found(root, ("TR517",))] == ["TR517"]


# --- TR518: a checkpoint named by its step (`'{}.pkl'.format(ckpt_iter)`) whose step the
# resume carries on (`n_iter = ckpt_iter + 1`) restores the counter through the file name
# (CleanUNet, judged false); a step that only names the file stays reported -----------------

NAMED_BY_STEP = '''import os

import torch
from torch import nn


def train(ckpt_dir, ckpt_iter, loader, n_iters):
    net = nn.Linear(4, 1)
    optimizer = torch.optim.Adam(net.parameters())
    if ckpt_iter >= 0:
        model_path = os.path.join(ckpt_dir, "{{}}.pkl".format(ckpt_iter))
        checkpoint = torch.load(model_path, map_location="cpu", weights_only=True)
        net.load_state_dict(checkpoint["model_state_dict"])
        optimizer.load_state_dict(checkpoint["optimizer_state_dict"])
    n_iter = {start}
    while n_iter < n_iters:
        for x, y in loader:
            optimizer.zero_grad()
            (net(x) - y).pow(2).mean().backward()
            optimizer.step()
            if n_iter % 100 == 0:
                torch.save({{"iter": n_iter, "model_state_dict": net.state_dict(),
                            "optimizer_state_dict": optimizer.state_dict()}},
                           os.path.join(ckpt_dir, "{{}}.pkl".format(n_iter)))
            n_iter += 1
'''


def test_tr518_counter_carried_from_the_file_name_is_silent(tmp_path):
    root = _write(tmp_path, {"train.py": NAMED_BY_STEP.format(start="ckpt_iter + 1")})
    assert not _found(root, ("TR518",))


def test_tr518_counter_restarting_at_zero_is_reported(tmp_path):
    root = _write(tmp_path, {"train.py": NAMED_BY_STEP.format(start="0")})
    assert [f.code for f in _found(root, ("TR518",))] == ["TR518"]


# --- TR108: a short text file of case ids starting with "c" (GenericSSL's 42-byte
# `eval_mr2ct.txt`: `ct_train_1005\nct_train_1011\nct_train_1015\n`, judged false) reads as
# a protocol-0 GLOBAL cut short: the whole file ends inside an opcode with nothing called
# before, so unpickling it fails before it could run anything. A payload that calls
# (`REDUCE`) before it is cut stays critical ----------------------------------------------

def test_tr108_short_text_file_cut_inside_an_opcode_is_not_a_pickle(tmp_path):
    from torchreview.artifacts import scan_file

    path = tmp_path / "eval_mr2ct.txt"
    path.write_bytes(b"ct_train_1005\nct_train_1011\nct_train_1015\n")
    assert scan_file(str(path)) == ([], [])


def test_tr108_payload_cut_after_its_call_is_still_critical(tmp_path):
    from torchreview.artifacts import scan_file

    path = tmp_path / "notes.txt"
    path.write_bytes(b"cos\nsystem\n(S'echo hi'\ntR")
    findings, _ = scan_file(str(path))
    assert [f.severity.label for f in findings] == ["critical"]


# --- TR207: the model class's own mode method (`net.set_mode("test")`, whose body runs
# `self.eval()` for "eval"/"valid"/"test" and `self.train()` for "train") switches the
# model the way its argument picks (CE7454's Quick Draw notebook, judged false) ------------

MODE_METHOD = '''import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)
        self.drop = nn.Dropout(0.5)

    def forward(self, x):
        return self.fc(self.drop(x))

    def set_mode(self, mode):
        self.mode = mode
        if mode in ["eval", "valid", "test"]:
            self.eval()
        elif mode in ["train"]:
            self.train()


def run_test(loader, device):
    net = Net().to(device)
    net.set_mode("{mode}")
    with torch.no_grad():
        return [net(x).argmax(1) for x in loader]
'''


def test_tr207_own_mode_method_with_a_test_argument_is_eval(tmp_path):
    root = _write(tmp_path, {"run.py": MODE_METHOD.format(mode="test")})
    assert not _found(root, ("TR207",))


def test_tr207_own_mode_method_with_a_train_argument_is_reported(tmp_path):
    root = _write(tmp_path, {"run.py": MODE_METHOD.format(mode="train")})
    assert [f.code for f in _found(root, ("TR207",))] == ["TR207"]


# --- TR108: scikit-learn's Cython `Tree` called by REDUCE in a joblib predictor
# (AttentiveNAS's `acc_predictor.joblib`, judged noise as "code execution"): a class of a
# compiled module named in the data, medium (needs trust); another callable of the same
# compiled module that cannot be shown to be a class stays critical ----------------------

def _called_global(tmp_path, module: bytes, name: bytes):
    from torchreview.artifacts import scan_file

    path = tmp_path / "predictor.pkl"
    path.write_bytes(b"\x80\x02c" + module + b"\n" + name + b"\nq\x00K\x1fK\x01\x86q\x01Rq\x02.")
    return [f.severity.label for f in scan_file(str(path))[0]]


def test_tr108_compiled_sklearn_tree_is_a_class(tmp_path):
    assert _called_global(tmp_path, b"sklearn.tree._tree", b"Tree") == ["medium"]


def test_tr108_unknown_compiled_callable_stays_critical(tmp_path):
    assert _called_global(tmp_path, b"sklearn.tree._tree", b"build_anything") == ["critical"]


# --- a leftover class nothing in the project names (MP-SENet's `Sigmoid2d` beside the
# `LearnableSigmoid2d` its model builds, TR511 judged noise): its findings are low
# confidence, hidden by default; once something builds it, they are shown -----------------

UTILS = '''import torch
from torch import nn


class Sigmoid2d(nn.Module):
    def __init__(self, in_features, beta=2.0):
        super().__init__()
        self.beta = beta
        self.slope = torch.ones(in_features, 1)

    def forward(self, x):
        return self.beta * torch.sigmoid(self.slope * x)


class LearnableSigmoid2d(nn.Module):
    def __init__(self, in_features, beta=2.0):
        super().__init__()
        self.beta = beta
        self.slope = nn.Parameter(torch.ones(in_features, 1))

    def forward(self, x):
        return self.beta * torch.sigmoid(self.slope * x)
'''

SIGMOID_MODEL = '''from torch import nn

from utils import {used}


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.act = {used}(64)

    def forward(self, x):
        return self.act(x)
'''


def test_finding_in_a_class_nothing_names_is_low_confidence(tmp_path):
    root = _write(tmp_path, {"utils.py": UTILS, "model.py": SIGMOID_MODEL.format(used="LearnableSigmoid2d")})
    assert [f.confidence for f in _found(root, ("TR511",))] == ["low"]


def test_finding_in_a_class_the_model_builds_is_shown(tmp_path):
    root = _write(tmp_path, {"utils.py": UTILS, "model.py": SIGMOID_MODEL.format(used="Sigmoid2d")})
    assert [f.confidence for f in _found(root, ("TR511",))] != ["low"]
    assert len(_found(root, ("TR511",))) == 1


def test_readme_docker_image_tagged_with_torch_pins_the_target(tmp_path):
    # TransVG's README: `docker pull djiajun1206/vg:pytorch1.5` is the documented environment
    # (TR520 on torch >= 2.6 judged false there); an image tag without torch sets nothing
    from torchreview.config import detect_target_torch

    (tmp_path / "README.md").write_text("Use our image:\n\n    docker pull djiajun1206/vg:pytorch1.5\n")
    assert detect_target_torch(str(tmp_path)) == (1, 5)
    (tmp_path / "README.md").write_text("Use our image:\n\n    docker pull djiajun1206/vg:latest\n")
    assert detect_target_torch(str(tmp_path)) is None


def test_readme_works_on_version_pins_the_target(tmp_path):
    # MCD_DA's classification/README.md: "Install PyTorch (Works on Version 0.2.0_3)" (TR425 on
    # `transforms.Scale` judged noise on that pin); "PyTorch (works on 1.8 or later)" is a floor
    from torchreview.config import detect_target_torch

    (tmp_path / "README.md").write_text("- Install PyTorch (Works on Version 0.2.0_3) and dependencies.\n")
    assert detect_target_torch(str(tmp_path)) == (0, 2)
    (tmp_path / "README.md").write_text("- Install PyTorch (works on 1.8 or later).\n")
    assert detect_target_torch(str(tmp_path)) is None


# --- one mistake in each copy of a pattern: the same rule on the same line of code with the
# same message (line numbers aside) in several files of one project is one finding
# (conv-emotion's vendored simpletransformers: five model classes whose `train()` evaluates
# mid-epoch and never switches back, four judged repeats); two places of one file keep
# their own findings --------------------------------------------------------------------------

def test_same_line_and_message_in_several_files_is_one_finding(tmp_path):
    files = {}
    for name in ("classification", "ner", "qa"):
        # each model file holds much else of its own: the files are no copies of each other
        # and its own evaluation around the shared lines: no function copies either
        extra = "\n        ".join(f"{name}_setting_{i} = '{name} option number {i}'" for i in range(60))
        files[f"{name}.py"] = TRAIN_EVAL.format(extra=extra)
    root = _write(tmp_path, files)
    found = run_review([str(root)], Settings(rule_codes=("TR504",), jobs=1, min_confidence="low")).findings
    assert len(found) == 1 and len(found[0].parts) == 3


TRAIN_EVAL = '''import torch
from torch import nn


class Model:
    def __init__(self):
        self.model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.1), nn.Linear(4, 1))
        self.optimizer = torch.optim.AdamW(self.model.parameters())

    def settings(self):
        {extra}
        return locals()

    def train(self, loader, epochs, every):
        self.model.train()
        {extra}
        for epoch in range(epochs):
            for step, (x, y) in enumerate(loader):
                self.optimizer.zero_grad()
                (self.model(x) - y).pow(2).mean().backward()
                self.optimizer.step()
                if step % every == 0:
                    self.eval_model(loader)

    def eval_model(self, loader):
        model = self.model
        model.eval()
        {extra}
        with torch.no_grad():
            return [model(x) for x, _ in loader]
'''


def test_poetry_lock_pins_the_target(tmp_path):
    # AudioLDM-training's poetry.lock locks torch 1.13.1 (TR520 on torch >= 2.6 judged noise)
    from torchreview.config import detect_target_torch

    (tmp_path / "poetry.lock").write_text('[[package]]\nname = "numpy"\nversion = "1.23.5"\n\n'
                                          '[[package]]\nname = "torch"\nversion = "1.13.1"\n')
    assert detect_target_torch(str(tmp_path)) == (1, 13)


# --- a file of another tensor framework with torch's vocabulary (Jittor's `nn.Module`,
# `.numpy()`): importing Jittor and no torch package, it is not torch code --------------

JITTOR = '''import numpy as np
{framework}
from {module} import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def execute(self, x):
        return self.fc(x)


def predict(net, x):
    out = net(x)
    return out.squeeze(0).numpy()
'''


def test_a_jittor_file_is_not_torch_code(tmp_path):
    root = _write(tmp_path, {"forward.py": JITTOR.format(framework="import jittor as jt", module="jittor")})
    assert not _found(root, ("TR502",))


def test_the_same_file_on_torch_is_reviewed(tmp_path):
    root = _write(tmp_path, {"forward.py": JITTOR.format(framework="import torch", module="torch")})
    assert [f.code for f in _found(root, ("TR502",))] == ["TR502"]


# --- TR502: the indices of `torch.max(output, 1)` kept in a name (`prediction[1]`) are an
# integer tensor that never requires grad (COVIDNet's trainer, judged false); the values
# (`prediction[0]`) keep the graph ---------------------------------------------------------

MAX_PAIR = '''import numpy as np
import torch


def train_step(model, x, target, optimizer):
    optimizer.zero_grad()
    output = model(x)
    loss = torch.nn.functional.cross_entropy(output, target)
    loss.backward()
    optimizer.step()
    prediction = torch.max(output, 1)
    return np.sum(prediction[{index}].cpu().numpy() == target.cpu().numpy())
'''


def test_tr502_indices_of_a_max_pair_are_silent(tmp_path):
    root = _write(tmp_path, {"trainer.py": MAX_PAIR.format(index=1)})
    assert not _found(root, ("TR502",))


def test_tr502_values_of_a_max_pair_are_reported(tmp_path):
    root = _write(tmp_path, {"trainer.py": MAX_PAIR.format(index=0)})
    assert [f.code for f in _found(root, ("TR502",))] == ["TR502"]


# --- TR510: a course skeleton -- `__init__` only `pass`, `forward` only `return out` under
# "PUT YOUR CODE HERE" (uvadlc's MLP, judged noise): the learner writes both; an empty
# constructor beside a working `forward` stays reported ------------------------------------

SKELETON = '''import torch
from torch import nn


class MLP(nn.Module):
    def __init__(self, n_inputs, n_hidden, n_classes):
        """Implement the module setup."""
        #######################
        # PUT YOUR CODE HERE  #
        #######################
        pass

    def forward(self, x):
        """Implement the forward pass."""
        {forward}

    @property
    def device(self):
        return next(self.parameters()).device


def build():
    return MLP(4, [8], 2)
'''


def test_tr510_course_skeleton_is_silent(tmp_path):
    root = _write(tmp_path, {"mlp.py": SKELETON.format(forward="return out")})
    assert not _found(root, ("TR510",))


def test_tr510_empty_constructor_beside_a_working_forward_is_reported(tmp_path):
    root = _write(tmp_path, {"mlp.py": SKELETON.format(forward="return torch.relu(x)")})
    assert [f.code for f in _found(root, ("TR510",))] == ["TR510"]


# --- code nothing runs: a vendored package of which the project's scripts import one module
# (conv-emotion's simpletransformers: its `experimental` and `language_modeling` models are
# imported by nothing that runs, TR504 judged noise there). Findings in the modules no entry
# point reaches are low confidence; in the module a script imports they stay; a project
# that imports modules by name at run time is not judged ------------------------------------

VENDORED_TRAINER = '''import torch
from torch import nn


class Model:
    def __init__(self):
        self.model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.1), nn.Linear(4, 1))
        self.optimizer = torch.optim.AdamW(self.model.parameters())

    def train(self, loader, epochs):
        self.model.train()
        for epoch in range(epochs):
            for x, y in loader:
                self.optimizer.zero_grad()
                (self.model(x) - y).pow(2).mean().backward()
                self.optimizer.step()
            self.evaluate_{name}(loader)

    def evaluate_{name}(self, loader):
        self.model.eval()
        with torch.no_grad():
            return [self.model(x) for x, _ in loader]
'''


def _vendored(tmp_path, script_extra=""):
    return _write(tmp_path, {
        ".git/config": "[core]\n",
        "lib/__init__.py": "",
        "lib/classification/__init__.py": "from lib.classification.model import Model\n",
        "lib/classification/model.py": VENDORED_TRAINER.format(name="classification"),
        "lib/experimental/__init__.py": "",
        "lib/experimental/model.py": VENDORED_TRAINER.format(name="experimental"),
        "train.py": ("from lib.classification import Model\n" + script_extra +
                     "\nif __name__ == '__main__':\n    Model().train([], 3)\n"),
    })


def test_findings_in_modules_nothing_runs_are_low_confidence(tmp_path):
    found = {p.path.rsplit("/", 2)[-2]: p.confidence
             for f in _found(_vendored(tmp_path), ("TR504",)) for p in (f.parts or (f,))}
    assert found == {"classification": "high", "experimental": "low"}


def test_a_project_importing_by_name_is_not_judged(tmp_path):
    # (an `import importlib` alone imports nothing by name: the call does)
    root = _vendored(tmp_path, script_extra="import importlib\nplugin = importlib.import_module(PLUGIN)\n")
    found = {p.path.rsplit("/", 2)[-2]: p.confidence
             for f in _found(root, ("TR504",)) for p in (f.parts or (f,))}
    assert found == {"classification": "high", "experimental": "high"}


# --- TR519: an accuracy summed over the validation loader in the training cell, after an
# earlier cell summed the same names over the test loader (ecole_dl_mila's CNN notebook,
# judged false): the last loop that accumulates them decides; summed only over the test
# loader, the selection stays reported ---------------------------------------------------

ACCUMULATED = '''import copy

import torch

correct, total = 0, 0
for x, y in test_loader:
    correct += (model(x).argmax(1) == y).sum().item()
    total += y.size(0)
print(correct / total)

best_acc, best_model_wts = 0.0, None
for epoch in range(10):
    for x, y in train_loader:
        optimizer.zero_grad()
        criterion(model(x), y).backward()
        optimizer.step()
    correct, total = 0, 0
    for x, y in {loader}:
        correct += (model(x).argmax(1) == y).sum().item()
        total += y.size(0)
    epoch_acc = correct / total
    if epoch_acc > best_acc:
        best_acc = epoch_acc
        best_model_wts = copy.deepcopy(model.state_dict())
'''


def test_tr519_last_accumulating_loop_over_validation_is_silent(tmp_path):
    root = _write(tmp_path, {"cnn.py": ACCUMULATED.format(loader="valid_loader")})
    assert not _found(root, ("TR519",))


def test_tr519_last_accumulating_loop_over_test_is_reported(tmp_path):
    root = _write(tmp_path, {"cnn.py": ACCUMULATED.format(loader="test_loader")})
    assert [f.code for f in _found(root, ("TR519",))] == ["TR519"]


# --- TR517: `model = nn.DataParallel(model); is_distributed = True`, and the save of
# `model.state_dict()` in the `else` of a later `if is_distributed:` (the other branch saves
# `model.module.state_dict()`): the save never sees the wrap (matchmaker, judged false) -------

FLAGGED_WRAP = '''import torch
from torch import nn


def train(loader, multi_gpu, path):
    model = nn.Linear(4, 1)
    is_distributed = False
    if multi_gpu:
        model = nn.DataParallel(model)
        {flag}
    optimizer = torch.optim.Adam(model.parameters())
    for x, y in loader:
        optimizer.zero_grad()
        (model(x) - y).pow(2).mean().backward()
        optimizer.step()
    {save}


def evaluate(path):
    model = nn.Linear(4, 1)
    model.load_state_dict(torch.load(path, weights_only=True))
    return model
'''


def test_tr517_save_where_the_wrap_flag_is_false_is_silent(tmp_path):
    save = ("if is_distributed:\n        print('multi-GPU runs keep their weights in memory')\n"
            "    else:\n        torch.save(model.state_dict(), path)")
    root = _write(tmp_path, {"train.py": FLAGGED_WRAP.format(flag="is_distributed = True", save=save)})
    assert not _found(root, ("TR517",))


def test_tr517_save_after_a_wrap_without_its_flag_is_reported(tmp_path):
    # the same wrap and flag, the save outside any test of the flag: it may see the wrap
    root = _write(tmp_path, {"train.py": FLAGGED_WRAP.format(flag="is_distributed = True",
                                                              save="torch.save(model.state_dict(), path)")})
    assert [f.code for f in _found(root, ("TR517",))] == ["TR517"]


# --- TR403: a helper called for its effect with the batch and the device
# (`dict_all_to_device(train_data, device)`: RPMNet moves the dict's tensors in place,
# judged false) moves the batch; the same helper without the device does not ----------------

DICT_BATCH = '''import torch
from torch import nn


def dict_all_to_device(tensor_dict, device):
    for k in tensor_dict:
        tensor_dict[k] = tensor_dict[k].to(device)


def dict_describe(tensor_dict, prefix):
    print(prefix, sorted(tensor_dict))


def train(dataset):
    device = torch.device("cuda")
    model = nn.Linear(4, 1).to(device)
    optimizer = torch.optim.Adam(model.parameters())
    loader = torch.utils.data.DataLoader(dataset, batch_size=8)
    for batch in loader:
        {helper}
        optimizer.zero_grad()
        model(batch).sum().backward()
        optimizer.step()
'''


def test_tr403_batch_moved_by_a_helper_with_the_device_is_silent(tmp_path):
    root = _write(tmp_path, {"train.py": DICT_BATCH.format(helper="dict_all_to_device(batch, device)")})
    assert not _found(root, ("TR403",))


def test_tr403_batch_handed_to_a_helper_without_a_device_is_reported(tmp_path):
    root = _write(tmp_path, {"train.py": DICT_BATCH.format(helper="dict_describe(batch, 'step')")})
    assert [f.code for f in _found(root, ("TR403",))] == ["TR403"]


# --- TR107: demo users of the application's own table (`User(user_name="kate",
# email=..., password="ytrewq")`, mle-course's app seed, judged false) are not credentials;
# a password handed to a connection stays reported ---------------------------------------------

SEED_USERS = '''import psycopg2
from sqlmodel import Field, SQLModel


class User(SQLModel, table=True):
    user_id: int = Field(primary_key=True)
    user_name: str
    email: str
    password: str


def seed(session):
    session.add(User(user_id=1, user_name="kate", email="kate@mail.example", password="ytrewq"))


def connect():
    return psycopg2.connect(host="db.internal", user="app", password="Zq7mW2pLx9Rt")
'''


def test_tr107_seed_user_record_is_silent_and_a_connection_password_is_reported(tmp_path):
    root = _write(tmp_path, {"main.py": SEED_USERS})
    assert [f.line for f in _found(root, ("TR107",))] == [17]


# --- modes: a dropout layer built in `__init__` that no method applies (CopyMTL's commented
# out `# embedded = self.dropout(embedded)`, TR207 judged false) does not make the model
# mode-dependent; applied, it does -----------------------------------------------------------

UNUSED_DROPOUT = '''import torch
from torch import nn


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(100, 16)
        self.dropout = nn.Dropout(0.1)
        self.proj = nn.Linear(16, 4)

    def forward(self, tokens):
        embedded = self.embed(tokens)
        {apply}
        return self.proj(embedded)


def predict(tokens):
    model = Encoder()
    with torch.no_grad():
        return model(tokens).argmax(-1)
'''


def test_tr207_dropout_never_applied_is_silent(tmp_path):
    root = _write(tmp_path, {"model.py": UNUSED_DROPOUT.format(apply="# embedded = self.dropout(embedded)")})
    assert not _found(root, ("TR207",))


def test_tr207_dropout_applied_is_reported(tmp_path):
    root = _write(tmp_path, {"model.py": UNUSED_DROPOUT.format(apply="embedded = self.dropout(embedded)")})
    assert [f.code for f in _found(root, ("TR207",))] == ["TR207"]


# --- TR514: `x.require_grad = True` on an operation's result that already tracks gradients
# (ISDA's BigGAN script, judged false: `requires_grad = True` there would raise on a
# non-leaf) is low advice to drop the line; on a fresh factory tensor it stays a defect --------

TYPO_NON_LEAF = '''import torch
import torch.nn.functional as F
from torch import nn

net = nn.Linear(4, 4)
z = nn.Parameter(torch.randn(2, 4))
out = F.relu(net(z))
out.require_grad = True
w = torch.zeros(3)
w.require_grad = True
(net(z) * w[:1]).sum().backward()
'''


def test_tr514_typo_on_a_non_leaf_that_tracks_gradients_is_low_advice(tmp_path):
    root = _write(tmp_path, {"gen.py": TYPO_NON_LEAF})
    got = {f.line: (f.kind, f.confidence) for f in _found(root, ("TR514",), advice_codes=("TR514",))}
    assert got == {8: ("advice", "low"), 10: ("defect", "high")}


# --- TR402: `optimizer.step(closure)` with the closure zeroing and running backward (LBFGS,
# mgplvm's notebook, judged false) is in order; the same loop stepping before backward
# without a closure stays reported. TR423: a removed API inside `if _v < "1.10.0":` (a
# comparison with a version string: pydrobert's compat module, judged false) is compat code --

LBFGS = '''import torch
from torch import nn

model = nn.Linear(4, 1)
optimizer = torch.optim.LBFGS(model.parameters())
x, y = torch.randn(8, 4), torch.randn(8, 1)


def closure():
    optimizer.zero_grad()
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
    return loss


for it in range(20):
    {step}
    loss = closure()
'''


def test_tr402_step_with_a_closure_is_silent(tmp_path):
    root = _write(tmp_path, {"fit.py": LBFGS.format(step="optimizer.step(closure)")})
    assert not _found(root, ("TR402",))


def test_tr402_step_before_backward_without_a_closure_is_reported(tmp_path):
    root = _write(tmp_path, {"fit.py": LBFGS.format(step="optimizer.step()")})
    assert [f.code for f in _found(root, ("TR402",))] == ["TR402"]


COMPAT = '''import torch

_v = torch.__version__.split("+")[0]


def solve(a, b):
    {guard}
        return torch.solve(b, a)[0]
    return torch.linalg.solve(a, b)
'''


def test_tr423_removed_api_under_a_version_string_comparison_is_compat(tmp_path):
    root = _write(tmp_path, {"compat.py": COMPAT.format(guard='if _v < "1.8.0":')})
    assert not _found(root, ("TR423",))


def test_tr423_removed_api_under_another_test_is_reported(tmp_path):
    root = _write(tmp_path, {"compat.py": COMPAT.format(guard='if a.dim() == 2:')})
    assert [f.code for f in _found(root, ("TR423",))] == ["TR423"]
