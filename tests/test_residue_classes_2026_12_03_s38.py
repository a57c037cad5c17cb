"""Residue classes of the thirty-eighth session (findings judged noise or false in blind tests):
each positive or near-miss below failed on the code before its fix."""
from __future__ import annotations

import pytest

from residue_helpers import found, write


# --- TR511: a plain tensor attribute the module's own code mixes with values it moved to the CPU
# (`self.u[idx] - g.detach().cpu()`, also through a local name) is kept on the host on purpose: the
# author handles its device by hand (a ranking loss's (users x items) moving-average estimators,
# judged false in blind test 147); mixed with the batch as it comes, it is still reported ------------

ESTIMATORS = '''import torch
from torch import nn


class NDCGLoss(nn.Module):
    def __init__(self, n_users, n_items):
        super().__init__()
        self.gamma = 0.9
        self.u = torch.zeros(n_users, n_items)
        self.v = torch.zeros(n_users, n_items)

    def forward(self, predictions, users, items):
        device = predictions.device
        g = predictions.pow(2).mean(dim=-1)
        {mix}
        self.v[users, items] = (1 - self.gamma) * self.v[users, items] + self.gamma * grad_u
        g_u = self.u[users, items].reshape(-1).to(device)
        return (g_u * g).mean()
'''


@pytest.mark.parametrize("mix, expected", [
    ("grad_u = self.u[users, items] - g.clone().detach().reshape(-1).cpu()", []),
    ("grad_u = self.u[users, items] - g.detach().to('cpu')", []),
    ("grad_u = self.u[users, items] - g.detach()", ["TR511"]),
])
def test_tr511_an_attribute_mixed_with_values_moved_to_the_host_is_kept_there(tmp_path, mix, expected):
    root = write(tmp_path, {"loss.py": ESTIMATORS.replace("{mix}", mix)})
    assert [(f.code, f.line) for f in found(root, ("TR511",))] == [(c, 10) for c in expected]


# --- TR519: a training loop's `test_loader` parameter that its only caller (another file) unpacks from
# a project helper of a third file, which builds that loader over the LibriSpeech `dev-clean` split
# (judged false in blind test 147: the checkpoint is picked on the dev split; only names say test);
# built over `test-clean` it is still reported ---------------------------------------------------------

SPEECH_DATA = '''import os
import torch
from torch.utils.data import DataLoader, Dataset


class Mels(Dataset):
    def __init__(self, folder):
        self.files = sorted(os.listdir(folder))

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        return torch.load(os.path.join("{split}_mels", self.files[i]), weights_only=True)


def get_train_test_loaders():
    train_dataset = Mels(os.path.join("data", "train-clean-100_mels"))
    {held}_dataset = Mels(os.path.join("data", "{split}_mels"))
    train_loader = DataLoader(train_dataset, batch_size=32, shuffle=True)
    test_loader = DataLoader({held}_dataset, batch_size=32)
    return train_loader, test_loader
'''

SPEECH_LOOP = '''import os
import torch


def training_loop(model, train_loader, test_loader, device, epochs):
    optimizer = torch.optim.Adam(model.parameters())
    best_test_cosine = -1.0
    for epoch in range(epochs):
        model.train()
        for mel, emb in train_loader:
            optimizer.zero_grad()
            loss = 1 - torch.cosine_similarity(model(mel.to(device)), emb.to(device)).mean()
            loss.backward()
            optimizer.step()
        model.eval()
        total, n = 0.0, 0
        with torch.no_grad():
            for mel, emb in test_loader:
                total += torch.cosine_similarity(model(mel.to(device)), emb.to(device)).mean().item()
                n += 1
        dev_cosine = total / max(n, 1)
        if dev_cosine > best_test_cosine:
            best_test_cosine = dev_cosine
            torch.save(model.state_dict(), os.path.join("checkpoints", "best.pt"))
    return best_test_cosine
'''

