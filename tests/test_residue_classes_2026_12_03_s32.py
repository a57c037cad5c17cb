"""Residue classes of the thirty-second session (findings judged noise or false in blind test 119 and
later): each positive or near-miss below failed on the code before its fix."""
from __future__ import annotations

import pytest

from residue_helpers import DROPOUT_NET, found, write


# --- TR513: the epoch is set by a helper of another module (`set_mnist_epoch(loaders, epoch)` whose body
# runs `loaders.train_sampler.set_epoch(epoch)`; judged false in blind test 119) ---------------------------

LOADERS = '''import torch
from torch.utils.data import DataLoader, DistributedSampler


class Loaders:
    def __init__(self, train, train_sampler):
        self.train = train
        self.train_sampler = train_sampler


def make_loaders(dataset, batch_size):
    train_sampler = DistributedSampler(dataset)
    train = DataLoader(dataset, batch_size=batch_size, sampler=train_sampler)
    return Loaders(train, train_sampler)


def set_data_epoch(loaders, epoch):
    loaders.train_sampler.set_epoch(epoch)
'''

TRAIN = '''import torch
from torch import nn

from data import make_loaders{extra}


def main(dataset, model, epochs):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loaders = make_loaders(dataset, 32)
    for epoch in range(epochs):
        {call}
        for x, y in loaders.train:
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
'''


def test_tr513_epoch_set_by_a_helper_of_another_module_is_silent(tmp_path):
    root = write(tmp_path, {"pyproject.toml": "", "data.py": LOADERS,
                            "train.py": TRAIN.format(extra=", set_data_epoch", call="set_data_epoch(loaders, epoch)")})
    assert found(root, ("TR513",)) == []


def test_tr513_helper_defined_but_never_called_still_reports(tmp_path):
    root = write(tmp_path, {"pyproject.toml": "", "data.py": LOADERS,
                            "train.py": TRAIN.format(extra="", call="print(epoch)")})
    assert [f.path.rsplit("/", 1)[-1] for f in found(root, ("TR513",))] == ["train.py"]


# --- TR519: a k-fold run's held-out fold (`valid_folds = train[train["fold"] == args.fold]` beside
# `train[train["fold"] != args.fold]`) is validation data whatever the dataset over it is called
# (`testing_set`; judged false in blind test 119); a dataset over the real test file keeps the finding ---

KFOLD = '''import argparse

import pandas as pd
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset
from tqdm import tqdm


class TableDataset(Dataset):
    def __init__(self, df, training):
        self.df = df
        self.training = training

    def __len__(self):
        return len(self.df)

    def __getitem__(self, i):
        return torch.tensor(self.df.x[i]), torch.tensor(self.df.y[i])


parser = argparse.ArgumentParser()
parser.add_argument("--fold", type=int, default=0)
parser.add_argument("--epochs", type=int, default=10)
args = parser.parse_args()
train = pd.read_csv("data/labels.csv")
train_folds = train[train["fold"] != args.fold].reset_index(drop=True)
{held}
training_set = TableDataset(train_folds, True)
testing_set = TableDataset(held_rows, False)
training_loader = DataLoader(training_set, batch_size=8, shuffle=True)
testing_loader = DataLoader(testing_set, batch_size=8)
model = nn.Linear(4, 1)
optimizer = torch.optim.Adam(model.parameters())


def train_one_epoch():
    model.train()
    for x, y in tqdm(training_loader):
        optimizer.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()


def val():
    model.eval()
    total = 0.0
    bar = tqdm(enumerate(testing_loader), total=len(testing_loader))
    for idx, (x, y) in bar:
        with torch.no_grad():
            loss = nn.functional.mse_loss(model(x), y)
        total += loss.item()
    return total / len(testing_loader)


best_score = 10000
for epoch in range(args.epochs):
    train_one_epoch()
    val_loss = val()
    if val_loss < best_score:
        best_score = val_loss
        torch.save(model.state_dict(), f"model_fold{args.fold}.pt")
'''


@pytest.mark.parametrize("held, expected", [
    ('held_rows = train[train["fold"] == args.fold].reset_index(drop=True)', []),
    ('held_rows = train[train["fold"] == args.fold]', []),
    ('held_rows = pd.read_csv("data/test.csv")', ["TR519"]),
    # a mask on another column than the complement's is no fold of it: the dataset's name decides
    ('held_rows = train[train["kind"] == args.fold]', ["TR519"]),
])
def test_tr519_k_fold_held_out_fold_is_validation(tmp_path, held, expected):
    root = write(tmp_path, {"train.py": KFOLD.replace("{held}", held)})
    assert [f.code for f in found(root, ("TR519",))] == expected


# --- TR209: a host read the step never uses, when the same step reads the value on the host anyway
# on the next line (`self.running_loss.append(loss.cpu().detach().numpy())`): deleting the dead line saves
# no wait (judged noise in blind test 119): low advice; alone in the step it stays a finding -----------

