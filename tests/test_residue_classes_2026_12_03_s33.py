"""Residue classes of the thirty-third session (findings judged noise or false in blind tests 121 and
later): each positive or near-miss below failed on the code before its fix."""
from __future__ import annotations

import pytest

from residue_helpers import found, write


# --- TR519: a fit's validation slice named `X_test`, bound in an if/else whose other arm is the whole
# array the training part also takes (judged false in blind test 121) ---------------------------------

FIT = '''import torch
from torch import nn


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 3)

    def forward(self, x):
        return self.fc(x)

    def loss_on(self, X, Y):
        with torch.no_grad():
            return nn.functional.cross_entropy(self(X), Y).item()

    def fit(self, X, Y, epochs=10, validation_split=0.2):
        optimizer = torch.optim.Adam(self.parameters())
        if validation_split:
            cut = int(len(X) * (1 - validation_split))
            X_train, Y_train = X[:cut], Y[:cut]
            X_test, Y_test = X[cut:], Y[cut:]
        else:
            X_train, Y_train = X.copy(), Y.copy()
            {other}
        best = float("inf")
        for epoch in range(epochs):
            optimizer.zero_grad()
            nn.functional.cross_entropy(self(X_train), Y_train).backward()
            optimizer.step()
            val_loss = self.loss_on(X_test, Y_test)
            if val_loss < best:
                best = val_loss
                torch.save(self.state_dict(), "best.pt")
'''


@pytest.mark.parametrize("other, expected", [
    ("X_test, Y_test = X.copy(), Y.copy()", 0),
    ("X_test, Y_test = X, Y", 0),
    # the other arm brings in a test set of its own: the name is evidence again
    ("X_test = torch.load('x_test.pt')\n            Y_test = torch.load('y_test.pt')", 1),
])
def test_tr519_validation_tail_or_whole_array_is_no_test_split(tmp_path, other, expected):
    root = write(tmp_path, {"pyproject.toml": "", "model.py": FIT.format(other=other)})
    assert len(found(root, ("TR519",))) == expected


# --- TR104: a model id that is a parameter defaulting to a publisher's official model (`def
# __init__(self, model_name="facebook/dinov3-...")`) in a package that ships (judged noise in blind
# test 120) ---------------------------------------------------------------------------------------

DENSE = '''import torch
from transformers import AutoModel


class DenseFeatures(torch.nn.Module):
    def __init__(self, model_name="{default}"):
        super().__init__()
        self.backbone = AutoModel.from_pretrained(model_name, trust_remote_code=True)

    def forward(self, x):
        return self.backbone(pixel_values=x).last_hidden_state
'''


@pytest.mark.parametrize("default, confidence", [
    ("facebook/dinov3-vitl16-pretrain-sat493m", "medium"),
    # a default of someone else's repository: whatever code it holds runs
    ("someuser/dino-custom", "high"),
])
def test_tr104_parameter_defaulting_to_an_official_model(tmp_path, default, confidence):
    root = write(tmp_path, {"pyproject.toml": '[project]\nname = "dense"\nversion = "0.1"\n',
                            "src/dense/__init__.py": "",
                            "src/dense/extract.py": DENSE.format(default=default)})
    assert [f.confidence for f in found(root, ("TR104",))] == [confidence]


# --- TR207: a model's output returned to the one caller, which only prints its shape (a model file's
# `create_and_test_vit`; judged noise in blind test 122) ------------------------------------------------

PROBE = '''import torch
from torch import nn


class Net(nn.Module):
    def __init__(self, classes, rate):
        super().__init__()
        self.drop = nn.Dropout(rate)
        self.fc = nn.Linear(16, classes)

    def forward(self, x):
        return self.fc(self.drop(x))


def create_and_test_net(classes, rate):
    model = Net(classes, rate){load}
    dummy_input = torch.randn(8, 16)
    output = model(dummy_input)
    return output


output = create_and_test_net(10, 0.1)
print({shown})
'''


@pytest.mark.parametrize("load, shown, expected", [
    ("", "output.shape", 0),
    # trained weights: its outputs are predictions
    ("\n    model.load_state_dict(torch.load('net.pt'))", "output.shape", 1),
    # the caller reads the prediction itself
    ("", "output.argmax(1)", 1),
])
def test_tr207_output_returned_to_a_caller_that_measures_it(tmp_path, load, shown, expected):
    root = write(tmp_path, {"pyproject.toml": "", "model_builder.py": PROBE.format(load=load, shown=shown)})
    assert len(found(root, ("TR207",))) == expected
