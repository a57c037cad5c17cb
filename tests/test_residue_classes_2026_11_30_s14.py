"""Classes of findings judged false or noise on blind tests, fixed in the fourteenth session
(2026-11-30), each as a near-miss that must change beside a positive that must stay."""
from __future__ import annotations

from residue_helpers import found as _found, write as _write

from torchreview.engine.runner import Settings, run_review


def _lines(root, code: str, confidence: str | None = None) -> list:
    return [(f.path.rsplit("/", 1)[-1], f.line) for f in _found(root, (code,))
            if confidence is None or f.confidence == confidence]


# --- TR518: a load of a bare state dict does not read the project's wrapper-dict checkpoint ---

EVAL_SCRIPT = '''import argparse
import torch
from torch import nn


def save_checkpoint(state, filename="checkpoint.pth.tar"):
    torch.save(state, filename)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--resume", default="")
    args = parser.parse_args()
    model = nn.Linear(4, 2)
    optimizer = torch.optim.Adam(model.parameters())
    if args.resume:
        checkpoint = torch.load(args.resume)
        model.load_state_dict(LOADED)
    for epoch in range(10):
        for x, y in [(torch.randn(3, 4), torch.randn(3, 2))]:
            optimizer.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()
        save_checkpoint({"epoch": epoch + 1, "state_dict": model.state_dict(),
                         "optimizer": optimizer.state_dict()})


if __name__ == "__main__":
    main()
'''


def test_tr518_bare_state_dict_load_is_not_linked_to_a_wrapper_save(tmp_path):
    # the whole loaded object is the state dict: the file read holds weights only, so the
    # wrapper dict saved below (epoch, optimizer) is another file; no "epoch restarts" defect
    root = _write(tmp_path, {"main.py": EVAL_SCRIPT.replace("LOADED", "checkpoint")})
    found = _found(root, ("TR518",))
    assert found and all(f.kind == "advice" and "epoch" not in f.message for f in found), \
        [(f.line, f.kind, f.message) for f in found]


def test_tr518_keyed_load_of_the_wrapper_still_reports_the_restarting_epoch(tmp_path):
    root = _write(tmp_path, {"main.py": EVAL_SCRIPT.replace("LOADED", 'checkpoint["state_dict"]')})
    found = [f for f in _found(root, ("TR518",)) if f.confidence != "low"]
    assert [f.line for f in found] == [17] and "epoch" in found[0].message


# --- TR517: a file name filled by a literal names another file ------------------------------

TRAINER_517 = '''import os
import torch
from torch import nn


def train_sequence(model, args):
    model = nn.DataParallel(model)
    torch.save(model.state_dict(), os.path.join(args.save_path, "{}_{}_task_{}_best.pth".format(
        "sequence", args.model_name, args.task)))


def train_lifelong(model, args, task):
    torch.save(model.state_dict(), os.path.join(args.save_path, "{}_{}_task_{}_best.pth".format(
        args.task_name, args.model_name, task)))
'''

MAIN_517 = '''import os
import torch
from torch import nn


def evaluate(args):
    model = nn.Linear(4, 2)
    path = os.path.join(args.save_path, "{}_{}_task_3_best.pth".format(args.task_name, args.model_name))
    model.load_state_dict(torch.load(path, weights_only=True))
    return model
'''


def test_tr517_a_literal_format_argument_names_another_file(tmp_path):
    root = _write(tmp_path, {"trainer.py": TRAINER_517, "main.py": MAIN_517})
    assert not _found(root, ("TR517",))


def test_tr517_the_wrapped_save_of_the_same_file_name_still_reports(tmp_path):
    wrapped = TRAINER_517.replace("def train_lifelong(model, args, task):\n",
                                  "def train_lifelong(model, args, task):\n    model = nn.DataParallel(model)\n")
    root = _write(tmp_path, {"trainer.py": wrapped, "main.py": MAIN_517})
    assert _lines(root, "TR517") == [("main.py", 9)]


# --- any rule: code in a branch every caller's arguments rule out -------------------------------
# (the branch also keeps a best checkpoint on the test loss: since the thirty-fifth session a test
# metric that only drives ReduceLROnPlateau is low confidence of its own)

TRAINER_519 = '''import torch


def train_model(model, train_loader, test_loader, epochs=10, scheduler="LambdaLR"):
    optimizer = torch.optim.Adam(model.parameters())
    if scheduler == "ReduceLROnPlateau":
        lr_scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer)
    else:
        lr_scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda e: 0.9 ** e)
    best_loss = float("inf")
    for epoch in range(epochs):
        model.train()
        for x, y in train_loader:
            optimizer.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()
        model.eval()
        with torch.no_grad():
            test_loss = sum(torch.nn.functional.mse_loss(model(x), y).item() for x, y in test_loader)
        if scheduler == "ReduceLROnPlateau":
            lr_scheduler.step(test_loss)
            if test_loss < best_loss:
                best_loss = test_loss
                torch.save(model.state_dict(), "best.pt")
        else:
            lr_scheduler.step()
    return model
'''