TRAINER = '''import torch
from torch import nn


class Trainer:
    def __init__(self, model, loader):
        self.device = torch.device("cuda")
        self.model = model.to(self.device)
        self.loader = loader
        self.optimizer = torch.optim.Adam(model.parameters())
        self.running_loss = []

    def train_step(self, x, y):
        self.optimizer.zero_grad()
        loss = nn.functional.mse_loss(self.model(x.to(self.device)), y.to(self.device))
        loss.backward()
        self.optimizer.step()
        t_loss = loss.cpu().detach().numpy()
{extra}
    def fit(self, epochs):
        for epoch in range(epochs):
            for x, y in self.loader:
                self.train_step(x, y)
'''


def test_tr209_unused_read_beside_another_read_is_low_advice(tmp_path):
    extra = "        self.running_loss.append(loss.cpu().detach().numpy())\n"
    root = write(tmp_path, {"trainer.py": TRAINER.format(extra=extra)})
    assert [(f.line, f.confidence, f.kind) for f in found(root, ("TR209",)) if f.line == 18] == \
        [(18, "low", "advice")]


def test_tr209_unused_read_alone_in_the_step_is_reported(tmp_path):
    root = write(tmp_path, {"trainer.py": TRAINER.format(extra="")})
    assert [(f.line, f.confidence) for f in found(root, ("TR209",))] == [(18, "high")]


# --- TR430: a fixed blur module handed NumPy images (`torch.from_numpy(x)` in its `forward`), with a
# frozen kernel and no layer, returning `np.array(...)` for an image metric (judged false in blind test
# 119); a trainable kernel, or a forward that moves its data to a device, keeps the finding -------------

BLUR = '''import numpy as np
import torch
import torch.nn.functional as F
from torch import nn


class GaussianBlur(nn.Module):
    def __init__(self, kernel):
        super().__init__()
        self.kernel_size = len(kernel)
        self.weight = nn.Parameter(torch.FloatTensor(kernel).unsqueeze(0).unsqueeze(0), requires_grad={grad})

    def forward(self, x):
        x = torch.from_numpy(x).permute(2, 0, 1).to(torch.float32).unsqueeze(0){move}
        x1 = F.conv2d(x[:, :1], self.weight)
        x2 = F.conv2d(x[:, 1:2], self.weight)
        x = torch.cat([x1, x2], dim=1)
        return np.array(x.squeeze(0).permute(1, 2, 0))
'''


@pytest.mark.parametrize("grad, move, expected", [
    ("False", "", []), ("True", "", ["TR430"]), ("False", ".to(self.weight.device)", ["TR430"])])
def test_tr430_numpy_operator_on_the_host_is_silent(tmp_path, grad, move, expected):
    root = write(tmp_path, {"metrics.py": BLUR.format(grad=grad, move=move)})
    assert [f.code for f in found(root, ("TR430",))] == expected


# --- TR508: a plain list of grouping modules of another project file that store only numbers
# (`self.radius, self.nsample = radius, nsample`, built from a loop over a numeric default and a
# parameter defaulting to a number): nothing to register (judged noise in blind test 119) -> low advice;
# a grouping module with a layer of its own keeps the defect ---------------------------------------------

GROUPER = '''import torch
from torch import nn


class QueryAndGroup(nn.Module):
    def __init__(self, radius, nsample, use_xyz=True):
        super(QueryAndGroup, self).__init__()
        self.radius, self.nsample = radius, nsample
        self.use_xyz = use_xyz{layer}

    def forward(self, xyz, new_xyz):
        idx = torch.cdist(new_xyz, xyz).topk(self.nsample, largest=False).indices
        return torch.gather(xyz, 1, idx.unsqueeze(-1).expand(-1, -1, 3))
'''

GROUPING = '''import torch
from torch import nn

from pointnet2.utils import QueryAndGroup


class Grouping(nn.Module):
    def __init__(self, nsample=16, radii=(0.01, 0.02)):
        super().__init__()
        self.groupers = []
        for r in radii:
            self.groupers.append(QueryAndGroup(r, nsample, use_xyz=True))
        self.mlp = nn.Linear(3, 8)

    def forward(self, xyz, new_xyz):
        return [self.mlp(g(xyz, new_xyz)) for g in self.groupers]
'''


@pytest.mark.parametrize("layer, expected", [("", [("low", "advice")]),
                                             ("\n        self.proj = nn.Linear(3, 3)", [("high", "defect")])])
def test_tr508_list_of_number_only_modules_of_another_file_is_advice(tmp_path, layer, expected):
    root = write(tmp_path, {"pointnet2/__init__.py": "", "pointnet2/utils.py": GROUPER.format(layer=layer),
                            "models/modules.py": GROUPING})
    assert [(f.confidence, f.kind) for f in found(root, ("TR508",))] == expected


