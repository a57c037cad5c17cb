"""Classes of findings judged false or noise on blind tests, fixed in the fifteenth session
(2026-11-30), each as a near-miss that must change beside a positive that must stay."""
from __future__ import annotations

import pytest
from residue_helpers import DROPOUT_NET, found as _found, write as _write


def _review_lines(tmp_path, name: str, text: str, code: str) -> list:
    """The lines of ``code``'s findings in a one-file project ``name`` holding ``text``."""
    return [f.line for f in _found(_write(tmp_path, {name: text}), (code,))]


def _reported_on(tmp_path, name: str, text: str, code: str, expected: list[str]) -> bool:
    """``code`` reports exactly the lines of ``text`` that contain one of ``expected``."""
    lines = [n for n, line in enumerate(text.splitlines(), 1) if any(e in line for e in expected)]
    return _review_lines(tmp_path, name, text, code) == lines


# --- project rules at a load nothing runs: a pasted helper nobody calls (meta-concepts' fairseq
# `load_model_state`, TR520 judged noise) is low confidence, like a file rule's finding there -----

TRAIN = '''import argparse

import torch
from torch import nn

from utils import load_model_state


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=0.1)
    args = parser.parse_args()
    model = nn.Linear(4, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
    for epoch in range(3):
        optimizer.zero_grad()
        model(torch.randn(2, 4)).sum().backward()
        optimizer.step()
        torch.save({"model": model.state_dict(), "args": args}, "checkpoint.pt")
    CALL


if __name__ == "__main__":
    main()
'''

UTILS = '''import torch


def load_model_state(filename, model):
    state = torch.load(filename)
    model.load_state_dict(state["model"])
    return state["args"]
'''


def _tr520(tmp_path, call: str) -> list:
    root = _write(tmp_path, {"train.py": TRAIN.replace("CALL", call), "utils.py": UTILS})
    return [(f.path.rsplit("/", 1)[-1], f.confidence, "nothing in the project calls" in f.message)
            for f in _found(root, ("TR520",))]


def test_tr520_load_in_a_helper_nothing_calls_is_low(tmp_path):
    assert _tr520(tmp_path, "pass") == [("utils.py", "low", True)]


def test_tr520_load_in_a_helper_the_script_calls_stays(tmp_path):
    found = _tr520(tmp_path, 'load_model_state("checkpoint.pt", model)')
    assert len(found) == 1 and found[0][0] == "utils.py" and found[0][1] != "low" and not found[0][2], found


# --- TR519: a save whose file name carries the epoch keeps every improving epoch in a file of its
# own; nothing is chosen (SRecBS: `SMA.epoch={}...pth` saved when a test score improves, noise) ------

SELECT = '''import torch
from torch import nn
from torch.utils.data import DataLoader
from torchvision import datasets


def evaluate(model, loader):
    return sum(float(model(x).mean()) for x, _ in loader)


def main():
    model = nn.Linear(4, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    test_loader = DataLoader(datasets.MNIST("data", train=False), batch_size=64)
    best_test = 0.0
    for epoch in range(20):
        optimizer.zero_grad()
        model(torch.randn(2, 4)).sum().backward()
        optimizer.step()
        test_acc = evaluate(model, test_loader)
        if test_acc > best_test:
            best_test = test_acc
            NAME
            torch.save(model.state_dict(), fname)


if __name__ == "__main__":
    main()
'''


def _tr519(tmp_path, name: str, template: str = SELECT, slot: str = "NAME") -> list:
    return _review_lines(tmp_path, "train.py", template.replace(slot, name), "TR519")


def test_tr519_save_named_by_the_epoch_chooses_nothing(tmp_path):
    assert _tr519(tmp_path, 'fname = "model.epoch={}.pth".format(epoch)') == []


def test_tr519_save_named_by_the_epoch_in_an_f_string_chooses_nothing(tmp_path):
    assert _tr519(tmp_path, 'fname = f"ckpt/model_{epoch:03d}.pt"') == []


def test_tr519_best_file_overwritten_each_time_is_a_choice(tmp_path):
    assert _tr519(tmp_path, 'fname = "model.pth"') == [21]


def test_tr519_best_named_file_with_the_epoch_is_still_a_choice(tmp_path):
    assert _tr519(tmp_path, 'fname = f"best_model_{epoch}.pt"') == [21]