SPEECH_MAIN = '''import torch
from torch import nn

from extract_embedding import get_train_test_loaders
from training_loop import training_loop


def main():
    train_loader, test_loader = get_train_test_loaders()
    model = nn.Sequential(nn.Flatten(), nn.Linear(128, 64))
    best = training_loop(model, train_loader, test_loader, "cpu", 10)
    print("best", best)


if __name__ == "__main__":
    main()
'''


@pytest.mark.parametrize("split, held, expected", [
    ("dev-clean", "dev", []),
    ("test-clean", "test", ["TR519"]),
])
def test_tr519_a_parameter_its_caller_unpacks_from_a_dev_split_builder_is_validation(tmp_path, split, held, expected):
    root = write(tmp_path, {"extract_embedding.py": SPEECH_DATA.replace("{split}", split).replace("{held}", held),
                            "training_loop.py": SPEECH_LOOP, "train_lightweight.py": SPEECH_MAIN})
    assert [f.code for f in found(root, ("TR519",))] == expected


# --- TR402: the leftover step after a gradient-accumulation loop (`if len(loader) % k != 0:`) that
# clears the gradients first loses only the last partial window -- the loop steps on its own -- so
# "the model is never updated" was wrong (a DLCV homework's tail block, judged false in blind test
# 147): reported as that, medium; a tail that steps before clearing stays silent, and a reset between
# backward and step inside the loop keeps the high finding ------------------------------------------

ACCUMULATE = '''import torch


def train(model, loader, optimizer, loss_fn, accu_step=4):
    model.train()
    optimizer.zero_grad()
    for idx, (x, y) in enumerate(loader):
        loss = loss_fn(model(x), y) / accu_step
        loss.backward()
        {inner}
    if len(loader) % accu_step != 0:
        {tail}


def main(model, loader, optimizer, loss_fn):
    for epoch in range(10):
        train(model, loader, optimizer, loss_fn)
'''

STEP_THEN_CLEAR = "if (idx + 1) % accu_step == 0:\n            optimizer.step()\n            optimizer.zero_grad()"
CLEAR_THEN_STEP_IN_LOOP = "optimizer.zero_grad()\n        optimizer.step()"


@pytest.mark.parametrize("inner, tail, expected", [
    (STEP_THEN_CLEAR, "optimizer.zero_grad()\n        optimizer.step()", [("TR402", 14, "medium", "leftover")]),
    (STEP_THEN_CLEAR, "optimizer.step()\n        optimizer.zero_grad()", []),
    (CLEAR_THEN_STEP_IN_LOOP, "optimizer.step()\n        optimizer.zero_grad()", [("TR402", 10, "high", "never updated")]),
])
def test_tr402_a_leftover_step_cleared_first_loses_the_last_window(tmp_path, inner, tail, expected):
    root = write(tmp_path, {"train.py": ACCUMULATE.replace("{inner}", inner).replace("{tail}", tail)})
    got = found(root, ("TR402",))
    assert [(f.code, f.line, f.severity.name.lower()) for f in got] == [e[:3] for e in expected]
    assert all(e[3] in f.message for f, e in zip(got, expected))


# --- TR519: a training function's `test_loader` parameter that the calling script builds over an
# option whose default, declared in the project's own `parser.py` (`args = parser.arg_parse()`), names
# the validation folder (`--test_data` defaulting to `p1_data/val_50/`: the course's hidden test set is
# graded elsewhere; judged false in blind test 145); a default naming the test folder keeps it -------

HW_PARSER = '''import argparse


def arg_parse():
    parser = argparse.ArgumentParser(description="hw1")
    parser.add_argument("--train_data", default="../hw1_data/p1_data/train_50/", type=str)
    parser.add_argument("--test_data", default="../hw1_data/p1_data/{held}/", type=str)
    parser.add_argument("--epoch", default=20, type=int)
    return parser.parse_args()
'''