# --- TR207: a latency function inside an evaluation script (warm-up passes, then a loop timed with CUDA
# events, `_ = model(dummy_input)` on `torch.randn` input; judged a small benchmarking nit in blind test
# 119): medium, hidden by default; the same model fed real batches whose outputs are used stays high -----

LATENCY = '''import numpy as np
import torch
from torch import nn


''' + DROPOUT_NET + '''

def inference_time(model):
    dummy_input = torch.randn(1, 4).to("cuda")
    starter, ender = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    timings = np.zeros((300, 1))
    for _ in range(10):
        _ = model(dummy_input)
    with torch.no_grad():
        for rep in range(300):
            starter.record()
            {call}
            ender.record()
            torch.cuda.synchronize()
            timings[rep] = starter.elapsed_time(ender)
    return np.sum(timings) / 300


def main():
    model = Net().cuda()
    print(inference_time(model))


if __name__ == "__main__":
    main()
'''


def test_tr207_latency_loop_on_made_up_input_is_medium(tmp_path):
    root = write(tmp_path, {"inference_eval.py": LATENCY.format(call="_ = model(dummy_input)")})
    got = found(root, ("TR207",))
    assert got and {f.confidence for f in got} == {"medium"}


def test_tr207_timed_loop_on_real_batches_stays_high(tmp_path):
    # the same loops fed a batch the caller hands in: real data, the outputs are predictions
    text = LATENCY.replace("def inference_time(model):\n    dummy_input = torch.randn(1, 4).to(\"cuda\")",
                           "def inference_time(model, batch):\n    dummy_input = batch.to(\"cuda\")")
    text = text.replace("print(inference_time(model))", "print(inference_time(model, torch.load(\"batch.pt\")))")
    root = write(tmp_path, {"inference_eval.py": text.format(call="_ = model(dummy_input)")})
    assert [f.confidence for f in found(root, ("TR207",))] == ["high"]


# --- TR519: a utility library's generic trainer (`def train(self, epochs, train_loader, test_loader=None)`
# keeping the best model on `test_loader`) that nothing in the project calls: the parameter's name is the
# API's label, the users decide what to pass (judged noise in blind test 119) -> low; once a script of
# the project hands it the official test split, the finding is back ------------------------------------

LIB_TRAINER = '''import numpy as np
import torch
from torch import nn


class Trainer:
    def __init__(self, model, lr=1e-3):
        self.model = model
        self.optimizer = torch.optim.Adam(model.parameters(), lr=lr)

    def train_iter(self, loader):
        self.model.train()
        for x, y in loader:
            self.optimizer.zero_grad()
            nn.functional.cross_entropy(self.model(x), y).backward()
            self.optimizer.step()

    def test_iter(self, loader):
        self.model.eval()
        losses = []
        with torch.no_grad():
            for x, y in loader:
                losses.append(nn.functional.cross_entropy(self.model(x), y).item())
        return np.mean(losses)

    def train(self, epochs, train_loader, test_loader=None):
        best_loss = np.inf
        for epoch in range(epochs):
            self.train_iter(train_loader)
            if test_loader is not None:
                test_loss = self.test_iter(test_loader)
                if best_loss > test_loss:
                    best_loss = test_loss
                    torch.save(self.model.state_dict(), "best.pt")
'''

USES_IT = '''import torchvision
from torch import nn
from torch.utils.data import DataLoader

from trainer import Trainer

train_set = torchvision.datasets.CIFAR10("data", train=True, download=True)
test_set = torchvision.datasets.CIFAR10("data", train=False, download=True)
Trainer(nn.Linear(4, 10)).train(10, DataLoader(train_set), DataLoader(test_set))
'''


def test_tr519_uncalled_library_trainer_is_low(tmp_path):
    # a collection of utility modules with no package metadata: nothing imports trainer.py
    root = write(tmp_path, {"trainer.py": LIB_TRAINER, "layers/__init__.py": "", "layers/mish.py": "import torch\n"})
    assert [f.confidence for f in found(root, ("TR519",))] == ["low"]


def test_tr519_library_trainer_handed_the_test_split_is_not_low(tmp_path):
    root = write(tmp_path, {"trainer.py": LIB_TRAINER, "run.py": USES_IT})
    got = found(root, ("TR519",))
    assert got and all(f.confidence != "low" for f in got)


# --- TR517: a DataParallel branch the script itself rules out (`cfg.gpu_start, cfg.gpu_finish = 0, 0`
# at the top, then `if (cfg.gpu_finish - cfg.gpu_start) >= 1: model = DataParallel(model)`; judged false
# in blind test 119): the saves hold no `module.` keys; a configuration left as read keeps the finding --