def test_tr519_save_helper_handed_the_epoch_is_still_a_choice(tmp_path):
    # the helper's file name is not visible here: it may overwrite one best checkpoint
    text = SELECT.replace("NAME", "fname = None").replace("torch.save(model.state_dict(), fname)",
                                                          "save_checkpoint(model.state_dict(), epoch)")
    root = _write(tmp_path, {"train.py": text})
    assert [f.line for f in _found(root, ("TR519",))] == [21]


# --- TR107: a web framework's own signing key signs that app's cookies; it opens no one's account
# (cocoa's Flask chat app, judged noise): medium; other secrets in the same app stay ----------------

FLASK_APP = '''from flask import Flask


def create_app():
    app = Flask(__name__)
    ASSIGN
    return app
'''


def _tr107(tmp_path, text: str) -> list:
    root = _write(tmp_path, {"web/app.py": text})
    return [f.confidence for f in _found(root, ("TR107",))]


def test_tr107_flask_secret_key_is_medium(tmp_path):
    assert _tr107(tmp_path, FLASK_APP.replace("ASSIGN", "app.config['SECRET_KEY'] = 'gjr39dkjn344_!67#'")) == ["medium"]


def test_tr107_flask_secret_key_attribute_is_medium(tmp_path):
    assert _tr107(tmp_path, FLASK_APP.replace("ASSIGN", "app.secret_key = 'k8Zq2Lm9Xv4Tn7Rb3Wc6'")) == ["medium"]


def test_tr107_api_key_inside_a_flask_app_stays_high(tmp_path):
    assert _tr107(tmp_path, FLASK_APP.replace("ASSIGN", "app.config['API_KEY'] = 'k8Zq2Lm9Xv4Tn7Rb3Wc6'")) == ["high"]


def test_tr107_secret_key_of_a_storage_client_stays_high(tmp_path):
    text = "import boto3\n\nSECRET_KEY = 'k8Zq2Lm9Xv4Tn7Rb3Wc6Yd1Pe5'\nclient = boto3.client('s3', aws_secret_access_key=SECRET_KEY)\n"
    assert _tr107(tmp_path, text) == ["high"]


# --- pins: Pipenv's Pipfile.lock / Pipfile pin the project's torch (head-network-distillation's
# `torch = "==1.4.0"`: TR520 judged noise, that torch loads without weights-only) ------------------

def _tr520_pinned(tmp_path, pin_files: dict) -> list:
    files = {"train.py": TRAIN.replace("CALL", 'load_model_state("checkpoint.pt", model)'), "utils.py": UTILS}
    files.update(pin_files)
    return [f.confidence for f in _found(_write(tmp_path, files), ("TR520",), detect_torch=True)]


def test_pipfile_pin_below_2_6_silences_the_weights_only_default(tmp_path):
    assert _tr520_pinned(tmp_path, {"Pipfile": '[packages]\ntorch = "==1.4.0"\ntorchvision = "==0.5.0"\n'}) == []


def test_pipfile_lock_pin_below_2_6_silences_the_weights_only_default(tmp_path):
    lock = '{"default": {"torch": {"hashes": ["sha256:ab", "sha256:cd"], "version": "==1.4.0"}}}\n'
    assert _tr520_pinned(tmp_path, {"Pipfile.lock": lock, "Pipfile": '[packages]\ntorch = "*"\n'}) == []


def test_pipfile_table_form_pin_is_read(tmp_path):
    assert _tr520_pinned(tmp_path, {"Pipfile": '[packages]\ntorch = {version = "==1.7.1", index = "pytorch"}\n'}) == []


def test_pipfile_asking_for_any_torch_keeps_the_finding(tmp_path):
    assert len(_tr520_pinned(tmp_path, {"Pipfile": '[packages]\ntorch = "*"\n'})) == 1


# --- TR519: a shared evaluation helper's parameter name is not the split; what the caller passes
# is (head-network-distillation's validate() hands valid_loader to test(model, test_loader), false) --

