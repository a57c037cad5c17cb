"""The checkpoint save/load index (engine/checkpoint_index.py, facts_checkpoints.py)
and what is built on it: linking, caching, target torch, project-aware fixes."""

from __future__ import annotations

import ast
import textwrap

from torchreview.cli import main
from torchreview.engine.checkpoint_index import CheckpointIndex, link_saves
from torchreview.engine.context import FileContext
from torchreview.engine.facts import FileFacts
from torchreview.engine.facts_checkpoints import checkpoint_facts
from torchreview.engine.runner import Settings, run_review
from torchreview.engine.source import SourceFile


def index_of(code: str, path: str = "m.py") -> CheckpointIndex:
    text = textwrap.dedent(code)
    ctx = FileContext(SourceFile(path=path, text=text), ast.parse(text), target_torch=None, has_torch=True)
    return checkpoint_facts(ctx)


SAVES = """
    import argparse, dataclasses, torch
    from torch import nn
    from torch.nn.parallel import DistributedDataParallel as DDP

    @dataclasses.dataclass
    class RunConfig:
        lr: float = 0.1

    def train(opt):
        args = argparse.ArgumentParser().parse_args()
        cfg = RunConfig()
        model = nn.Linear(2, 2)
        model = DDP(torch.compile(model))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        torch.save({"model": model.state_dict(), "inner": model.module.state_dict(),
                    "optimizer": optimizer.state_dict(), "args": args, "opt": opt, "cfg": cfg,
                    "plain": vars(args), "epoch": 3}, f"{args.out}/ckpt_{3:03d}.pt")
        torch.save(model, os.path.join(args.out, "full.pt"))
"""


def test_save_entries_kinds_prefixes_and_path_pattern():
    index = index_of(SAVES)
    first, second = index.saves
    kinds = {e.key: (e.kind, e.prefix, e.certain) for e in first.entries}
    assert kinds["model"] == ("model_state", "module._orig_mod.", True)
    assert kinds["inner"] == ("model_state", "_orig_mod.", True)
    assert kinds["optimizer"][0] == "optimizer_state"
    assert kinds["args"] == ("namespace", None, True)
    assert kinds["opt"] == ("namespace", None, False)  # a parameter, known by its name only
    assert kinds["cfg"][0] == "config" and first.entries[5].type_name == "RunConfig"
    assert kinds["plain"][0] == kinds["epoch"][0] == "plain"
    assert first.complete and first.path_pattern == "*/ckpt_*.pt"
    assert first.holds("optimizer") and first.holds("counter") and not first.holds("scheduler")
    assert second.entries[0].kind == "module" and second.path_pattern == "*/full.pt"
    assert index.parses_args


LOADS = """
    import torch
    from torch.serialization import safe_globals

    def resume(args, model, optimizer):
        ckpt = torch.load(args.resume, map_location="cpu")
        model.load_state_dict(ckpt["model"], strict=False)
        optimizer.load_state_dict(ckpt["optimizer"])
        start = ckpt.get("epoch", 0) + 1
        if "scaler" in ckpt:
            pass
        return start

    def finetune(args, model):
        with safe_globals([Config]):
            sd = torch.load(args.pretrained, weights_only=True)
        model.load_state_dict(sd)

    def guarded(path):
        try:
            return torch.load(path, weights_only=True, **{})
        except Exception:
            return None

    def helper(path, model):
        state = torch.load(path, weights_only=False)
        restore(model, state)
"""


def test_load_facts():
    resume, finetune, guarded, helper = index_of(LOADS).loads
    assert resume.weights_only == "missing" and resume.purpose == "resume" and not resume.escapes
    assert resume.keys_read == ("model", "optimizer", "epoch", "scaler")
    assert [(s.key, s.target, s.strict) for s in resume.state_loads] == [
        ("model", "model", "false"), ("optimizer", "optimizer", "true")]
    assert resume.restores("optimizer") and resume.restores("counter") and resume.restores("scaler")
    assert not resume.restores("scheduler")
    assert finetune.purpose == "finetune" and finetune.safe_globals == ("Config",)
    assert finetune.state_loads[0].key == ""
    assert guarded.guarded and guarded.weights_only == "true"
    assert helper.escapes and helper.weights_only == "false"


def test_index_round_trips_and_damaged_text_is_empty():
    index = index_of(SAVES)
    assert CheckpointIndex.parse(index.dumps()) == index
    assert CheckpointIndex.parse("{not json") == CheckpointIndex()
    assert CheckpointIndex.parse('{"saves": [{"anchor": 3}]}') == CheckpointIndex()
    assert CheckpointIndex().dumps() == ""


def _facts(path: str, code: str) -> FileFacts:
    return FileFacts(path=path, checkpoint_json=index_of(code, path).dumps())