FORCED = '''import argparse

import torch
import yaml
from addict import Dict
from torch import nn

parser = argparse.ArgumentParser()
parser.add_argument("config")
args = parser.parse_args()
cfg = Dict(yaml.safe_load(open(args.config)))
{force}
gpus = list(range(cfg.gpu_start, cfg.gpu_finish + 1))
model = nn.Linear(4, 4).cuda()
if (cfg.gpu_finish - cfg.gpu_start) >= 1:
    model = nn.DataParallel(model, device_ids=gpus)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(3):
    optimizer.zero_grad()
    model(torch.randn(2, 4).cuda()).sum().backward()
    optimizer.step()
torch.save(model.state_dict(), "weights/model_head.pth")
'''

DEMO = '''import torch
from torch import nn

model_head = nn.Linear(4, 4)
model_head.load_state_dict(torch.load("weights/model_head.pth"))
'''


def test_tr517_parallel_branch_the_script_forces_off_is_silent(tmp_path):
    root = write(tmp_path, {"train.py": FORCED.format(force="cfg.gpu_start, cfg.gpu_finish = 0, 0"), "demo.py": DEMO})
    assert found(root, ("TR517",)) == []


def test_tr517_parallel_branch_left_to_the_configuration_is_reported(tmp_path):
    root = write(tmp_path, {"train.py": FORCED.format(force=""), "demo.py": DEMO})
    assert [f.code for f in found(root, ("TR517",))] == ["TR517"]


@pytest.mark.parametrize("text, expected", [
    ("a, b = 0, 0\nif (b - a) >= 1:\n    pass\n", False),
    ("cfg.x = 2\nif cfg.x > 1 and True:\n    pass\n", True),
    ("a = 0\na = 3\nif a >= 1:\n    pass\n", None),                      # stored twice
    ("cfg.x = 0\ncfg = load()\nif cfg.x >= 1:\n    pass\n", None),      # the object is rebound in between
    ("a = 0\ndef f():\n    global a\n    a = 5\nif a >= 1:\n    pass\n", None),  # stored in a function too
    ("if a >= 1:\n    pass\na = 0\n", None),                             # stored after the test
    ("a = 'x'\nif a - 1:\n    pass\n", None),                            # arithmetic on a string: unknown
])
def test_fixed_test_folds_only_what_the_script_fixes(text, expected):
    import ast

    from torchreview.engine.flow import Flow
    from torchreview.engine.semantic import SemanticModel

    model = SemanticModel(ast.parse(text))
    test = next(n for n in ast.walk(model.tree) if isinstance(n, ast.If)).test
    assert Flow(model).fixed_test(test) is expected


# --- the mode switches: `model.train(mode=False)` is `model.eval()` (an assignment notebook switching
# its MLP with the keyword before each `torch.no_grad()` evaluation; TR207 judged false in blind test 120)

MODE_KEYWORD = '''import torch
from torch import nn
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

''' + DROPOUT_NET + '''

train_loader = DataLoader(datasets.MNIST("data", train=True, transform=transforms.ToTensor()), batch_size=64)
test_loader = DataLoader(datasets.MNIST("data", train=False, transform=transforms.ToTensor()), batch_size=64)
model = Net()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(3):
    model.train(mode=True)
    for x, y in train_loader:
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(x.view(x.size(0), -1)), y).backward()
        optimizer.step()
    {switch}
    with torch.no_grad():
        for x, y in test_loader:
            print(nn.functional.cross_entropy(model(x.view(x.size(0), -1)), y).item())
'''


@pytest.mark.parametrize("switch, expected", [("model.train(mode=False)", []), ("model.eval()", []),
                                              ("pass", ["TR207"])])
def test_train_mode_keyword_false_is_eval(tmp_path, switch, expected):
    root = write(tmp_path, {"train.py": MODE_KEYWORD.replace("{switch}", switch)})
    assert [f.code for f in found(root, ("TR207",))] == expected


@pytest.mark.parametrize("text, expected", [
    ("m.eval()", "eval"), ("m.train()", "train"), ("m.train(False)", "eval"), ("m.train(mode=False)", "eval"),
    ("m.train(mode=True)", "train"), ("m.train(1)", "train"), ("m.train(flag)", None), ("clf.train(X, y)", None),
    ("m.train(epochs=3)", None), ("m.eval(x)", None),
])
def test_mode_switched_to_reads_the_signature(text, expected):
    import ast

    from torchreview.engine.semantic_common import mode_switched_to

    assert mode_switched_to(ast.parse(text).body[0].value) == expected


# --- TR519: a loader unpacked from a builder call that names its split (`testloader, _ =
# get_iterator(path, 128, mode="val")`, read inside `test_acc()`; the ImageNet validation folder, judged
# noise in blind test 120) is the validation split; `mode="test"` keeps the finding ---------------------

