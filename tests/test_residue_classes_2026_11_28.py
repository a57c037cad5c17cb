"""Classes of findings judged noise/false on the 2026-11-28 development sweeps,
checked at default settings: what the default report hides and what it keeps."""
from __future__ import annotations

from pathlib import Path

from torchreview.engine.runner import Settings, run_review

FIXTURES = Path(__file__).parent / "fixtures"


def _default(path: Path, codes: tuple[str, ...]):
    """The default report's gate: advice hidden, only high confidence shown."""
    settings = Settings(rule_codes=codes, jobs=1, advice_codes=(), min_confidence="high")
    return run_review([str(path)], settings).findings


def test_an_explicit_opt_out_in_scripts_is_hidden_and_a_download_stays():
    """MONAI tutorials: weights_only=False on the operator's own checkpoint in scripts and
    notebooks (8 findings judged noise); a Hub download is still a high defect."""
    path = FIXTURES / "project" / "TR101_opt_out_in_scripts"
    shown = _default(path, ("TR101", "TR102"))
    assert [(Path(f.path).name, f.line, f.code) for f in shown] == [("infer.py", 16, "TR101")]


def test_an_opt_out_against_the_projects_own_practice_stays_high():
    """open_clip: the project loads weights-only in its package, a script opts out: high,
    and the message names the place that does it right."""
    path = FIXTURES / "project" / "TR101_opt_out_in_scripts_adopted"
    shown = _default(path, ("TR101", "TR102"))
    assert [(Path(f.path).name, f.line, f.code) for f in shown] == [("evaluate.py", 12, "TR101"),
                                                                    ("evaluate.py", 13, "TR102")]
    assert all("pkg/checkpoint.py:6" in f.message for f in shown)


CONFIG = """lang_encoder = dict(
    type="AutoModelForCausalLM",
    name_or_path="baichuan-inc/baichuan-7B",
    trust_remote_code=True)
"""


def test_a_config_dict_naming_its_model_is_a_fixed_repository(tmp_path):
    """mmpretrain configs/minigpt4: `dict(type=..., name_or_path="org/model",
    trust_remote_code=True)` in a config file (judged noise: the model needs its own
    code); the same dict in a module of an installable package stays high."""
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "caption.py").write_text(CONFIG)
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "pkg"\n')
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "defaults.py").write_text(CONFIG.replace("baichuan-inc/baichuan-7B", "org/other-7b"))
    everything = run_review([str(tmp_path)], Settings(rule_codes=("TR104",), jobs=1)).findings
    got = {(Path(f.path).parent.name, f.line): f.confidence for f in everything}
    assert got == {("configs", 4): "medium", ("pkg", 4): "high"}


def test_a_fixed_hub_repo_trusted_in_a_script_is_medium(tmp_path):
    """MONAI compute_fid_2-5d_ct.py: `torch.hub.load("org/models", ..., trust_repo=True)` in an
    optional evaluation script (judged noise); a repository from the command line stays high."""
    (tmp_path / "fid.py").write_text(
        "import sys\nimport torch\n"
        "net = torch.hub.load('Warvito/radimagenet-models', 'radimagenet_resnet50', trust_repo=True)\n"
        "other = torch.hub.load(sys.argv[1], 'model', trust_repo=True)\n")
    everything = run_review([str(tmp_path)], Settings(rule_codes=("TR104",), jobs=1)).findings
    assert {f.line: f.confidence for f in everything} == {3: "medium", 4: "high"}