HELPER = '''import torch
from torch import nn
from torch.utils.data import DataLoader, random_split
from torchvision import datasets


def test(model, test_loader):
    correct = 0
    total = 0
    with torch.no_grad():
        for batch_idx, (inputs, targets) in enumerate(test_loader):
            correct += (model(inputs).argmax(1) == targets).sum().item()
            total += targets.size(0)
    acc = 100.0 * correct / total
    return acc, total


def main():
    model = nn.Linear(4, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    train_set, valid_set = random_split(datasets.MNIST("data", train=True), [50000, 10000])
    valid_loader = DataLoader(valid_set, batch_size=64)
    test_loader = DataLoader(datasets.MNIST("data", train=False), batch_size=64)
    best_acc = 0.0
    for epoch in range(20):
        optimizer.zero_grad()
        model(torch.randn(2, 4)).sum().backward()
        optimizer.step()
        acc, _ = test(model, PASSED)
        if acc > best_acc:
            best_acc = acc
            torch.save(model.state_dict(), "best.pt")
    test(model, test_loader)


if __name__ == "__main__":
    main()
'''


def _helper(tmp_path, passed: str) -> list:
    return _tr519(tmp_path, passed, HELPER, "PASSED")


def test_tr519_helper_handed_the_validation_loader_selects_on_validation(tmp_path):
    assert _helper(tmp_path, "valid_loader") == []


def test_tr519_helper_handed_the_validation_loader_by_keyword(tmp_path):
    assert _helper(tmp_path, "test_loader=valid_loader") == []


def test_tr519_helper_handed_the_test_loader_still_selects_on_test(tmp_path):
    assert _helper(tmp_path, "test_loader") == [30]


# --- TR508: a class that moves its plain list's members by hand in its own cuda()/to() knows they
# are not registered (TENet's VGG perceptual loss, judged noise) ------------------------------------

VGG_LOSS = '''import torch
from torch import nn


class VGGLoss(nn.Module):
    def __init__(self, vgg):
        super().__init__()
        self.vgg = []
        for start, end in [(0, 4), (4, 9)]:
            self.vgg.append(nn.Sequential(*list(vgg.features.children())[start:end]))
MOVE
    def forward(self, x, y):
        loss = 0
        for seq in self.vgg:
            x, y = seq(x), seq(y)
            loss = loss + nn.functional.l1_loss(x, y)
        return loss


loss = VGGLoss(torch.hub.load("pytorch/vision:v0.10.0", "vgg19"))
'''


def _tr508(tmp_path, move: str) -> list:
    return _review_lines(tmp_path, "loss.py", VGG_LOSS.replace("MOVE", move), "TR508")


def test_tr508_list_moved_by_the_class_own_cuda_is_deliberate(tmp_path):
    assert _tr508(tmp_path, "\n    def cuda(self, device=None):\n        for seq in self.vgg:\n            seq.cuda()\n"
                  "        return self\n") == []


def test_tr508_list_moved_by_the_class_own_to_is_deliberate(tmp_path):
    assert _tr508(tmp_path, "\n    def to(self, *args, **kwargs):\n        self.vgg = [s.to(*args, **kwargs) for s in self.vgg]\n"
                  "        return super().to(*args, **kwargs)\n") == []


def test_tr508_list_without_such_a_method_is_reported(tmp_path):
    assert _tr508(tmp_path, "") == [8]


# --- TR425: `transforms.Scale` / `RandomSizedCrop` left torchvision in 0.12 (torch 1.11), not 0.15 ------

def _scale(tmp_path, pin: str) -> list:
    files = {"data.py": "from torchvision import transforms\n\ntf = transforms.Scale(256)\n",
             "requirements.txt": f"torch=={pin}\n"}
    return [(f.kind, "0.12" in f.message) for f in _found(_write(tmp_path, files), ("TR425",), detect_torch=True)]


def test_tr425_scale_is_a_crash_on_torch_1_11(tmp_path):
    assert _scale(tmp_path, "1.11.0") == [("defect", True)]


def test_tr425_scale_is_a_deprecation_on_torch_1_10(tmp_path):
    assert _scale(tmp_path, "1.10.0") == [("advice", True)]


# --- TR107: a key and its secret bound to two names that one call reads together are one
# credential (corn-ordinal-neuralnet's Flickr `api_key` / `api_secret`, the second judged a repeat) --

FLICKR = '''import flickrapi

api_key = "91dc9b1c17106ef8184b38acc4dfba7f"
api_secret = "001f5f03fee6a4e8"
CALL
'''


