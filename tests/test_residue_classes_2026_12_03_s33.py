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