UNPACKED = '''import torch
from torch import nn
from torchvision.datasets import ImageFolder


def get_iterator(path, batch_size, mode):
    ds = ImageFolder(path + "/" + mode)
    return torch.utils.data.DataLoader(ds, batch_size=batch_size, shuffle=mode == "train"), len(ds)


def train_epoch():
    net.train()
    for x, y in trainloader:
        optimizer.zero_grad()
        nn.functional.cross_entropy(net(x), y).backward()
        optimizer.step()


def test_acc():
    net.eval()
    correct = total = 0
    with torch.no_grad():
        for x, y in testloader:
            correct += (net(x).argmax(1) == y).sum().item()
            total += y.numel()
    return correct / total


net = nn.Linear(4, 10)
optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
trainloader, size = get_iterator("data", 128, mode="train")
testloader, _ = get_iterator("data", 128, mode="{mode}")
best_acc = 0
for epoch in range(10):
    train_epoch()
    acc = test_acc()
    if acc > best_acc:
        torch.save(net.state_dict(), "best.pt")
        best_acc = acc
'''


@pytest.mark.parametrize("mode, expected", [("val", []), ("test", ["TR519"])])
def test_tr519_unpacked_loader_takes_the_split_its_builder_is_asked_for(tmp_path, mode, expected):
    root = write(tmp_path, {"train_imagenet.py": UNPACKED.replace("{mode}", mode)})
    assert [f.code for f in found(root, ("TR519",))] == expected


# --- TR519: `best_acc = 0` at the top of the evaluating function (its `global` commented out): every call
# improves on 0 and saves, nothing is chosen (judged a misread in blind test 120); a best kept across the
# epoch loop of the same function still chooses ------------------------------------------------------

RESET = '''import torch
from torch import nn
from torchvision import datasets


def test(net, testloader):
    best_acc = 0
    # global best_acc
    net.eval()
    correct = total = 0
    with torch.no_grad():
        for x, y in testloader:
            correct += (net(x).argmax(1) == y).sum().item()
            total += y.numel()
    acc = correct / total
    if acc > best_acc:
        torch.save(net.state_dict(), "ckpt.pt")
        best_acc = acc
    return acc, best_acc


def main():
    net = nn.Linear(4, 10)
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
    trainloader = torch.utils.data.DataLoader(datasets.CIFAR10("data", train=True))
    testloader = torch.utils.data.DataLoader(datasets.CIFAR10("data", train=False))
    for epoch in range(10):
        net.train()
        for x, y in trainloader:
            optimizer.zero_grad()
            nn.functional.cross_entropy(net(x), y).backward()
            optimizer.step()
        acc, best_acc = test(net, testloader)
'''

# the same evaluation body inside an epoch loop of the comparing function (indented one level more)
_BODY_START, _BODY_END = RESET.index("    net.eval()"), RESET.index("    return acc, best_acc")
ACROSS = RESET[:_BODY_START].replace("    # global best_acc\n", "") + "    for epoch in range(10):\n" + "".join(
    "    " + line + "\n" for line in RESET[_BODY_START:_BODY_END].splitlines()) + RESET[_BODY_END:]


@pytest.mark.parametrize("text, expected", [(RESET, []), (ACROSS, ["TR519"])])
def test_tr519_best_reset_on_every_call_chooses_nothing(tmp_path, text, expected):
    root = write(tmp_path, {"train_cifar.py": text})
    assert [f.code for f in found(root, ("TR519",))] == expected


# --- TR519: an evaluation over freshly generated data counted by a test-named number (`for _ in
# range(num_test_graphs): data = generate_random_graph_data()`; judged false in blind test 120) reads no
# test split; `range(len(test_set))` indexes the test data and keeps the finding -------------------------

GENERATED = '''import torch
from torch import nn


def make_example():
    x = torch.randn(8, 4)
    return x, x.sum(1, keepdim=True)


def evaluate(model, num_test_graphs=100, test_set=None):
    model.eval()
    total = 0.0
    with torch.no_grad():
        for i in {loop}:
            x, y = {example}
            total += nn.functional.mse_loss(model(x), y).item()
    return total


def main(test_set):
    model = nn.Linear(4, 1)
    optimizer = torch.optim.Adam(model.parameters())
    best = float("inf")
    for epoch in range(50):
        model.train()
        x, y = make_example()
        optimizer.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
        loss = evaluate(model, 100, test_set)
        if loss < best:
            best = loss
            torch.save(model.state_dict(), "best.pt")
'''


@pytest.mark.parametrize("loop, example, expected", [
    ("range(num_test_graphs)", "make_example()", []),
    ("range(len(test_set))", "test_set[i]", ["TR519"]),
])
def test_tr519_a_count_is_no_split(tmp_path, loop, example, expected):
    root = write(tmp_path, {"train.py": GENERATED.replace("{loop}", loop).replace("{example}", example)})
    assert [f.code for f in found(root, ("TR519",))] == expected