def test_tr107_key_and_secret_read_by_one_call_are_one_finding(tmp_path):
    root = _write(tmp_path, {"download.py": FLICKR.replace("CALL", "flickr = flickrapi.FlickrAPI(api_key, api_secret)")})
    found = _found(root, ("TR107",))
    assert len(found) == 1 and "`api_key` and `api_secret`" in found[0].message, [f.message for f in found]


def test_tr107_key_and_secret_read_apart_stay_two(tmp_path):
    root = _write(tmp_path, {"download.py": FLICKR.replace("CALL", "a = flickrapi.FlickrAPI(api_key)\nb = print(api_secret)")})
    assert len(_found(root, ("TR107",))) == 2


# --- TR508: a backbone table whose chosen entry's children go into a registered Sequential
# (the SimCLR ResNet table of dsmil, IBMIL, tmi2022: judged false three times) -----------------------

SIMCLR = '''import torch
from torch import nn
from torchvision import models


class ResNetSimCLR(nn.Module):
    def __init__(self, base_model, out_dim):
        super().__init__()
        self.resnet_dict = {"resnet18": models.resnet18(), "resnet50": models.resnet50()}
        resnet = self._get_basemodel(base_model)
        num_ftrs = resnet.fc.in_features
        USE
        self.l1 = nn.Linear(num_ftrs, out_dim)

    def _get_basemodel(self, model_name):
        model = self.resnet_dict[model_name]
        return model

    def forward(self, x):
        return self.l1(self.features(x).flatten(1))


net = ResNetSimCLR("resnet18", 64)
'''


def _simclr(tmp_path, use: str) -> list:
    return _review_lines(tmp_path, "model.py", SIMCLR.replace("USE", use), "TR508")


def test_tr508_table_entry_whose_children_are_registered_is_not_reported(tmp_path):
    assert _simclr(tmp_path, "self.features = nn.Sequential(*list(resnet.children())[:-1])") == []


def test_tr508_table_entry_only_kept_in_a_local_is_reported(tmp_path):
    assert _simclr(tmp_path, "self.features = lambda x: resnet(x)") == [9]


# --- TR402: a helper named as a backward pass between zero_grad() and step() fills the gradients
# (auto-lambda's `autol.unrolled_backward(...)` sets its meta-weights' .grad, judged false) ----------

META = '''import torch
from torch import nn

from auto_lambda import AutoLambda


def train(model, loader, optimizer):
    meta_weights = torch.ones(2, requires_grad=True)
    meta_optimizer = torch.optim.Adam([meta_weights], lr=1e-3)
    autol = AutoLambda(model, meta_weights)
    for x, y in loader:
        meta_optimizer.zero_grad()
        CALL
        meta_optimizer.step()
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
'''


def _tr402(tmp_path, call: str) -> list:
    root = _write(tmp_path, {"train.py": META.replace("CALL", call), "auto_lambda.py": "class AutoLambda:\n    pass\n"})
    return [f.line for f in _found(root, ("TR402",))]


def test_tr402_helper_backward_between_zero_grad_and_step_fills_the_gradients(tmp_path):
    assert _tr402(tmp_path, "autol.unrolled_backward(x, y, optimizer)") == []


def test_tr402_other_helper_between_zero_grad_and_step_is_reported(tmp_path):
    assert _tr402(tmp_path, "autol.log_weights(x, y)") == [14]


# --- TR513: a DistributedSampler that reaches no DataLoader (PercepNet: kept by its trainer, never
# used; the loaders shuffle on their own) has no epoch to set --------------------------------------

PERCEP = '''import torch
from torch import nn
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


class Trainer:
    def __init__(self, model, loader, sampler, optimizer):
        self.model, self.loader, self.sampler, self.optimizer = model, loader, sampler, optimizer

    def run(self, epochs):
        for epoch in range(epochs):
            for x, y in self.loader:
                self.optimizer.zero_grad()
                nn.functional.mse_loss(self.model(x), y).backward()
                self.optimizer.step()


def main(dataset):
    model = nn.Linear(4, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    sampler = {"train": None}
    sampler["train"] = DistributedSampler(dataset, shuffle=True)
    loader = DataLoader(dataset, batch_size=8, LOADER_ARG)
    Trainer(model, loader, sampler, optimizer).run(10)
'''