HW_MAIN = '''import os

import torch
from torch.utils.data import DataLoader, Dataset

import parser
from train import train


class ImageFolderSet(Dataset):
    def __init__(self, root, mode):
        self.files = sorted(os.listdir(root))
        self.mode = mode

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        return torch.load(self.files[i], weights_only=True)


if __name__ == "__main__":
    args = parser.arg_parse()
    train_dataset = ImageFolderSet(root=args.train_data, mode="train")
    test_dataset = ImageFolderSet(root=args.test_data, mode="test")
    trainset_loader = DataLoader(train_dataset, batch_size=32, shuffle=True)
    testset_loader = DataLoader(test_dataset, batch_size=64)
    model = torch.nn.Linear(8, 50)
    train(model, args.epoch, trainset_loader, testset_loader)
'''

HW_TRAIN = '''import torch


def test(model, test_loader):
    correct = 0
    with torch.no_grad():
        for data, target in test_loader:
            correct += (model(data).argmax(1) == target).sum().item()
    return correct / len(test_loader.dataset)


def train(model, epoch, train_loader, test_loader):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    criterion = torch.nn.CrossEntropyLoss()
    best_acc = 0.0
    for ep in range(epoch):
        model.train()
        for data, target in train_loader:
            optimizer.zero_grad()
            criterion(model(data), target).backward()
            optimizer.step()
        acc = test(model, test_loader)
        if acc > best_acc:
            best_acc = acc
            torch.save(model.state_dict(), "model_best.pth")
'''


@pytest.mark.parametrize("held, expected", [("val_50", []), ("test", ["TR519"])])
def test_tr519_a_caller_loader_over_an_option_defaulting_to_validation_elsewhere(tmp_path, held, expected):
    root = write(tmp_path, {"parser.py": HW_PARSER.replace("{held}", held), "main.py": HW_MAIN,
                            "train.py": HW_TRAIN})
    assert [f.code for f in found(root, ("TR519",))] == expected


# --- TR519: the test pool cut in two, the head named validation and the tail kept as the test set
# (`val_idxs = test_idxs[:n // 2]`, `test_idxs = test_idxs[n // 2:]`): selection on the validation
# half never sees the test half (an explainer's node split, judged false in blind test 145); a head of
# the test pool taken for selection while the whole pool stays the test set is still the test split ----

NODE_SPLIT = '''import numpy as np
import torch


def main(dataset, model, criterion, labels, train_idx):
    optimizer = torch.optim.Adam(model.parameters())
    num_nodes = labels.shape[0]
    train_idxs = np.array(train_idx)
    test_idxs = np.array([i for i in range(num_nodes) if i not in train_idxs])

    def eval_model():
        with torch.no_grad():
            losses = []
            for node_idx in val_idxs:
                data = dataset[node_idx]
                losses += [criterion(model(data["x"]), data["y"]).item()]
        return np.mean(losses)

    num_test = len(test_idxs)
    {cut}

    best_loss = float("inf")
    for epoch in range(100):
        model.train()
        for node_idx in train_idxs:
            data = dataset[node_idx]
            optimizer.zero_grad()
            criterion(model(data["x"]), data["y"]).backward()
            optimizer.step()
        val_loss = eval_model()
        if val_loss < best_loss:
            best_loss = val_loss
            torch.save(model.state_dict(), "model.ckpt")
'''


@pytest.mark.parametrize("cut, expected", [
    ("val_idxs = test_idxs[:num_test // 2]\n    test_idxs = test_idxs[num_test // 2:]", []),
    ("val_idxs = test_idxs[num_test // 2:]\n    test_idxs = test_idxs[:num_test // 2]", []),
    ("val_idxs = test_idxs[:num_test // 2]", ["TR519"]),
])
def test_tr519_the_validation_half_of_a_test_pool_cut_in_two(tmp_path, cut, expected):
    root = write(tmp_path, {"explain.py": NODE_SPLIT.replace("{cut}", cut)})
    assert [f.code for f in found(root, ("TR519",))] == expected
