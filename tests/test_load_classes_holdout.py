"""Issue 11 classes from the judged holdout sweep (torch.load / pickle.load):
repeats of one load on the branches of one function fold into one finding;
loads of a file the project writes itself on a torch without `weights_only`
stay silent; pickle reads of the project's own dumps and of bytes gathered
from the ranks of one job are not untrusted input."""

from __future__ import annotations

from pathlib import Path

from torchreview.engine.runner import Settings, run_review

FIXTURES = Path(__file__).parent / "fixtures" / "security"


def _top(path: Path, codes: tuple[str, ...], **kw):
    report = run_review([str(path)], Settings(rule_codes=codes, jobs=1, advice_codes=codes, **kw))
    return sorted(((f.path.rsplit("/", 1)[-1], f.line, len(f.related)) for f in report.findings))


def test_one_load_on_two_branches_of_one_function_is_one_finding():
    found = _top(FIXTURES / "TR102_branches_of_one_function.py", ("TR102",))
    # get_detector: 11 (+13); Recognizer.load: 20 (+21); other(): 25 -- each branch pair folds
    # first, then the one message of the file is one comment (engine/merge.py)
    assert found == [("TR102_branches_of_one_function.py", 11, 4)]


def test_tr101_repeats_on_branches_fold_too(tmp_path):
    (tmp_path / "run.py").write_text(
        "import sys\nimport torch\n\n\ndef main(gpu):\n    if gpu:\n        m = torch.load(sys.argv[1])\n"
        "    else:\n        m = torch.load(sys.argv[1])\n    return m\n\n\ndef b():\n    return torch.load(sys.argv[1])\n")
    # the branch repeat folds first; the same load in another function of the file is a
    # further related place of the one comment (one message per file, engine/merge.py)
    assert _top(tmp_path, ("TR101",)) == [("run.py", 7, 2)]


def _findings(path: Path, codes: tuple[str, ...], **kw):
    """Every place found, merged findings flattened (each place keeps its own message and kind)."""
    findings = run_review([str(path)], Settings(rule_codes=codes, jobs=1, advice_codes=codes, **kw)).findings
    return [p for f in findings for p in (f.parts or (f,))]


def test_old_torch_own_file_silent_other_file_advice():
    found = _findings(FIXTURES / "TR102_own_file_old_torch", ("TR102",), target_torch=(1, 6))
    assert [(f.line, f.kind) for f in found] == [(43, "advice")]
    # hidden by default: no advice asked for
    default = run_review([str(FIXTURES / "TR102_own_file_old_torch")],
                         Settings(rule_codes=("TR102",), jobs=1, target_torch=(1, 6), advice_codes=())).findings
    assert default == []


def test_own_file_message_cites_the_loading_functions_save_and_says_what_it_holds():
    # on a torch with the keyword the own-file loads are low findings that cite their own save
    found = {f.line: f for f in _findings(FIXTURES / "TR102_own_file_old_torch", ("TR102",), target_torch=(2, 4))}
    assert "data_utils.py:18 " in found[15].message and "data_utils.py:29 " in found[26].message
    assert "own data file" in found[26].message and "tensors and plain values" in found[26].message
    assert "own checkpoint" in found[38].message and "state dicts and plain values" in found[38].message


def test_own_dumps_silent_gathered_bytes_low_advice_socket_bytes_a_defect():
    found = {f.line: f for f in _findings(FIXTURES / "TR103_own_dump_and_gathered_bytes.py", ("TR103",))}
    assert sorted(found) == [26, 53, 69, 75]
    assert (found[69].kind, found[69].severity.label) == ("advice", "low") and "all_gather" in found[69].message
    assert found[75].kind == "defect" and found[26].kind == "defect"


OWN_FORMAT = Path(__file__).parent / "fixtures" / "project" / "TR101_own_format_holds_options"


def test_own_format_with_options_is_advice_without_an_edit_and_thirdparty_shards_stay_defects():
    codes = ("TR101", "TR102")
    found = {(f.path.rsplit("/", 1)[-1], f.line): f for f in _findings(OWN_FORMAT, codes, target_torch=(2, 2))}
    # loads of the project's own format (an options Namespace under "opt", handed down as
    # `self.model_opt`), linked by the keys they read -- several, or one of the format's own
    for key in (("checkpoints.py", 28), ("average.py", 10), ("dump_vocab.py", 10)):
        f = found[key]
        assert (f.kind, f.severity.label, f.fix.applicability) == ("advice", "medium", "display"), key
        assert "checkpoints.py:23 " in f.message and "argparse.Namespace" in f.message
        assert "vars(self.model_opt)" in f.fix.title and "torch >= 2.4" in f.fix.title
    # a whole object of unknown type written by the project: no edit, advice
    pipeline = found[("checkpoints.py", 39)]
    assert (pipeline.kind, pipeline.fix.applicability) == ("advice", "display") and "`pipeline`" in pipeline.message
    # near-misses that keep the defect and the edit: a state written under a state-dict name,
    # released weights read by the generic "model" key, third-party shards (one finding)
    for key in (("checkpoints.py", 47), ("score_released.py", 7), ("import_shards.py", 13)):
        assert (found[key].kind, found[key].fix.applicability) == ("defect", "unsafe"), key
    merged = {(f.path.rsplit("/", 1)[-1], f.line): f for f in run_review(
        [str(OWN_FORMAT)], Settings(rule_codes=codes, jobs=1, advice_codes=codes, target_torch=(2, 2))).findings}
    assert [r.line for r in merged[("import_shards.py", 13)].related] == [17]
    assert ("import_shards.py", 17) not in merged
    # default settings (advice hidden): only the defects are shown
    shown = run_review([str(OWN_FORMAT)], Settings(rule_codes=codes, jobs=1, target_torch=(2, 2), advice_codes=()))
    assert sorted((f.path.rsplit("/", 1)[-1], f.line) for f in shown.findings) == [
        ("checkpoints.py", 47), ("import_shards.py", 13), ("score_released.py", 7)]