@pytest.mark.parametrize(("loader_arg", "expected"), [
    ("shuffle=True", []),  # the sampler feeds no loader: no epoch to set
    ('sampler=sampler["train"]', [23]),  # the loader draws from it: every epoch repeats the order
])
def test_tr513_sampler_reported_only_when_a_loader_draws_from_it(tmp_path, loader_arg, expected):
    assert _review_lines(tmp_path, "train.py", PERCEP.replace("LOADER_ARG", loader_arg), "TR513") == expected


# --- kinds: a loop over a list of models holds a model each pass, so `for net in nets: net.eval()`
# switches them (IBMIL's `milnets`, TR207 judged false) -------------------------------------------

LIST_EVAL = '''import torch
from torch import nn

''' + DROPOUT_NET + '''

def main():
    clf = Net()
    att = Net()
    clf.load_state_dict(torch.load("c.pt", weights_only=True))
    SWITCH
    with torch.no_grad():
        for x in torch.randn(3, 4):
            print(clf(x))


if __name__ == "__main__":
    main()
'''


@pytest.mark.parametrize(("switch", "expected"), [
    ("nets = [clf, att]\n    for sub_net in nets:\n        sub_net.eval()", []),
    ("for sub_net in (clf, att):\n        sub_net.eval()", []),
    ("for sub_net in (clf, att):\n        print(sub_net)", ["print(clf(x))"]),  # listed, never switched
])
def test_kinds_loop_over_a_list_of_models_holds_a_model(tmp_path, switch, expected):
    assert _reported_on(tmp_path, "run.py", LIST_EVAL.replace("SWITCH", switch), "TR207", expected)


# --- library knowledge: a torchvision ResNet built with a norm that keeps no running statistics
# holds nothing eval() changes (tmi2022's InstanceNorm feature extractor, TR207 judged false) -------

RESNET_FEATS = '''import torch
from torch import nn
from torchvision import models


def main():
    resnet = models.resnet18(NORM)
    resnet.fc = nn.Identity()
    resnet.load_state_dict(torch.load("w.pt", weights_only=True))
    with torch.no_grad():
        for x in torch.randn(2, 1, 3, 64, 64):
            print(resnet(x))


if __name__ == "__main__":
    main()
'''


@pytest.mark.parametrize(("norm", "expected"), [
    ("norm_layer=nn.InstanceNorm2d", []),
    ("norm_layer=nn.InstanceNorm2d, num_classes=10", []),
    ("", ["print(resnet(x))"]),  # the default BatchNorm: eval() matters
    ("norm_layer=nn.SyncBatchNorm", ["print(resnet(x))"]),
])
def test_library_resnet_with_a_stateless_norm_is_mode_free(tmp_path, norm, expected):
    assert _reported_on(tmp_path, "extract.py", RESNET_FEATS.replace("NORM", norm), "TR207", expected)


# --- loops: a helper that switches a deep copy leaves the trained module's mode alone (KD_Lib's
# `evaluate()`: `model = deepcopy(self.student).to(d); self._evaluate_model(model)`, TR504 false) ----

COPY_EVAL = '''from copy import deepcopy

import torch
from torch import nn


class Distiller:
    def __init__(self, student, loader):
        self.student = student
        self.loader = loader
        self.optimizer = torch.optim.SGD(student.parameters(), lr=0.1)

    def _evaluate_model(self, model):
        model.eval()
        with torch.no_grad():
            return sum(float(model(x).sum()) for x, _ in self.loader)

    def evaluate(self):
        EVALUATED
        return self._evaluate_model(model)

    def train(self, epochs):
        self.student.train()
        for ep in range(epochs):
            for x, y in self.loader:
                self.optimizer.zero_grad()
                nn.functional.cross_entropy(self.student(x), y).backward()
                self.optimizer.step()
            print(self.evaluate())
'''


@pytest.mark.parametrize(("evaluated", "reported"), [
    ("model = deepcopy(self.student).to('cpu')", False),
    ("model = deepcopy(self.student)", False),
    ("model = self.student", True),  # the live student: trained in eval mode from the second epoch
])
def test_loops_switch_of_a_deep_copy_in_a_helper_is_not_the_loop_s(tmp_path, evaluated, reported):
    found = _review_lines(tmp_path, "distill.py", COPY_EVAL.replace("EVALUATED", evaluated), "TR504")
    assert bool(found) is reported


# --- advice: a script that trains nothing and times model calls on fake inputs is a benchmark, by
# its content as well as its name (LightTrack's tracking/Speed.py, TR207 judged noise twice) -------

