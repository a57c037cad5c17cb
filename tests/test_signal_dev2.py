"""Classes judged noise or false in the second development sweep (issue 11):
what each rule reports at default settings (advice hidden) and what it folds."""

from __future__ import annotations

from pathlib import Path

from torchreview.engine.runner import Settings, run_review

FIXTURES = Path(__file__).parent / "fixtures"


def _findings(path, codes, *, default=True):
    settings = Settings(rule_codes=codes, jobs=1, advice_codes=() if default else None)
    return run_review([str(path)], settings).findings


def test_object_collectives_and_test_pickles_are_hidden_advice_folded_per_function():
    folder = FIXTURES / "security" / "TR103_tests_and_collectives"
    everything = _findings(folder, ("TR103",), default=False)
    where = {(Path(f.path).name, f.line): (f.kind, f.severity.label, sorted(r.line for r in f.related))
             for f in everything}
    assert where == {
        ("comm.py", 11): ("advice", "low", [13, 20]),  # if/else branches of one call, the same in the file

        ("test_pickling.py", 34): ("advice", "medium", [36]),  # two loads in one test: one finding
        ("test_pickling.py", 42): ("defect", "high", []),  # a download stays a defect in a test
    }
    shown = [(Path(f.path).name, f.line) for f in _findings(folder, ("TR103",))]
    assert shown == [("test_pickling.py", 42)]


def test_round_trips_of_data_the_function_just_wrote_are_silent(tmp_path):
    (tmp_path / "copying.py").write_text(
        "import io, pickle, dill\n"
        "def clone(obj, path):\n"
        "    a = dill.loads(dill.dumps(obj))\n"
        "    buf = io.BytesIO()\n"
        "    pickle.dump(obj, buf)\n"
        "    buf.seek(0)\n"
        "    b = pickle.load(buf)\n"
        "    with open(path, 'wb') as f:\n"
        "        pickle.dump(obj, f)\n"
        "    with open(path, 'rb') as f:\n"
        "        c = pickle.load(f)\n"
        "    return a, b, c, pickle.loads(obj)\n")
    found = [(f.line, f.kind) for f in _findings(tmp_path, ("TR103",), default=False)]
    assert found == [(12, "defect")]


def _device_tokens(tmp_path, text):
    from torchreview.engine.runner import review_path

    path = tmp_path / "m.py"
    path.write_text("import torch\n" + text)
    return set(review_path(str(path), str(path), Settings(rule_codes=("TR403",), jobs=1)).facts.devices)


def test_device_tokens_prove_a_single_default_gpu_only_without_computed_devices(tmp_path):
    single = [
        'device = torch.device("cuda:0" if ok else "cpu")\nx = torch.zeros(1).to(device)\n',
        'x = torch.zeros(1).cuda()\ny = x.to(x.device)\nz = x.cuda(0)\n',
        'def f(x, device):\n    self.device = device\n    return x.to(self.device, non_blocking=True)\n',
        'parser.add_argument("--no-cuda", action="store_true")\nx = torch.zeros(1, device="cuda")\n',
    ]
    for text in single:
        assert _device_tokens(tmp_path, text) <= {"cpu", "cuda", "cuda()"}, text
    assert _device_tokens(tmp_path, "if m.is_cuda:\n    f = f.cuda()\n") == {"cuda()"}  # proves nothing
    several = [
        'x = torch.zeros(1).cuda(args.gpu)\n',
        'device = torch.device(f"cuda:{rank}")\n',
        'x = torch.zeros(1).to(args.device)\n',
        'x = torch.zeros(1).to(cfg["device"])\n',
        'device = opt.device\n',
        'rank = int(os.environ["LOCAL_RANK"])\n',
        'parser.add_argument("--gpu_ids", type=str, default="0")\n',
        'net = torch.nn.DataParallel(net)\n',
        'torch.cuda.set_device(0)\n',
        'x = torch.zeros(1).cuda(True)\n',
        'x = torch.zeros(1, device="cuda:1")\n',
        'device = torch.device("cuda", idx)\n',
    ]
    for text in several:
        assert _device_tokens(tmp_path, text) - {"cpu", "cuda", "cuda()"}, text


def test_project_identity_comes_from_packaging_metadata_and_badges_only(tmp_path):
    from torchreview.engine.project_identity import own_github_repos, release_repo, trusted_release

    (tmp_path / "setup.cfg").write_text("[metadata]\nname = a\nproject_urls =\n"
                                        "    Source = https://github.com/Org-A/RepoA\n")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "a"\n[project.urls]\n'
                                             'Repository = "https://github.com/org-b/repo-b.git"\n')
    (tmp_path / "README.md").write_text(
        "[![s](https://img.shields.io/github/stars/org-c/RepoC?style=social)](x)\n"
        "see https://github.com/other/Mentioned for details\n")
    assert own_github_repos(str(tmp_path)) == {"org-a/repoa", "org-b/repo-b", "org-c/repoc"}
    assert release_repo("https://github.com/Org-A/RepoA/releases/download/v1/w.pth") == "org-a/repoa"
    assert release_repo("https://github.com/Org-A/RepoA/archive/v1.zip") is None
    root = str(tmp_path)
    assert trusted_release("https://github.com/org-c/RepoC/releases/download/v1/w.pth", root, ())
    assert trusted_release("https://github.com/other/Mentioned/releases/download/v1/w.pth", root, ()) is None
    assert trusted_release("https://github.com/x/Real-ESRGAN/releases/download/v1/w.pth", root,
                           ("realesrgan.utils",))
    assert trusted_release("https://example.org/RepoA/releases/download/v1/w.pth", root, ()) is None