def test_a_graveyard_folder_is_retired(tmp_path):
    # `graveyard/makemore.py`, an abandoned copy kept in a folder named for it (blind test 120)
    from torchreview.engine.discovery import retired_folder

    (tmp_path / "pyproject.toml").write_text("")
    assert retired_folder(str(tmp_path / "graveyard" / "makemore.py"), str(tmp_path)) == "graveyard"
    assert retired_folder(str(tmp_path / "graphs" / "makemore.py"), str(tmp_path)) is None


# --- TR517: a trainer that wraps the model it is handed (`self.model = DDP(model)`) and saves
# `self.model.module.state_dict()`, handed a model the script wrapped in DDP already: the saved keys keep
# one `module.` and fit the DDP model the script loads them into (judged false twice in blind test 120);
# handed the plain model, the save is unwrapped and the load into the DDP model is reported -------------

DOUBLE = '''import os

import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


class Trainer:
    def __init__(self, model, optimizer, gpu_id, folder_save):
        self.gpu_id = gpu_id
        self.model = model.to(gpu_id)
        self.folder_save = folder_save
        self.model = DDP(model, device_ids=[gpu_id])
        self.optimizer = optimizer

    def _save_checkpoint(self, epoch, name="checkpoint.pt"):
        ckp = self.model.module.state_dict()
        PATH = os.path.join(self.folder_save, name)
        torch.save(ckp, PATH)

    def train(self, epochs):
        for epoch in range(epochs):
            self.optimizer.zero_grad()
            self.model(torch.randn(2, 4)).sum().backward()
            self.optimizer.step()
            self._save_checkpoint(epoch)


def main(rank, folder_save):
    model = nn.Linear(4, 4).to(rank)
    {wrap}
    PATH = os.path.join(folder_save, "checkpoint.pt")
    if os.path.exists(PATH):
        {loaded}.load_state_dict(torch.load(PATH))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    trainer = Trainer({handed}, optimizer, rank, folder_save)
    trainer.train(10)
'''


@pytest.mark.parametrize("wrap, loaded, handed, expected", [
    ("model = DDP(model, device_ids=[rank])", "model", "model", []),
    ("ddp_model = DDP(model, device_ids=[rank])", "ddp_model", "model", ["TR517"]),
])
def test_tr517_a_trainer_wrapping_a_model_handed_in_wrapped(tmp_path, wrap, loaded, handed, expected):
    text = DOUBLE.replace("{wrap}", wrap).replace("{loaded}", loaded).replace("{handed}", handed)
    root = write(tmp_path, {"main_train.py": text})
    assert [f.code for f in found(root, ("TR517",))] == expected


# --- TR519: a checkpoint callback monitoring "Test/f1", a key no code of the project logs (its
# `self.log("Test/f1", f1)` commented out) while the module logs "Eval/f1": the callback never finds its
# key and chooses nothing (LREBench, judged false in blind test 120); logged, the key counts again -------

LIT_MODULE = '''import torch
import pytorch_lightning as pl


class Model(pl.LightningModule):
    def __init__(self, net):
        super().__init__()
        self.net = net

    def validation_step(self, batch, batch_idx):
        x, y = batch
        f1 = (self.net(x).argmax(-1) == y).float().mean()
        self.log("Eval/f1", f1)

    def test_step(self, batch, batch_idx):
        x, y = batch
        f1 = (self.net(x).argmax(-1) == y).float().mean()
        {test_log}
'''

LIT_MAIN = '''import pytorch_lightning as pl
from pytorch_lightning.callbacks import ModelCheckpoint

from lit_models import Model
from data import DataModule

model = Model(make_net())
dm = DataModule()
checkpoint = ModelCheckpoint(monitor="Test/f1", mode="max")
trainer = pl.Trainer(max_epochs=5, callbacks=[checkpoint])
trainer.fit(model, datamodule=dm)
trainer.test(model, datamodule=dm)
'''


@pytest.mark.parametrize("test_log, expected", [('# self.log("Test/f1", f1)', []),
                                                ('self.log("Test/f1", f1)', ["TR519"]),
                                                ('self.log(f"{self.stage}/f1", f1)', ["TR519"])])
def test_tr519_a_monitored_key_nothing_logs_chooses_nothing(tmp_path, test_log, expected):
    root = write(tmp_path, {"lit_models.py": LIT_MODULE.replace("{test_log}", test_log), "main.py": LIT_MAIN,
                            "data.py": "class DataModule:\n    pass\n"})
    assert [f.code for f in found(root, ("TR519",))] == expected


# --- TR107: a test's marker value written as words and a counting run (`secret =
# "sk-super-secret-value-12345"`, checking that key values never reach a report; judged false in blind
# test 121) is no key; a generated-looking key, and a password made of words and digits, stay reported --

