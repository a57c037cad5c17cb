"""Classes of findings judged in the blind tests of the twenty-second session (2026-12-01), each
with a near-miss that stays as it was."""
from __future__ import annotations

from residue_helpers import found as _found, write as _write

from test_residue_classes_2026_11_30_s21 import CLIPS
from torchreview.engine.runner import Settings, run_review


# --- merge: one rule saying the same thing about other names in another function of the same file --
# (measured over every judged first pass up to blind test 83: of 204 later findings of one rule and
# one message shape in one Python file, 79 were judged repeats of the first and 18 worth a comment of
# their own; one comment listing the places says what those 18 say)

def _second_function(text: str) -> str:
    return text.replace("def train(", "def finetune(").replace("unet", "backbone").replace(
        "import torch\nfrom torch import nn\n", "")


def test_merge_the_same_habit_in_two_functions_of_one_file_is_one_finding(tmp_path):
    root = _write(tmp_path, {"pyproject.toml": "", "train.py": CLIPS + "\n\n" + _second_function(CLIPS)})
    findings = run_review([str(root)], Settings(rule_codes=("TR416",), jobs=1, min_confidence="low")).findings
    assert len(findings) == 1
    lead = findings[0]
    assert lead.line == 11 and len(lead.parts) == 4 and "same in 3 more places" in lead.message


def test_merge_the_same_habit_in_another_file_stays_its_own(tmp_path):
    # another script (not a copy: its own names and layout) is reviewed on its own
    other = _second_function(CLIPS).replace("for x, y in loader:", "for step, (x, y) in enumerate(loader):")
    root = _write(tmp_path, {"pyproject.toml": "", "train.py": CLIPS,
                             "finetune.py": "import torch\nfrom torch import nn\n\n\n" + other})
    findings = _found(root, ("TR416",))
    leads = run_review([str(root)], Settings(rule_codes=("TR416",), jobs=1, min_confidence="low")).findings
    assert sorted({f.path.rsplit("/", 1)[-1] for f in leads}) == ["finetune.py", "train.py"]
    assert len(findings) == 4


def test_merge_keeps_another_message_shape_in_the_same_file_apart(tmp_path):
    # TR416 and a different claim of the same rule family stay apart: here two rules on one file
    text = CLIPS + "\n\n" + _second_function(CLIPS) + '''

def evaluate(model, x):
    return model(x).detach().numpy()
'''
    root = _write(tmp_path, {"pyproject.toml": "", "train.py": text})
    findings = run_review([str(root)], Settings(rule_codes=("TR416", "TR502"), jobs=1,
                                                min_confidence="low")).findings
    assert sorted(f.code for f in findings) == ["TR416"]  # (detached: no TR502) one TR416 for the file