SPEED = '''import time

import torch
from models import Net


if __name__ == "__main__":
    use_gpu = torch.cuda.is_available()
    model = Net()
    x = INPUT
    if use_gpu:
        model = model.cuda()
        x = x.cuda()
    with torch.no_grad():
        for i in range(10):
            out = model(x)
        start = time.time()
        for i in range(100):
            out = model(x)
        print("fps", 100 / (time.time() - start))
'''


@pytest.mark.parametrize(("inputs", "confidence"), [
    ("torch.randn(1, 4)", "medium"),  # fake inputs, timed: a speed test
    ("torch.load('batch.pt', weights_only=True)", "high"),  # real data read from disk
])
def test_advice_timing_script_on_fake_inputs_is_a_benchmark(tmp_path, inputs, confidence):
    files = {"Speed.py": SPEED.replace("INPUT", inputs), "models.py": "import torch\nfrom torch import nn\n\n" + DROPOUT_NET}
    found = _found(_write(tmp_path, files), ("TR207",))
    assert [f.confidence for f in found] == [confidence]


# --- module content: `F.dropout(x, p=self.dropout, training=self.training)` with `self.dropout` an
# `__init__` parameter is a condition on that parameter (NodeGAE's LinkPredictor built with 0) -------

LINK_PREDICTOR = '''import torch
import torch.nn.functional as F


class LinkPredictor(torch.nn.Module):
    def __init__(self, in_channels, hidden_channels, dropout):
        super().__init__()
        self.lins = torch.nn.ModuleList([torch.nn.Linear(in_channels, hidden_channels),
                                         torch.nn.Linear(hidden_channels, 1)])
        self.dropout = dropout

    def forward(self, x):
        x = F.relu(self.lins[0](x))
        x = F.dropout(x, p=self.dropout, training=self.training)
        return torch.sigmoid(self.lins[1](x))


def test(predictor, data):
    predictor.eval()
    with torch.no_grad():
        return predictor(data).mean()


def train(predictor, optimizer, data):
    predictor.train()
    for step in range(100):
        optimizer.zero_grad()
        predictor(data).mean().backward()
        optimizer.step()
        if step % 2 == 0:
            print(test(predictor, data))


def main():
    predictor = LinkPredictor(8, 16, DROP)
    train(predictor, torch.optim.Adam(predictor.parameters()), torch.randn(4, 8))
'''


@pytest.mark.parametrize(("drop", "reported"), [("0", False), ("0.0", False), ("0.5", True)])
def test_module_content_functional_dropout_rate_from_an_init_parameter(tmp_path, drop, reported):
    found = _review_lines(tmp_path, "link.py", LINK_PREDICTOR.replace("DROP", drop), "TR504")
    assert bool(found) is reported


# --- call paths: a submodule its class puts in eval mode (in `__init__`, right after building it)
# and never back in training is not "freshly built, in training mode" (TimeVQVAE's MaskGIT, false) --

OWNER = '''import torch
from torch import nn

''' + DROPOUT_NET + '''

@torch.no_grad()
def quantize(x, vq_model):
    return vq_model(x)


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.vq_model = Net()
        SWITCH
        self.head = nn.Linear(4, 2)

    def forward(self, x):
        return self.head(quantize(x, self.vq_model))


gen = Generator()
'''


@pytest.mark.parametrize(("switch", "reported"), [
    ("self.vq_model.eval()", False),
    ("self.vq_model.train(False)", False),
    ("pass", True),  # left in training mode: the quantizer's dropout stays active
])
def test_call_paths_submodule_kept_in_eval_by_its_class(tmp_path, switch, reported):
    found = _review_lines(tmp_path, "maskgit.py", OWNER.replace("SWITCH", switch), "TR207")
    assert bool(found) is reported


# --- TR514: `require_grad = False` on a DataLoader batch changes nothing (EIN-SELD, judged noise) ----

BATCH_TYPO = '''import torch
from torch.utils.data import DataLoader
from tqdm import tqdm


def extract(dataset, extractor, weights):
    loader = DataLoader(dataset, batch_size=8)
    iterator = tqdm(enumerate(loader), total=len(loader))
    for it, batch_sample in iterator:
        batch_x = TARGET
        batch_x.require_grad = False
        print(extractor(batch_x))
'''


