"""TR507 on real code (issue 11, dev sweep): where a kept graph is a defect and
where it is advice hidden by default, and the fix text it suggests."""

from __future__ import annotations

from torchreview.engine.runner import Settings, run_review

EPOCH_LOOP = """\
import torch
from torch import nn

model = nn.Linear(4, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
criterion = nn.CrossEntropyLoss()
train_loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(8, 4)), batch_size=2)
history = []
for epoch in range(3):
    epoch_loss = 0
    for data, label in train_loader:
        loss = criterion(model(data), label)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        epoch_loss += loss / len(train_loader)
        history.append(loss)
print(history[-1])
"""


def _review(tmp_path, text, **kw):
    (tmp_path / "train.py").write_text(text)
    return run_review([str(tmp_path / "train.py")], Settings(rule_codes=("TR507",), jobs=1, **kw)).findings


def test_an_epoch_sum_freed_by_backward_is_hidden_advice_and_a_run_long_list_a_defect(tmp_path):
    found = {(f.line, f.kind) for f in _review(tmp_path, EPOCH_LOOP)}
    assert found == {(16, "advice"), (17, "defect")}
    assert [f.line for f in _review(tmp_path, EPOCH_LOOP, advice_codes=())] == [17]


def test_the_fix_puts_item_on_the_tensor_operand_not_on_the_int(tmp_path):
    (finding,) = [f for f in _review(tmp_path, EPOCH_LOOP) if f.line == 16]
    assert "`loss.item() / len(train_loader)`" in finding.message
    assert "len(train_loader).item()" not in finding.message


def test_item_placement_for_other_shapes(tmp_path):
    text = EPOCH_LOOP.replace("        epoch_loss += loss / len(train_loader)\n",
                              "        epoch_loss += 0.5 * loss\n        total = total + (loss + loss) / 2\n")
    text = text.replace("history = []\n", "history = []\ntotal = 0\n")
    messages = {f.line: f.message for f in _review(tmp_path, text)}
    assert "`0.5 * loss.item()`" in messages[17]
    assert "`(loss + loss).item() / 2`" in messages[18]