CALLER_519 = '''import torch
from trainer import train_model


def main(train_loader, test_loader):
    model = torch.nn.Linear(4, 2)
    train_model(model, train_loader, test_loader, epochs=CALL)


if __name__ == "__main__":
    main([], [])
'''


def _tr519(tmp_path, call: str) -> list:
    root = _write(tmp_path, {"trainer.py": TRAINER_519, "main.py": CALLER_519.replace("CALL", call)})
    return [(f.line, f.confidence) for f in _found(root, ("TR519",))]


def test_branch_no_caller_takes_is_low(tmp_path):
    found = _tr519(tmp_path, "5")
    assert found and all(conf == "low" for _, conf in found), found


def test_branch_a_caller_takes_keeps_its_confidence(tmp_path):
    found = _tr519(tmp_path, '5, scheduler="ReduceLROnPlateau"')
    assert found and any(conf != "low" for _, conf in found), found


def test_branch_of_a_function_passed_as_a_callback_keeps_its_confidence(tmp_path):
    found = _tr519(tmp_path, '5)\n    run = train_model\n    run(model, train_loader, test_loader')
    assert found and any(conf != "low" for _, conf in found), found


# --- TR518: a counter handed to the LR setter that only logs it sets no learning rate ---------

TACO = '''import argparse
import torch
from torch import nn


def adjust_learning_rate(iteration, epoch, optimizer, learning_rate, anneal_steps):
    p = 0
    for step in anneal_steps:
        if epoch >= step:
            p = p + 1
    lr = learning_rate * (0.1 ** p)
    if optimizer.param_groups[0]["lr"] != lr:
        print("lr changed at", (epoch, iteration))
    for group in optimizer.param_groups:
        group["lr"] = lr


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--resume", default="")
    args = parser.parse_args()
    model = nn.Linear(4, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    start_epoch = 0
    if args.resume:
        ckpt = torch.load(args.resume, weights_only=True)
        model.load_state_dict(ckpt["model"])
        optimizer.load_state_dict(ckpt["optimizer"])
        start_epoch = ckpt["epoch"] + 1
    iteration = 0
    for epoch in range(start_epoch, 100):
        for x, y in [(torch.randn(3, 4), torch.randn(3, 2))]:
            adjust_learning_rate(ITER, epoch, optimizer, 0.1, [30, 60])
            optimizer.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()
            iteration += 1
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch}, "c.pt")


if __name__ == "__main__":
    main()
'''


def test_tr518_counter_the_lr_setter_only_logs_is_not_an_lr_counter(tmp_path):
    root = _write(tmp_path, {"train.py": TACO.replace("ITER", "iteration")})
    assert not [f for f in _found(root, ("TR518",)) if "restarts from its initial value" in f.message]


def test_tr518_counter_the_lr_setter_decays_by_still_reports(tmp_path):
    text = TACO.replace("ITER", "iteration").replace("if epoch >= step:", "if iteration >= step:")
    root = _write(tmp_path, {"train.py": text})
    assert [f.line for f in _found(root, ("TR518",)) if "restarts from its initial value" in f.message] == [26]


# --- TR504: a module put in eval mode before the loop stays in eval on purpose ------------------

CONTROLLER = '''import torch
from torch import nn


def score(args, gen_net, n):
    gen_net.eval()
    with torch.no_grad():
        return gen_net(torch.randn(n, 4)).mean().item()


def train_controller(args, controller, ctrl_optimizer, gen_net):
    controller.train()
    BEFORE
    for step in range(args.ctrl_step):
        log_probs = controller(torch.randn(2, 4)).log_softmax(-1)
        reward = score(args, gen_net, 8)
        loss = -(log_probs * reward).sum()
        ctrl_optimizer.zero_grad()
        loss.backward()
        ctrl_optimizer.step()
'''


def test_tr504_module_already_in_eval_before_the_loop_is_silent(tmp_path):
    root = _write(tmp_path, {"search.py": CONTROLLER.replace("BEFORE", "gen_net.eval()")})
    assert not _found(root, ("TR504",))


def test_tr504_module_in_train_mode_before_the_loop_still_reports(tmp_path):
    root = _write(tmp_path, {"search.py": CONTROLLER.replace("BEFORE", "gen_net.train()")})
    assert _lines(root, "TR504") == [("search.py", 16)]


# --- kinds: a torchvision weights enum's preprocessing preset is no model ---------------------

PRESET = '''import torch
from torchvision.models import resnet50, ResNet50_Weights

weights = ResNet50_Weights.DEFAULT
preprocess = weights.transforms()
resnet = resnet50(weights=weights)
resnet.eval()
backbone = BUILD


def inference(img):
    with torch.no_grad():
        batch = preprocess(img).unsqueeze(0)
        return resnet(batch), backbone(batch)
'''


def test_tr207_weights_transforms_preset_is_not_a_model(tmp_path):
    root = _write(tmp_path, {"app.py": PRESET.replace("BUILD", "resnet")})
    assert not _found(root, ("TR207",))