@pytest.mark.parametrize(("target", "kind"), [
    ('batch_sample["waveform"]', "advice"),  # collated data: never tracks gradients
    ("weights", "defect"),  # a value handed in: it may be a parameter
])
def test_tr514_typo_on_a_loader_batch_is_advice(tmp_path, target, kind):
    found = _found(_write(tmp_path, {"extract.py": BATCH_TYPO.replace("TARGET", target)}), ("TR514",))
    assert [f.kind for f in found] == [kind]


# --- TR107: a named key or token in a test file is a fixture (llm-random's expected command lines) --

def test_tr107_named_key_in_a_test_file_is_medium(tmp_path):
    text = 'neptune_api_key = "r8nd0mN3ptun3Ap1K3yQ7"\nimage_path = "/some/path/for/image"\n'
    assert [f.confidence for f in _found(_write(tmp_path, {"tests/test_grid.py": text}), ("TR107",))] == ["medium"]
    assert [f.confidence for f in _found(_write(tmp_path / "b", {"grid.py": text}), ("TR107",))] == ["high"]


# --- kinds: a long method chain is walked once (R2GenGPT's 40-deep `t.replace(...)` report cleaner
# made the review of one 98-line file hang: every level walked its receiver twice, 2**n work) -------

def test_kinds_long_method_chain_is_walked_once(monkeypatch):
    import ast

    from torchreview.engine.context import FileContext
    from torchreview.engine.model.kinds import Kinds
    from torchreview.engine.source import SourceFile

    chain = "t" + ".replace('..', '.')" * 18  # 2**18 walks before the fix: fails fast, not hangs
    text = f"import torch\n\n\ndef clean(t):\n    return {chain}.split('. ')\n"
    ctx = FileContext(SourceFile("clean.py", text), ast.parse(text), target_torch=None, has_torch=True)
    outer = max((n for n in ast.walk(ctx.model.tree) if isinstance(n, ast.Call)), key=lambda n: len(ast.unparse(n)))
    calls = []
    original = Kinds.kind_of

    def counting(self, node, scope=None):
        calls.append(1)
        return original(self, node, scope)

    monkeypatch.setattr(Kinds, "kind_of", counting)
    assert ctx.model.kind_of(outer) is None
    assert len(calls) < 500, len(calls)  # linear in the chain's length


# --- TR413: one loss object fed probabilities in two places of one file is one finding ------------

NLL_TWICE = '''import torch
from torch import nn

model = nn.Sequential(nn.Linear(4, 1), nn.Sigmoid())
criterion = nn.NLLLoss()
x, y = torch.randn(8, 4), torch.randint(0, 1, (8,))
print(criterion(model(x), y))
for step in range(10):
    out = model(x)
    loss = SECOND(out, y)
    loss.backward()
'''


# (another loss object misfed the same way in the same file is the same habit: one comment too)
@pytest.mark.parametrize(("second", "count"), [("criterion", 1), ("nn.NLLLoss()", 1)])
def test_tr413_one_loss_object_misfed_twice_is_one_finding(tmp_path, second, count):
    from torchreview.engine.runner import Settings, run_review

    root = _write(tmp_path, {"demo.py": NLL_TWICE.replace("SECOND", second)})
    found = run_review([str(root)], Settings(rule_codes=("TR413",), jobs=1, min_confidence="low")).findings
    assert len(found) == count, [(f.line, f.message) for f in found]


# --- TR502: a function every project caller runs under no_grad (callers in other files) returns no
# graph to `.numpy()` (BraTS-DMFNet's validate_softmax from test.py and train_fold.py, false) ------

PREDICT = '''import torch
from torch import nn


def validate(model, x):
    output = model(x)
    return output.cpu().numpy()
'''


@pytest.mark.parametrize(("call", "reported"), [
    ("    with torch.no_grad():\n        scores = validate(net, x)\n", False),
    ("    scores = validate(net, x)\n", True),
])
def test_tr502_function_every_caller_runs_without_grad(tmp_path, call, reported):
    caller = ("import torch\nfrom torch import nn\n\nfrom predict import validate\n\n\ndef run(net, x):\n" + call +
              "    return scores\n\n\nif __name__ == '__main__':\n    run(nn.Linear(4, 2), torch.randn(2, 4))\n")
    found = _found(_write(tmp_path, {"predict.py": PREDICT, "evaluate.py": caller}), ("TR502",))
    assert bool([f for f in found if f.path.endswith("predict.py")]) is reported