@pytest.mark.parametrize("line, expected", [
    ('secret = "sk-super-secret-value-12345"', []),
    ('api_key = "sk-do-not-log-this-value-123"', []),
    ('secret = "sk-Zk3a9Q2mX7pL4vB8nR1tY6wE0uI5oPq"', ["TR107"]),
    ('db_password = "super-secret-value-12345"', ["TR107"]),
])
def test_tr107_a_written_phrase_with_a_counting_run_is_no_key(tmp_path, line, expected):
    text = f"import os\n\n\ndef test_report_hides_keys():\n    {line}\n    assert os.environ is not None\n"
    root = write(tmp_path, {"tests/test_doctor.py": text, "app.py": "import torch\n"})
    assert [f.code for f in found(root, ("TR107",))] == expected


# --- TR514: `data.require_grad = False` on a batch moved to the device (`data = data.to(device)`) of a
# loader handed in by another module's helper: data never requires grad, the typo changes nothing (judged
# noise x3 in blind test 121) -> low advice; the same typo freezing a model's parameters stays a defect --

BATCH_TYPO = '''import torch
from torch import nn


def train_epoch(net, train_data_loader, optimizer, device):
    net.train()
    {freeze}
    for batch_idx, (data, labels) in enumerate(train_data_loader):
        data = data.to(device)
        data.require_grad = False
        optimizer.zero_grad()
        nn.functional.cross_entropy(net(data), labels.to(device)).backward()
        optimizer.step()
'''


@pytest.mark.parametrize("freeze, expected", [
    ("pass", [(10, "low")]),
    ("for p in net.backbone.parameters():\n        p.require_grad = False", [(8, "high"), (11, "low")]),
])
def test_tr514_typo_on_a_loader_batch_is_advice(tmp_path, freeze, expected):
    root = write(tmp_path, {"train.py": BATCH_TYPO.replace("{freeze}", freeze)})
    assert [(f.line, f.confidence) for f in found(root, ("TR514",))] == expected


# --- TR518: the pytorch-cifar template's resume of `./checkpoint/ckpt.pth` when its save was commented out
# and the script now writes `ckpt_{net}_{p}.pth` files (judged noise in blind test 121): it reads a leftover
# file, low; with the save still writing that file the resume keeps its confidence -----------------------

TEMPLATE = '''import argparse

import torch
from torch import nn, optim

parser = argparse.ArgumentParser()
parser.add_argument("--resume", "-r", action="store_true")
parser.add_argument("--net", default="resnet18")
args = parser.parse_args()
net = nn.Linear(4, 10).cuda()
start_epoch = 0
if args.resume:
    checkpoint = torch.load("./checkpoint/ckpt.pth")
    net.load_state_dict(checkpoint["net"])
    start_epoch = checkpoint["epoch"]
optimizer = optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
scheduler = optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=200)
for epoch in range(start_epoch, start_epoch + 200):
    optimizer.zero_grad()
    nn.functional.cross_entropy(net(torch.randn(8, 4).cuda()), torch.zeros(8, dtype=torch.long).cuda()).backward()
    optimizer.step()
    scheduler.step()
    state = {"net": net.state_dict(), "epoch": epoch}
    {save}
'''


@pytest.mark.parametrize("save, low", [
    ('# torch.save(state, "./checkpoint/ckpt.pth")\n    torch.save(state, "./checkpoint/ckpt_{}.pth".format(args.net))', True),
    ('torch.save(state, "./checkpoint/ckpt.pth")', False),
])
def test_tr518_resume_of_a_file_no_save_writes_is_low(tmp_path, save, low):
    root = write(tmp_path, {"main.py": TEMPLATE.replace("{save}", save)})
    got = found(root, ("TR518",))
    assert got and all((f.confidence == "low") is low for f in got)


# --- TR402: a step helper with `if apex: scaler.scale(loss).backward() else: loss.backward()` inlined
# twice in one iteration (SAM's first and second step): each call's own backward precedes its step and
# zero_grad (judged false in blind test 122); a helper that zeroes between its backward and step is
# still reported --------------------------------------------------------------------------------------

SAM_STEPS = '''import torch
from torch import nn
from torch.cuda.amp import GradScaler, autocast


class CFG:
    apex = True
    gradient_accumulation_steps = 1
    max_grad_norm = 1000


def forward_step(step, model, criterion, images, labels, optimizer, scaler):
    if CFG.apex:
        with autocast():
            loss = criterion(model(images), labels)
    else:
        loss = criterion(model(images), labels)
    if CFG.apex:
        scaler.scale(loss).backward()
    else:
        loss.backward()
    if (step + 1) % CFG.gradient_accumulation_steps == 0:
        if CFG.apex:
            scaler.step(optimizer)
            scaler.update()
        else:
            optimizer.step()
        optimizer.zero_grad()
    return optimizer, scaler


def train_fn(train_loader, model, criterion, optimizer, device, sam):
    model.train()
    scaler = GradScaler()
    for step, (images, labels) in enumerate(train_loader):
        images = images.to(device)
        if sam:
            optimizer, scaler = forward_step(step, model, criterion, images, labels, optimizer, scaler)
            optimizer, scaler = forward_step(step, model, criterion, images, labels, optimizer, scaler)
        else:
            optimizer, scaler = forward_step(step, model, criterion, images, labels, optimizer, scaler)
'''