def test_tr207_a_torchvision_builder_is_still_a_model(tmp_path):
    # without the `resnet.eval()`, the builder's model is reported where it runs, the preset is not
    root = _write(tmp_path, {"app.py": PRESET.replace("BUILD", "resnet").replace("resnet.eval()\n", "")})
    assert [f.line for f in _found(root, ("TR207",))] == [13]


# --- security rules: a line its maintainers marked `# nosec` -----------------------------------

FETCHED = '''import pickle

import requests


def load_proxy(url):
    data = requests.get(url).content
    return pickle.loads(data)MARK
'''


def test_security_finding_on_a_nosec_line_is_low(tmp_path):
    found = _found(_write(tmp_path, {"proxy.py": FETCHED.replace("MARK", "  # nosec B301")}), ("TR103",))
    assert found and all(f.confidence == "low" and "nosec" in f.message for f in found)


def test_security_finding_without_nosec_keeps_its_confidence(tmp_path):
    found = _found(_write(tmp_path, {"proxy.py": FETCHED.replace("MARK", "  # the proxy weights")}), ("TR103",))
    assert found and all(f.confidence != "low" for f in found)


# --- TR508: a stateless module built from arithmetic arguments loses nothing unregistered ---------

NCC = '''import torch
import torch.nn.functional as F


class NCC(torch.nn.Module):
    def __init__(self, win=7):
        super().__init__()
        self.win = win
        LAYER

    def forward(self, i, j):
        weight = torch.ones((1, 1, self.win, self.win, self.win), device=i.device)
        return F.conv3d(i * j, weight).mean()


class MultiNCC(torch.nn.Module):
    def __init__(self, win=9, scale=3):
        super().__init__()
        self.scale = scale
        self.metrics = []
        for k in range(scale):
            self.metrics.append(NCC(win=win - (k * 2)))

    def forward(self, i, j):
        return sum(self.metrics[k](i, j) for k in range(self.scale))
'''


def test_tr508_stateless_module_built_with_arithmetic_arguments_is_advice(tmp_path):
    found = _found(_write(tmp_path, {"ncc.py": NCC.replace("LAYER", "self.eps = 1e-5")}), ("TR508",))
    assert found and all(f.kind == "advice" for f in found), [(f.kind, f.message) for f in found]


def test_tr508_module_with_weights_built_with_arithmetic_arguments_is_a_defect(tmp_path):
    found = _found(_write(tmp_path, {"ncc.py": NCC.replace("LAYER", "self.proj = torch.nn.Linear(win, win)")}),
                   ("TR508",))
    assert found and all(f.kind == "defect" for f in found), [(f.kind, f.message) for f in found]


# --- TR108: a weights-only refusal cannot happen where every load runs before torch 2.6 ---------

def _namespace_checkpoint(root, pin: str, load: str = "torch.load(path)"):
    (root / "ckpt").mkdir()
    # a protocol-2 pickle of an `argparse.Namespace` instance (written as bytes, never unpickled)
    (root / "ckpt" / "best.pth").write_bytes(b"\x80\x02cargparse\nNamespace\nq\x00)\x81q\x01}q\x02X\x01\x00\x00\x00a"
                                             b"q\x03K\x01sb.")
    (root / "requirements.txt").write_text(f"torch=={pin}\n")
    (root / "eval.py").write_text(f"import torch\n\n\ndef restore(path):\n    return {load}\n")
    return [(f.confidence, f.message) for f in _found(root, ("TR108",), detect_torch=True)]


def test_tr108_refusal_on_a_project_pinned_below_2_6_is_low(tmp_path):
    found = _namespace_checkpoint(tmp_path, "1.4.0")
    assert found and all(conf == "low" and "targets torch 1.4" in msg for conf, msg in found), found


def test_tr108_refusal_on_a_project_pinned_at_2_6_keeps_its_confidence(tmp_path):
    found = _namespace_checkpoint(tmp_path, "2.6.0")
    assert found and all(conf != "low" for conf, _ in found), found


def test_tr108_refusal_where_a_load_asks_for_weights_only_keeps_its_confidence(tmp_path):
    found = _namespace_checkpoint(tmp_path, "1.13.0", "torch.load(path, weights_only=True)")
    assert found and all(conf != "low" for conf, _ in found), found


def test_tr108_refusal_in_a_project_that_loads_nothing_pinned_below_2_6_is_low(tmp_path):
    found = _namespace_checkpoint(tmp_path, "1.13.0", "torch.save(path, 'x.pt')")
    assert found and all(conf == "low" for conf, _ in found), found


# --- TR414: a step whose own branch zeroes and backpropagates thins updates, it accumulates nothing