# --- pins: a README naming the torch in backticks (LFM's "Pytorch `1.13.1`/`2.0.0` are used") -------

@pytest.mark.parametrize(("readme", "pin"), [
    ("Python `3.10` and Pytorch `1.13.1`/`2.0.0` are used in this implementation.\n", (1, 13)),
    ("Pytorch `1.8`+ is needed.\n", None),  # a floor says nothing about the installed torch
])
def test_readme_backticked_torch_version_pins(tmp_path, readme, pin):
    from torchreview.config import nearest_torch_pin

    _write(tmp_path, {"README.md": readme, "train.py": "import torch\n"})
    assert nearest_torch_pin(str(tmp_path / "train.py"), memo=False)[1] == pin


# --- call paths: a function of a script (a `__main__` guard) that neither the script nor any other
# project file names never runs (head-network-distillation's validate(), TR519 judged false) ------

SCRIPT = '''import torch
from torch import nn


def helper(model):
    for p in model.parameters():
        p.require_grad = True


def main():
    model = nn.Linear(4, 1)
    CALL


if __name__ == "__main__":
    main()
'''


@pytest.mark.parametrize(("call", "confidence"), [
    ("print(model(torch.randn(2, 4)))", "low"),  # helper() is never called: dead code
    ("helper(model); model(torch.randn(2, 4)).sum().backward()", "high"),
])
def test_call_paths_uncalled_function_of_a_script_never_runs(tmp_path, call, confidence):
    found = _found(_write(tmp_path, {"run.py": SCRIPT.replace("CALL", call)}), ("TR514",))
    assert [f.confidence for f in found] == [confidence]


# --- TR403: a Dataset whose __getitem__ moves every returned tensor to a device itself yields
# batches on that device in a main-process loader (Rec2024's datasets, in another module; false) ---

DEVICE_DATASET = '''import torch
from torch.utils.data import Dataset


class PairDataset(Dataset):
    def __init__(self, rows, device="cpu"):
        self.rows = rows
        self.device = device

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, idx):
        features, label = self.rows[idx]
        features = torch.FloatTensor(features)MOVE
        label = torch.FloatTensor([label])MOVE
        return features, label
'''

DEVICE_TRAIN = '''import torch
from torch import nn
from torch.utils.data import DataLoader

from data import PairDataset


def main(device):
    model = nn.Linear(3, 1).to(device)
    optimizer = torch.optim.Adam(model.parameters())
    dataset = PairDataset([([1.0, 2.0, 3.0], 1.0)], device=device)
    loader = DataLoader(dataset, batch_size=2WORKERS)
    for features, label in loader:
        optimizer.zero_grad()
        nn.functional.mse_loss(model(features), label).backward()
        optimizer.step()


if __name__ == "__main__":
    main("cuda")
'''


@pytest.mark.parametrize(("move", "workers", "reported"), [
    (".to(self.device)", "", False),
    ("", "", True),  # items stay on the CPU
    (".to(self.device)", ", num_workers=4", True),  # worker processes: the items are built elsewhere
])
def test_tr403_dataset_that_moves_its_items_yields_device_batches(tmp_path, move, workers, reported):
    files = {"data.py": DEVICE_DATASET.replace("MOVE", move), "train.py": DEVICE_TRAIN.replace("WORKERS", workers)}
    found = [f for f in _found(_write(tmp_path, files), ("TR403",)) if f.path.endswith("train.py")]
    assert bool(found) is reported, [f.message for f in found]


# --- TR423: removed APIs are one finding per API (rewriting: `symeig` listed under `lstsq`) ----------

def test_tr423_removed_apis_are_one_finding_per_api(tmp_path):
    from torchreview.engine.runner import Settings, run_review

    text = ("import torch\n\n\ndef fit(a, b):\n    x = torch.lstsq(b, a)\n    y = torch.lstsq(a, b)\n"
            "    e = torch.symeig(a)\n    return x, y, e\n")
    root = _write(tmp_path, {"fit.py": text})
    found = run_review([str(root)], Settings(rule_codes=("TR423",), jobs=1, min_confidence="low")).findings
    heads = sorted((f.message.split("`")[1], len(f.related)) for f in found)
    assert heads == [("torch.lstsq", 1), ("torch.symeig", 0)], heads
