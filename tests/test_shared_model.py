"""One parse and one model per file per process: a file whose call sites another
file's review already modelled (engine/module_modes.py ``unit_for``) is reviewed
with that tree and model (``take_unit``), and the findings are the same."""

from __future__ import annotations

import os

from model_snippets import write
from torchreview.catalog import all_rules
from torchreview.engine import module_modes as MM
from torchreview.engine.runner import Settings, run_review

_PROJECT = {
    # reviewed first: its caller in main.py is modelled for TR207's call paths
    "helpers.py": """
        import torch

        def generate(model, batch):
            with torch.no_grad():
                return model(batch)
        """,
    "main.py": """
        import torch
        from torch import nn
        from helpers import generate

        net = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))
        print(generate(net, torch.zeros(1, 4)))
        out = torch.load("ckpt.pt")
        """,
}


def _review(root) -> list[tuple]:
    settings = Settings(rule_codes=tuple(r.code for r in all_rules()), jobs=1)
    report = run_review([str(root)], settings)
    return [(f.path, f.line, f.code, f.message) for f in report.findings]


def test_unit_is_taken_once_for_the_same_text(tmp_path):
    write(tmp_path, {"a.py": "import torch\nx = torch.zeros(1)\n"})
    path = str(tmp_path / "a.py")
    MM._units.clear()
    unit = MM.unit_for(path)
    assert unit is not None and unit.text == "import torch\nx = torch.zeros(1)\n"
    assert MM.take_unit(path, "import torch\nx = torch.ones(1)\n") is None  # another text: not this tree
    assert MM.take_unit(path, unit.text) is unit
    assert MM.take_unit(path, unit.text) is None  # it left the memo: the review releases it


def test_review_reuses_the_callers_model_with_the_same_findings(tmp_path, monkeypatch):
    write(tmp_path, _PROJECT)
    taken: list[str] = []
    real_take = MM.take_unit

    def spy(path, text):
        unit = real_take(path, text)
        if unit is not None:
            taken.append(os.path.basename(path))
        return unit

    monkeypatch.setattr(MM, "take_unit", spy)
    shared = _review(tmp_path)
    assert taken == ["main.py"]  # modelled for helpers.py's call paths, then reviewed with that model
    monkeypatch.setattr(MM, "take_unit", lambda path, text: None)
    MM._units.clear()
    assert _review(tmp_path) == shared
    assert any(code == "TR207" for _, _, code, _ in shared)  # the call path was followed


def test_mentioning_in_a_batch_is_the_scan_and_sees_the_next_batch(tmp_path):
    from torchreview.engine import call_paths as CP
    from torchreview.engine import project_index as P

    write(tmp_path, {"helpers.py": "def generate(m):\n    return m\n",
                     "main.py": "from helpers import generate\n", "other.py": "x = 1\n"})
    root = str(tmp_path)

    def names(found):
        return sorted(os.path.basename(f) for f in found)

    scan = names(CP.mentioning(root, b"helpers"))  # outside a batch: a scan of every file
    with P.files_held():
        assert names(CP.mentioning(root, b"helpers")) == scan == ["main.py"]  # a module name: indexed
        assert names(CP.mentioning(root, b"generate")) == ["helpers.py", "main.py"]  # any other word
        assert CP.mentioning(root, b"nowhere") == []
    (tmp_path / "other.py").write_text("import helpers\n")
    (tmp_path / "extra.py").write_text("from helpers import generate\n")
    with P.files_held():  # the next batch sees the files as they are now
        assert names(CP.mentioning(root, b"helpers")) == ["extra.py", "main.py", "other.py"]
        assert names(CP.mentioning(root, b"generate")) == ["extra.py", "helpers.py", "main.py"]