GAN = '''import torch
from torch import nn


def train(gen, disc, loader, n_d=2, n_g=1):
    opt_d = torch.optim.Adam(disc.parameters())
    opt_g = torch.optim.Adam(gen.parameters())
    bce = nn.BCELoss()
    for i, real in enumerate(loader):
        fake = gen(torch.randn(real.shape[0], 8))
        if i % n_d == 0:
            ZERO_D
            d_loss = (bce(disc(real), torch.ones(real.shape[0], 1)) + bce(disc(fake.detach()), torch.zeros(real.shape[0], 1))) / 2
            d_loss.backward()
            opt_d.step()
        if i % n_g == 0:
            opt_g.zero_grad()
            g_loss = bce(disc(fake), torch.ones(real.shape[0], 1))
            g_loss.backward()
            opt_g.step()
'''


def test_tr414_branch_with_its_own_zero_grad_is_no_accumulation(tmp_path):
    assert not _found(_write(tmp_path, {"gan.py": GAN.replace("ZERO_D", "opt_d.zero_grad()")}), ("TR414",))


def test_tr414_branch_without_zero_grad_accumulates(tmp_path):
    found = _found(_write(tmp_path, {"gan.py": GAN.replace("ZERO_D", "pass")}), ("TR414",))
    assert found


# --- options: a default declared in the project's argument module reaches the module it is handed to

ARGS = '''import argparse


def get_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--accumulate-grad-batches", type=int, default=DEFAULT)
    parser.add_argument("--epochs", type=int, default=10)
    return parser.parse_args()
'''

ENGINE = '''import torch
from torch.nn.parallel import DistributedDataParallel


def train_epoch(model, loader, optimizer, args):
    model = DistributedDataParallel(model)
    for i, (x, y) in enumerate(loader):
        loss = torch.nn.functional.mse_loss(model(x), y) / args.accumulate_grad_batches
        loss.backward()
        if (i + 1) % args.accumulate_grad_batches == 0:
            optimizer.step()
            optimizer.zero_grad()
'''

MAIN = '''import torch
from arguments import get_args
from engine import train_epoch


def main():
    args = get_args()
    OVERRIDE
    model = torch.nn.Linear(4, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(args.epochs):
        train_epoch(model, [], optimizer, args)


if __name__ == "__main__":
    main()
'''


MAIN_PARSER = MAIN.replace("from arguments import get_args\n", "import argparse\n").replace(
    "    args = get_args()\n",
    "    parser = argparse.ArgumentParser()\n"
    "    parser.add_argument('--accumulate-grad-batches', type=int, default=DEFAULT)\n"
    "    parser.add_argument('--epochs', type=int, default=10)\n"
    "    args = parser.parse_args()\n")


def _tr218(tmp_path, default: str, override: str = "pass", layout: str = "entry") -> list:
    if layout == "entry":  # the entry script declares its options and hands `args` to the engine
        files = {"engine.py": ENGINE, "main.py": MAIN_PARSER.replace("DEFAULT", default).replace("OVERRIDE", override)}
    else:  # the engine imports the project's argument module (Graphormer's runtime)
        files = {"arguments.py": ARGS.replace("DEFAULT", default),
                 "engine.py": "from arguments import get_args\n" + ENGINE,
                 "main.py": MAIN.replace("OVERRIDE", override)}
    root = _write(tmp_path, files)
    return [(f.confidence, "above its default 1" in f.message) for f in _found(root, ("TR218",))]


def test_option_default_one_declared_in_the_entry_script_idles_the_accumulation(tmp_path):
    assert _tr218(tmp_path, "1") == [("low", True)]


def test_option_default_one_declared_in_an_imported_argument_module_idles_it(tmp_path):
    assert _tr218(tmp_path, "1", layout="module") == [("low", True)]


def test_option_default_above_one_in_another_file_keeps_the_finding(tmp_path):
    assert _tr218(tmp_path, "4") == [("high", False)]


def test_option_overridden_by_the_entry_script_is_not_known(tmp_path):
    assert _tr218(tmp_path, "1", "args.accumulate_grad_batches = 8") == [("high", False)]


# --- checkpoint prefixes: a deep copy of a wrapped model is wrapped -------------------------------

EMA_TRAIN = '''import copy

import torch
from torch.nn.parallel import DistributedDataParallel


def train(net, steps):
    net = DistributedDataParallel(net)
    ema = copy.deepcopy(SOURCE).requires_grad_(False).eval()
    torch.save({"ema": ema.state_dict()}, "ckpt.pth")
'''

EMA_TEST = '''import torch
from torch.nn.parallel import DistributedDataParallel


def test(net):
    net = DistributedDataParallel(net)
    ckpt = torch.load("ckpt.pth", weights_only=True)
    net.load_state_dict(ckpt["ema"])
'''


def test_tr517_deepcopy_of_a_wrapped_model_keeps_the_prefix(tmp_path):
    root = _write(tmp_path, {"train.py": EMA_TRAIN.replace("SOURCE", "net"), "test.py": EMA_TEST})
    assert not _found(root, ("TR517",))


def test_tr517_deepcopy_of_the_unwrapped_module_has_no_prefix(tmp_path):
    root = _write(tmp_path, {"train.py": EMA_TRAIN.replace("SOURCE", "net.module"), "test.py": EMA_TEST})
    assert _lines(root, "TR517") == [("test.py", 8)]


# --- TR519: a best-on-test copy kept beside a validation selection is an oracle, not the selection