@pytest.mark.parametrize("broken, expected", [(False, []), (True, ["TR402"])])
def test_tr402_a_helper_inlined_twice_keeps_each_calls_order(tmp_path, broken, expected):
    text = SAM_STEPS
    if broken:  # zero_grad moved between the backward and the step
        text = text.replace("    if (step + 1) % CFG.gradient_accumulation_steps == 0:\n",
                            "    optimizer.zero_grad()\n    if (step + 1) % CFG.gradient_accumulation_steps == 0:\n")
        text = text.replace("            optimizer.step()\n        optimizer.zero_grad()\n", "            optimizer.step()\n")
    root = write(tmp_path, {"train.py": text})
    assert sorted({f.code for f in found(root, ("TR402",))}) == expected


# --- vendored copies: a `recbole/` package copied into a project folder (`Recbole/recbole/trainer/...`,
# the upstream trainer's clip before `unscale_`; TR416 judged noise in blind test 123 as unmodified library
# code) is a vendored copy: medium; the same trainer in the project's own package stays high ------------

CLIP_TRAINER = '''import torch
from torch.cuda.amp import GradScaler, autocast


class Trainer:
    def __init__(self, model, optimizer):
        self.model, self.optimizer, self.scaler = model, optimizer, GradScaler()

    def fit(self, loader):
        for x, y in loader:
            self.optimizer.zero_grad()
            with autocast():
                loss = torch.nn.functional.mse_loss(self.model(x), y)
            self.scaler.scale(loss).backward()
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
            self.scaler.step(self.optimizer)
            self.scaler.update()
'''


@pytest.mark.parametrize("package, confidence", [("Recbole/recbole", "medium"), ("Recbole/recsys", "high")])
def test_a_recbole_copy_is_vendored(tmp_path, package, confidence):
    root = write(tmp_path, {f"{package}/__init__.py": "", f"{package}/trainer/__init__.py": "",
                            f"{package}/trainer/trainer.py": CLIP_TRAINER, "Recbole/run.py": "import torch\n"})
    assert [f.confidence for f in found(root, ("TR416",))] == [confidence]


# --- TR511: a plain tensor attribute read only as one element turned into a Python number at once
# (`torch.linspace(0, self.integration_time[-1].item(), n, device=x.device)`; judged false in blind test
# 123) never meets a tensor of another device; computed with as a tensor it is still reported ------------

ODE = '''import torch
from torch import nn


class ODEBlock(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.func = nn.Linear(4, 4)
        self.integration_time = torch.tensor([0.0, cfg["integration_time"]], dtype=torch.float32)

    def forward(self, x):
        {use}
        return self.func(x) * t_span.mean()
'''


@pytest.mark.parametrize("use, expected", [
    ("t_span = torch.linspace(0, self.integration_time[-1].item(), 10, device=x.device)", []),
    ("t_span = self.integration_time * 2", ["TR511"]),
])
def test_tr511_an_element_read_as_a_number_is_silent(tmp_path, use, expected):
    root = write(tmp_path, {"model.py": ODE.replace("{use}", use)})
    assert [f.code for f in found(root, ("TR511",))] == expected


# --- TR207: a web service's global model put in eval mode by its load endpoint (`global MODEL; MODEL =
# Net(); ...; MODEL.eval()`) and called by the predict endpoint (judged false in blind test 123); a load
# endpoint without `.eval()`, or a `MODEL.train()` elsewhere, keeps the finding --------------------------

SERVICE = '''import torch
from torch import nn
from fastapi import FastAPI

app = FastAPI()
MODEL = None
MODEL_LOADED = False


''' + DROPOUT_NET + '''

@app.post("/model/load")
def load_model(path: str):
    global MODEL, MODEL_LOADED
    MODEL = Net()
    MODEL.load_state_dict(torch.load(path, weights_only=True))
    MODEL.eval()
    MODEL_LOADED = True
    return {"ok": True}


@app.post("/predict")
def predict(values: list[float]):
    if not MODEL_LOADED:
        return {"error": "load a model first"}
    with torch.no_grad():
        out = MODEL(torch.tensor([values]))
    return {"pred": out.argmax(1).item()}
'''


@pytest.mark.parametrize("change, expected", [
    (None, []),
    (("    MODEL.eval()\n", ""), ["TR207"]),
    (("    MODEL_LOADED = True\n", "    MODEL_LOADED = True\n    if path.endswith('.ft'):\n        MODEL.train()\n"),
     ["TR207"]),
])
def test_tr207_a_global_model_its_load_endpoint_puts_in_eval(tmp_path, change, expected):
    text = SERVICE if change is None else SERVICE.replace(*change)
    root = write(tmp_path, {"api/main.py": text})
    assert [f.code for f in found(root, ("TR207",))] == expected