def test_linking_by_path_keys_and_never_to_an_unrelated_literal():
    train = _facts("train.py", """
        import torch
        def fit(model, opt, out):
            torch.save({"model": model.state_dict(), "opt": opt.state_dict()}, out + "/last.pt")
            torch.save({"weights": model.state_dict(), "meta": 1}, "export/final.pt")
    """)
    evaluate = _facts("eval.py", """
        import torch
        a = torch.load("runs/last.pt")
        b = torch.load(path)
        w, m = b["weights"], b["meta"]
        c = torch.load("hub/resnet.pth")
        d = torch.load(args.resume)
        e = torch.load(path)
        f = torch.load(path)["weights"]
    """)
    files = [train, evaluate]
    by_path, by_keys, unrelated, project, unknown, one_key = (link_saves(files, ld)
                                                              for ld in evaluate.checkpoints.loads)
    assert by_path.how == "path" and by_path.saves[0][1].path_pattern == "*/last.pt"
    assert by_keys.how == "keys" and by_keys.saves[0][1].path_pattern == "export/final.pt"
    assert unrelated is None
    assert project.how == "project" and len(project.saves) == 2  # a resume of the project's checkpoints
    # on a weak link every save must agree
    assert project.agree(lambda s: any(e.key == "opt" for e in s.entries)) == []
    # an eval load of an unknown file by one key, in a file that writes nothing: not linked
    assert unknown is None and one_key is None


def test_a_loaded_object_used_as_a_module_links_to_whole_module_saves():
    train = _facts("train.py", """
        import torch
        from torch import nn
        model = nn.Linear(2, 2).to("cpu")
        torch.save(model, out_path)
    """)
    demo = _facts("demo.py", """
        import torch
        net = torch.load(args.weights)
        net.eval()
    """)
    (load,) = demo.checkpoints.loads
    assert load.used_as_module
    link = link_saves([train, demo], load)
    assert link.how == "module" and link.saves[0][1].entries[0].type_name == "Linear"


PROJECT = {
    "train.py": """
        import argparse
        import torch
        from torch import nn

        args = argparse.ArgumentParser().parse_args()
        model = nn.Linear(2, 2)
        torch.save({"model": model.state_dict(), "args": args}, "runs/last.pt")
    """,
    "evaluate.py": """
        import torch
        implicit = torch.load("runs/last.pt", map_location="cpu")
        explicit = torch.load("runs/last.pt", map_location="cpu", weights_only=True)
    """,
}


def _write(tmp_path, files):
    for name, code in files.items():
        (tmp_path / name).write_text(textwrap.dedent(code).lstrip())


def test_tr520_follows_the_target_torch(tmp_path):
    _write(tmp_path, PROJECT)
    new = run_review([str(tmp_path)], Settings(rule_codes=("TR520",), jobs=1))
    old = run_review([str(tmp_path)], Settings(rule_codes=("TR520",), jobs=1, target_torch=(2, 5)))
    assert sorted(p.line for f in new.findings for p in (f.parts or (f,))) == [2, 3]  # one file: one finding
    assert [f.line for f in old.findings] == [3]  # only the explicit weights_only=True
    assert "vars(args)" in old.findings[0].message and "train.py:7" in old.findings[0].message
    assert old.findings[0].fix is not None and old.findings[0].fix.applicability == "display"


def test_tr520_registered_class_is_quiet(tmp_path):
    files = dict(PROJECT)
    files["evaluate.py"] = ("import argparse\nimport torch\n"
                            "torch.serialization.add_safe_globals([argparse.Namespace])\n"
                            "x = torch.load('runs/last.pt', weights_only=True)\n")
    _write(tmp_path, files)
    assert not run_review([str(tmp_path)], Settings(rule_codes=("TR520",), jobs=1)).findings


def test_cached_facts_keep_the_index(tmp_path, monkeypatch, capsys):
    _write(tmp_path, PROJECT)
    (tmp_path / "pyproject.toml").write_text("[tool.torchreview]\n")
    monkeypatch.chdir(tmp_path)
    runs = []
    for _ in range(2):
        main(["check", ".", "--select", "TR520", "--format", "json"])
        runs.append(capsys.readouterr().out.count('"TR520"'))
    assert (tmp_path / ".torchreview_cache").is_dir()
    assert runs[0] == runs[1] == 2


def test_weights_only_fix_is_dropped_for_checkpoints_the_project_pickles(tmp_path, monkeypatch, capsys):
    files = dict(PROJECT)
    files["evaluate.py"] = ("import torch\n"
                            "a = torch.load('runs/last.pt', map_location='cpu')\n"
                            "b = torch.load('downloads/resnet.pth', map_location='cpu')\n")
    _write(tmp_path, files)
    monkeypatch.chdir(tmp_path)
    report = run_review(["."], Settings(rule_codes=("TR102",), jobs=1))
    fixes = {f.line: f.fix.applicability for f in report.findings if f.path.endswith("evaluate.py")}
    assert fixes == {2: "display", 3: "unsafe"}
    main(["check", ".", "--select", "TR102", "--fix", "--unsafe-fixes", "--no-cache"])
    capsys.readouterr()
    fixed = (tmp_path / "evaluate.py").read_text().splitlines()
    assert fixed[1] == "a = torch.load('runs/last.pt', map_location='cpu')"
    assert fixed[2] == "b = torch.load('downloads/resnet.pth', map_location='cpu', weights_only=True)"