SELECT = '''import copy

import torch


def evaluate(model, loader):
    model.eval()
    with torch.no_grad():
        return sum((model(x).argmax(1) == y).float().mean().item() for x, y in loader)


def fit(model, optimizer, train_loader, val_loader, test_loader, epochs):
    best_val_acc, best_test_acc = 0.0, 0.0
    for epoch in range(epochs):
        model.train()
        for x, y in train_loader:
            optimizer.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
        val_acc = evaluate(model, val_loader)
        test_acc = evaluate(model, test_loader)
        VAL_SELECTION
        if test_acc > best_test_acc:
            best_test_model = copy.deepcopy(model.state_dict())
            torch.save(best_test_model, "best_test.pth")
            best_test_acc = test_acc
'''


def test_tr519_oracle_copy_beside_a_validation_selection_is_silent(tmp_path):
    sel = ("if val_acc > best_val_acc:\n            best_val_model = copy.deepcopy(model.state_dict())\n"
           "            torch.save(best_val_model, 'best_val.pth')\n            best_val_acc = val_acc")
    assert not _found(_write(tmp_path, {"fit.py": SELECT.replace("VAL_SELECTION", sel)}), ("TR519",))


def test_tr519_selection_on_test_without_a_validation_selection_reports(tmp_path):
    root = _write(tmp_path, {"fit.py": SELECT.replace("VAL_SELECTION", "print(val_acc)")})
    assert _lines(root, "TR519") == [("fit.py", 23)]


# --- torch pins: requirements written in conda's spelling or saved from `pip list` ----------------

def test_requirements_pins_in_conda_spelling_and_pip_list_form_are_read(tmp_path):
    from torchreview.config import nearest_torch_pin

    for folder, text in (("conda", "numpy=1.21.0\ntorch=1.11.0\ntorchvision=0.12.0\n"),
                         ("piplist", "Package    Version\n---------- -------\nnumpy      1.21.0\n"
                                     "torch                       1.11.0+cu113\n"),
                         ("loose", "torch>=1.8\n")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "requirements.txt").write_text(text)
        (tmp_path / folder / "train.py").write_text("import torch\n")
    assert nearest_torch_pin(str(tmp_path / "conda" / "train.py")) == (True, (1, 11))
    assert nearest_torch_pin(str(tmp_path / "piplist" / "train.py")) == (True, (1, 11))
    assert nearest_torch_pin(str(tmp_path / "loose" / "train.py"))[1] is None  # a bare floor pins nothing


def test_tr429_torch_six_on_a_torch_1_11_pin_in_conda_spelling_is_advice(tmp_path):
    root = _write(tmp_path, {"requirements.txt": "torch=1.11.0\n", "utils.py": "from torch._six import inf\n\nx = inf\n"})
    found = _found(root, ("TR429",), detect_torch=True)
    assert found and all(f.kind == "advice" for f in found), [(f.kind, f.message) for f in found]


# --- TR107: Django's generated development key is no service credential ---------------------------

SETTINGS = '''import torch

SECRET_KEY = "VALUE"
DEBUG = True
'''


def test_tr107_django_insecure_development_key_is_silent(tmp_path):
    text = SETTINGS.replace("VALUE", "django-insecure-9x#k2@m!q7w%z1r8p0t5v3b6n4c")
    assert not _found(_write(tmp_path, {"settings.py": text}), ("TR107",))


def test_tr107_a_real_looking_django_secret_key_still_reports(tmp_path):
    text = SETTINGS.replace("VALUE", "9x#k2@m!q7w%z1r8p0t5v3b6n4cL0qZ8yW2eR5tY7uI")
    assert _lines(_write(tmp_path, {"settings.py": text}), "TR107") == [("settings.py", 3)]


# --- TR514: `require_grad = False` on a tensor nothing shows tracking gradients is a no-op --------

HEAD = '''import torch
from torch import nn


def make_ctr(n):
    return torch.from_numpy(__import__("numpy").zeros((n, 2)))


class Head(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.fc = nn.Linear(n, 2)
        self.ctr = make_ctr(n)
        TARGET.require_grad = False
'''


def test_tr514_false_typo_on_a_plain_tensor_is_low_advice(tmp_path):
    found = _found(_write(tmp_path, {"head.py": HEAD.replace("TARGET", "self.ctr")}), ("TR514",))
    assert found and all(f.kind == "advice" and f.confidence == "low" for f in found)


def test_tr514_false_typo_on_a_module_weight_is_a_defect(tmp_path):
    found = _found(_write(tmp_path, {"head.py": HEAD.replace("TARGET", "self.fc.weight")}), ("TR514",))
    assert [(f.line, f.kind) for f in found] == [(14, "defect")]


def test_tr514_false_typo_in_a_freezing_loop_is_a_defect(tmp_path):
    loop = HEAD.replace("        TARGET.require_grad = False\n",
                        "        for p in self.fc.parameters():\n            p.require_grad = False\n")
    assert [(f.line, f.kind) for f in _found(_write(tmp_path, {"head.py": loop}), ("TR514",))] == [(15, "defect")]


# --- TR415: a clip followed by its own step before any backward serves that step -------------------

HIDDEN = '''import torch


def train(model, loader):
    d_opt = torch.optim.SGD(model.dis.parameters(), lr=0.1)
    g_opt = torch.optim.SGD(model.gen.parameters(), lr=0.1)
    for x in loader:
        ret = model(x, "classifier_loss")  # its forward calls backward itself
        torch.nn.utils.clip_grad_norm_(model.dis.parameters(), 1.0)
        STEP
        d_opt.zero_grad()
        g_loss = model(x, "gen_loss").mean()
        g_loss.backward()
        g_opt.step()
        g_opt.zero_grad()
'''


def test_tr415_clip_right_before_its_own_step_is_silent(tmp_path):
    assert not _found(_write(tmp_path, {"train.py": HIDDEN.replace("STEP", "d_opt.step()")}), ("TR415",))


def test_tr415_clip_before_the_only_backward_still_reports(tmp_path):
    text = HIDDEN.replace("        STEP\n        d_opt.zero_grad()\n", "")
    assert _lines(_write(tmp_path, {"train.py": text}), "TR415") == [("train.py", 9)]


# --- TR108: torch 0.4-1.0 module pickles call torch's own THNN backend getter ----------------------

def test_tr108_legacy_thnn_backend_getter_is_no_code_execution(tmp_path):
    from torchreview.artifacts import scan_files
    from torchreview.findings import Severity

    path = tmp_path / "model_registrar-1099.pt"
    # GLOBAL torch.nn.backends.thnn._get_thnn_function_backend, EMPTY_TUPLE, REDUCE, STOP (bytes, never unpickled)
    path.write_bytes(b"\x80\x02ctorch.nn.backends.thnn\n_get_thnn_function_backend\nq\x00)Rq\x01.")
    assert [f.severity for f in scan_files([str(path)]).findings] == [Severity.MEDIUM]


def test_tr108_another_function_called_at_load_stays_critical(tmp_path):
    from torchreview.artifacts import scan_files
    from torchreview.findings import Severity

    path = tmp_path / "model.pt"
    path.write_bytes(b"\x80\x02ctorch.nn.backends.thnn\n_get_other_backend\nq\x00)Rq\x01.")
    assert [f.severity for f in scan_files([str(path)]).findings] == [Severity.CRITICAL]


# --- TR411: a double softmax whose loss is only printed is a demonstration ------------------------

DEMO = '''import torch
from torch import nn

lossfun = nn.CrossEntropyLoss()
y_hat = torch.tensor([[1.0, 4.0, 3.0]])
y_sm = nn.Softmax(dim=1)(y_hat)
for i in range(3):
    answer = torch.tensor([i])
    USE
'''


def test_tr411_loss_only_printed_is_low(tmp_path):
    for n, use in enumerate(("loss = lossfun(y_sm, answer).item()\n    print('loss %g' % loss)",
                             "print(lossfun(y_sm, answer))",
                             "loss = lossfun(y_sm, answer)\n    print(f'{loss.item():.3f}')")):
        (tmp_path / str(n)).mkdir()
        found = _found(_write(tmp_path / str(n), {"demo.py": DEMO.replace("USE", use)}), ("TR411",))
        assert found and all(f.confidence == "low" for f in found), (use, [(f.confidence, f.message) for f in found])


def test_tr411_loss_that_is_backpropagated_keeps_its_confidence(tmp_path):
    use = "loss = lossfun(y_sm, answer)\n    print(loss.item())\n    loss.backward()"
    found = _found(_write(tmp_path, {"demo.py": DEMO.replace("USE", use)}), ("TR411",))
    assert found and all(f.confidence != "low" for f in found)


# --- TR414: the learning rate divided by the accumulation count scales the summed update ----------

ACCUM = '''import argparse
import torch

parser = argparse.ArgumentParser()
parser.add_argument("--lr", type=float, default=0.1)
parser.add_argument("--grad-loop", type=int, default=4)


def main(model, loader):
    args = parser.parse_args()
    LR_LINE
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
    for i, (x, y) in enumerate(loader):
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        if (i + 1) % args.grad_loop == 0:
            optimizer.step()
            optimizer.zero_grad()
'''


def test_tr414_learning_rate_divided_by_the_count_is_silent(tmp_path):
    assert not _found(_write(tmp_path, {"ft.py": ACCUM.replace("LR_LINE", "args.lr /= args.grad_loop")}), ("TR414",))


def test_tr414_learning_rate_divided_by_something_else_still_reports(tmp_path):
    found = _found(_write(tmp_path, {"ft.py": ACCUM.replace("LR_LINE", "args.lr /= 10")}), ("TR414",))
    assert [f.line for f in found] == [15]


# --- TR427: late binding over lists that repeat one element reads the same value -------------------