def test_one_finding_and_one_remedy_per_crashing_load(tmp_path):
    """TR520 and the refined TR102 on the same load merge (root cause torch-load); the
    shared save-side remedy is listed once and no weights_only edit survives."""
    _write(tmp_path, PROJECT)
    report = run_review([str(tmp_path)], Settings(rule_codes=("TR102", "TR520"), jobs=1))
    (implicit,) = [f for f in report.findings if f.path.endswith("evaluate.py") and f.line == 2]
    assert implicit.code == "TR520" and "Also TR102" in implicit.message
    assert implicit.fix.applicability == "display" and not implicit.fix.edits
    assert implicit.fix.title.count("vars(args)") == 1


def test_items_used_as_modules_are_recorded():
    (load,) = index_of("""
        import torch
        ckpt = torch.load(p)
        dec = ckpt["decoder"]
        dec.eval()
        ckpt["encoder"].eval()
        n = ckpt["epoch"]
        best = ckpt["best_acc"]
        best = best.to("cuda:0")  # tensors move too: not a module
    """).loads
    assert load.module_keys == ("decoder", "encoder") and not load.used_as_module
    assert load.keys_read == ("decoder", "encoder", "epoch", "best_acc")


def test_tr102_severity_and_fix_follow_what_the_project_saves():
    from pathlib import Path

    folder = Path(__file__).parent / "fixtures" / "project" / "TR102_project_saves_namespace"
    report = run_review([str(folder)], Settings(rule_codes=("TR102",), jobs=1))
    got = {f.line: (f.severity.label, f.fix.applicability if f.fix else None) for f in report.findings}
    assert got == {5: ("medium", "display"),   # Namespace in the checkpoint: no weights_only edit
                   9: ("high", "display"),     # explicit False on a pickled module: points at the save
                   13: ("low", "unsafe"),      # own checkpoint with plain data only: low, edit kept
                   17: ("medium", "unsafe")}   # a file the project does not write: unchanged
    by_line = {f.line: f.message for f in report.findings}
    assert "train.py:16" in by_line[5] and "train.py:18" in by_line[9] and "train.py:19" in by_line[13]


def test_a_link_needs_the_same_file_name_or_the_same_option():
    train = _facts("train.py", """
        import os, torch
        def fit(model, args, model_path):
            torch.save(model.state_dict(), os.path.join(args.out, "weights.pt"))
            torch.save({"model": model.state_dict()}, args.snapshot)
            torch.save({"model": model.state_dict()}, model_path)
    """)
    evaluate = _facts("eval.py", """
        import os, torch
        def run(args, exp_dir):
            model_path = os.path.join(exp_dir, "best.pt")
            a = torch.load(os.path.join(args.out, "full.pt"))
            b = torch.load(args.snapshot)
            c = torch.load(model_path)
            d = torch.load(os.path.join(args.out, "weights.pt"))
    """)
    shared_folder, option, local_name, same_name = (link_saves([train, evaluate], ld)
                                                    for ld in evaluate.checkpoints.loads)
    assert shared_folder is None  # one folder, two file names
    assert option.how == "path" and option.saves[0][1].path_names == ("args.snapshot",)
    assert local_name is None  # `model_path` of train.py is another script's variable
    assert same_name.how == "path" and same_name.saves[0][1].path_pattern == "*/weights.pt"


def test_a_name_alone_does_not_make_a_saved_value_a_module():
    index = index_of("""
        import torch
        from torch import nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        class Net(nn.Module):
            pass

        def build():
            return Net()

        def card(model):
            out = dict(model)
            out["infos"] = {}
            return out

        def export(folder, model):
            torch.save(model, "param.pt")
            net = DDP(Net().to("cuda"))
            torch.save(net, "wrapped.pt")
            torch.save(net.module.cpu(), "unwrapped.pt")
            built = build()
            torch.save(built, "built.pt")
            model = card(torch.load(folder))
            torch.save(model, "card.pt")
    """)
    kinds = {s.path_pattern: (s.entries[0].kind, s.entries[0].type_name) for s in index.saves}
    assert kinds["param.pt"][0] == "unknown"  # a parameter called `model`
    assert kinds["wrapped.pt"] == ("module", "DistributedDataParallel")  # the wrapper is pickled too
    assert kinds["unwrapped.pt"] == ("module", "Net")
    assert kinds["built.pt"][0] == "module"  # a function that returns a module
    assert kinds["card.pt"][0] == "unknown"  # a dict made by a helper, named `model`


def test_a_file_handle_bound_twice_to_one_name_keeps_the_file_name():
    index = index_of("""
        import torch
        net = torch.nn.Linear(2, 2)
        with open("best.pt", "wb") as fh:
            torch.save(net, fh)
        with open("best.pt", "rb") as fh:
            net = torch.load(fh)
    """)
    assert index.saves[0].path_pattern == index.loads[0].path_pattern == "best.pt"
    assert index.saves[0].entries[0].kind == "module"  # rebound by the load only after the save