SCHED = '''import torch


class LinearLR(torch.optim.lr_scheduler._LRScheduler):
    def __init__(self, optimizer, start_lr, end_lr, length):
        self.optimizer = optimizer
        if not isinstance(start_lr, list):
            self.start_lrs = START
        else:
            self.start_lrs = list(start_lrs)  # `start_lrs` is defined nowhere: this branch raises
        self.end_lrs = [end_lr] * len(optimizer.param_groups)
        self.lr_lambdas = [lambda epoch: a + epoch * (b - a) / length for a, b in zip(self.start_lrs, self.end_lrs)]

    def get_lr(self):
        return [f(self.last_epoch) for f in self.lr_lambdas]
'''


def test_tr427_lists_of_one_repeated_element_are_silent(tmp_path):
    text = SCHED.replace("START", "[start_lr] * len(optimizer.param_groups)")
    assert not _found(_write(tmp_path, {"sched.py": text}), ("TR427",))


def test_tr427_lists_of_varying_elements_still_report(tmp_path):
    text = SCHED.replace("START", "[start_lr * (i + 1) for i in range(len(optimizer.param_groups))]")
    assert _lines(_write(tmp_path, {"sched.py": text}), "TR427") == [("sched.py", 12)]


# --- TR518: a resume that only restarts SGD momentum is low-confidence advice ----------------------

WARM = '''import argparse
import torch
from torch import nn


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--continue-from", default="")
    args = parser.parse_args()
    model = nn.Linear(4, 2)
    optimizer = torch.optim.OPT(model.parameters(), lr=0.1ARGS)
    start_epoch = 0
    if args.continue_from:
        ckpt = torch.load(args.continue_from, weights_only=True)
        model.load_state_dict(ckpt["model"])
        start_epoch = ckpt["epoch"] + 1
    for epoch in range(start_epoch, 10):
        for x, y in [(torch.randn(3, 4), torch.randn(3, 2))]:
            optimizer.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()
        torch.save({"model": model.state_dict(), "epoch": epoch}, "last.pt")


if __name__ == "__main__":
    main()
'''


def test_tr518_momentum_only_resume_is_low_confidence_advice(tmp_path):
    found = _found(_write(tmp_path, {"train.py": WARM.replace("OPT", "SGD").replace("ARGS", ", momentum=0.9")}),
                   ("TR518",))
    assert found and all(f.kind == "advice" and f.confidence == "low" for f in found), \
        [(f.kind, f.confidence) for f in found]


def test_tr518_adam_resume_that_restores_the_epoch_is_still_a_likely_defect(tmp_path):
    found = _found(_write(tmp_path, {"train.py": WARM.replace("OPT", "Adam").replace("ARGS", "")}), ("TR518",))
    assert [(f.line, f.kind) for f in found] == [(14, "likely-defect")]


def test_tr519_test_choice_nested_in_the_validation_choice_still_reports(tmp_path):
    nested = ("if val_acc > best_val_acc:\n            best_val_acc = val_acc\n"
              "            if test_acc > best_test_acc:\n                best_test_acc = test_acc\n"
              "                torch.save(model.state_dict(), 'export.pth')")
    text = SELECT.replace("VAL_SELECTION", nested)
    text = text[:text.index("        if test_acc > best_test_acc:\n            best_test_model")]
    root = _write(tmp_path, {"fit.py": text})
    assert _lines(root, "TR519") == [("fit.py", 24)]


# --- kinds: a parameter annotated with a builtin scalar type holds no module, whatever its name -----

EARLY = '''import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, size: int, loss_fn: ANNOTATION):
        self._size = size
        self._loss_fn = loss_fn
        super().__init__()
        self.fc = nn.Linear(size, 2)
'''


def test_tr510_str_annotated_loss_name_before_super_init_is_silent(tmp_path):
    assert not _found(_write(tmp_path, {"m.py": EARLY.replace("ANNOTATION", "str")}), ("TR510",))


def test_tr510_module_annotated_loss_before_super_init_still_reports(tmp_path):
    assert _lines(_write(tmp_path, {"m.py": EARLY.replace("ANNOTATION", "nn.Module")}), "TR510") == [("m.py", 8)]


# --- TR402: a step that a sibling branch's backward can feed is not "always on cleared gradients" ----

SFT = '''import torch


class Model:
    def __init__(self, net):
        self.net = net
        self.opt_sft = torch.optim.Adam(net.sft.parameters())
        self.opt_other = torch.optim.Adam(net.other.parameters())

    def optimize_parameters(self, step, x, y):
        self.opt_sft.zero_grad()
        self.opt_other.zero_grad()
        out = self.net(x)
        GEN
        if step > 20000:
            self.opt_other.step()
        d_loss = self.net.disc(out.detach()).mean()
        d_loss.backward()
'''


def test_tr402_step_fed_by_a_sibling_branch_backward_is_silent(tmp_path):
    gen = ("if step % 2 == 0:\n            loss = torch.nn.functional.mse_loss(out, y)\n"
           "            loss.backward()\n            self.opt_sft.step()")
    assert not _found(_write(tmp_path, {"m.py": SFT.replace("GEN", gen)}), ("TR402",))


def test_tr402_step_with_no_backward_before_it_still_reports(tmp_path):
    assert _lines(_write(tmp_path, {"m.py": SFT.replace("GEN", "pass")}), "TR402") == [("m.py", 16)]


# --- TR517: a load retried in the except branch under DataParallel handles the prefix ----------------

DEMO_517 = '''import torch
from torch import nn


def train(model, path):
    model = nn.DataParallel(model)
    torch.save({"state_dict": model.state_dict(), "epoch": 1}, path)


def demo(path):
    model = nn.Linear(4, 2)
    checkpoint = torch.load(path, weights_only=True)
    LOAD
'''


def test_tr517_load_with_a_dataparallel_retry_is_silent(tmp_path):
    load = ("try:\n        model.load_state_dict(checkpoint['state_dict'])\n    except RuntimeError:\n"
            "        model = nn.DataParallel(model)\n        model.load_state_dict(checkpoint['state_dict'])")
    assert not _found(_write(tmp_path, {"demo.py": DEMO_517.replace("LOAD", load)}), ("TR517",))


def test_tr517_load_without_a_retry_still_reports(tmp_path):
    load = "model.load_state_dict(checkpoint['state_dict'])"
    assert _lines(_write(tmp_path, {"demo.py": DEMO_517.replace("LOAD", load)}), "TR517") == [("demo.py", 13)]


# --- TR504: eval mode chosen at the top of every pass, never switched back, is deliberate ----------

PHASES = '''import torch
from torch import nn


def train_model(model, loaders, optimizer, epochs):
    PRE
    for epoch in range(epochs):
        for phase in ["test", "train"]:
            model.train(False)  # keep BatchNorm frozen in both phases
            for x, y in loaders[phase]:
                optimizer.zero_grad()
                loss = nn.functional.cross_entropy(model(x), y)
                if phase == "train":
                    loss.backward()
                    optimizer.step()
            BACK
'''


def test_tr504_eval_chosen_each_pass_and_never_undone_is_silent(tmp_path):
    assert not _found(_write(tmp_path, {"t.py": PHASES.replace("BACK", "pass").replace("PRE", "pass")}), ("TR504",))


def test_tr504_eval_each_pass_with_a_train_call_elsewhere_still_reports(tmp_path):
    found = _found(_write(tmp_path, {"t.py": PHASES.replace("BACK", "pass").replace("PRE", "model.train()")}),
                   ("TR504",))
    assert found


# --- TR108: checkpoints pickling one project's config classes are one finding ---------------------

def _class_pickle(module: str, name: str) -> bytes:
    """A protocol-2 pickle of an instance of ``module.name`` (written as bytes, never unpickled)."""
    return (b"\x80\x02c" + module.encode() + b"\n" + name.encode() + b"\nq\x00)\x81q\x01}q\x02X\x01\x00\x00\x00a"
            b"q\x03K\x01sb.")


def test_tr108_config_classes_of_one_module_in_each_run_are_one_finding(tmp_path):
    for run, (module, name) in (("binctabl", ("config.config", "BiNCTABL")), ("deeplob", ("config.config", "DeepLOB")),
                                ("other", ("myproject.state", "Trainer"))):
        (tmp_path / run).mkdir()
        (tmp_path / run / "model.pt").write_bytes(_class_pickle(module, name))
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "__init__.py").write_text("")
    (tmp_path / "config" / "config.py").write_text("class BiNCTABL:\n    pass\n\n\nclass DeepLOB:\n    pass\n")
    (tmp_path / "myproject").mkdir()
    (tmp_path / "myproject" / "__init__.py").write_text("")
    (tmp_path / "myproject" / "state.py").write_text("class Trainer:\n    pass\n")
    (tmp_path / "requirements.txt").write_text("torch\n")
    findings = run_review([str(tmp_path)], Settings(rule_codes=("TR108",), jobs=1, min_confidence="low")).findings
    assert sorted((f.path.rsplit("/", 2)[-2], len(f.related)) for f in findings) == [("binctabl", 1), ("other", 0)], \
        [(f.path, f.severity, len(f.related)) for f in findings]


def test_tr108_project_module_of_a_scanned_checkpoint_is_read_from_its_project(tmp_path):
    # `constants.ModelType('BINCTABL')` called by REDUCE: a class of the checkpoint's own project
    # (an Enum), found from the checkpoint's project root wherever the review runs from
    from torchreview.findings import Severity

    (tmp_path / "requirements.txt").write_text("torch\n")
    (tmp_path / "constants.py").write_text("from enum import Enum\n\n\nclass ModelType(Enum):\n    BINCTABL = 'BINCTABL'\n")
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "model.pt").write_bytes(b"\x80\x02cconstants\nModelType\nq\x00X\x08\x00\x00\x00BINCTABLq\x01\x85q\x02Rq\x03.")
    findings = run_review([str(tmp_path / "runs")], Settings(rule_codes=("TR108",), jobs=1, min_confidence="low")).findings
    assert [f.severity for f in findings] == [Severity.MEDIUM], [(f.severity, f.message) for f in findings]
