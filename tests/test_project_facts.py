"""Project facts are typed fields, each filled by one collector (engine/collectors/),
cached by its type (cache_facts.py), documented in docs/WRITING_RULES.md; no
flag strings, keyed anchors or rule codes are left in the engine."""

from __future__ import annotations

import ast
import dataclasses
import json
import re
import typing
from pathlib import Path

import pytest

from model_snippets import ctx_of
from torchreview.cache_facts import FactsError, codec_for, facts_from_json, facts_to_json
from torchreview.engine.anchor import Anchor
from torchreview.engine.collectors import COLLECTORS, collect_facts
from torchreview.engine.collectors.registry import CallNames, collects
from torchreview.engine.facts import BASE_FIELDS, ClassBuild, Download, FileFacts

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "torchreview"
WRITING_RULES = PACKAGE.parent.parent / "docs" / "WRITING_RULES.md"
FIELDS = {f.name: f for f in dataclasses.fields(FileFacts)}
HINTS = typing.get_type_hints(FileFacts)


# --- the shape: typed fields, one collector each --------------------------------------------

def test_every_fact_has_exactly_one_collector():
    collected = set(FIELDS) - set(BASE_FIELDS)
    assert set(COLLECTORS) == collected, (
        f"facts without a collector: {sorted(collected - set(COLLECTORS))}; "
        f"collectors of no fact: {sorted(set(COLLECTORS) - collected)}")


def test_a_second_collector_for_a_fact_is_refused():
    with pytest.raises(ValueError, match="two collectors"):
        collects("tracking")(lambda ctx, calls: True)
    assert COLLECTORS["tracking"].__name__ == "tracking"


def test_facts_are_typed_fields_not_free_form_strings():
    assert not {"flags", "anchors", "counts", "extra"} & set(FIELDS)
    for name, hint in HINTS.items():
        assert typing.get_origin(hint) not in (set, frozenset), f"{name}: a set of strings is a flag bag"
        if typing.get_origin(hint) is dict:
            # a dict keyed by a name must hold positions (or records), never bare flags or counts
            value = typing.get_args(hint)[1]
            assert value not in (bool, int, str), f"{name}: {hint} is a keyed flag/count table"
        codec_for(hint)  # every field can be cached


def test_the_cache_refuses_an_untyped_fact():
    for hint in (set[str], dict[str, typing.Any], list, typing.Any):
        with pytest.raises(TypeError, match="cannot be cached"):
            codec_for(hint)


_OLD_KEYS = re.compile(
    r"""["'](?:train_loader_without_drop_last|download|download_unpickled|seed_truthiness|resume_skip_kept"""
    r"""|state_dict_without_scaler|hparam|counter_class|built_after_resume):"""  # "download:{i}" keys
    r"""|\bany_flag\(|\bfiles_with\(|_CALL_FLAGS|_ATTR_FLAGS|_flags_for\("""  # the flag table and its queries
    r"""|(?<!absl)\.(?:flags|anchors|counts)\b""")  # the free-form members of the old FileFacts


def _old_key_uses(paths, root: Path = PACKAGE) -> list[str]:
    out = []
    for path in paths:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if _OLD_KEYS.search(line):
                out.append(f"{path.relative_to(root)}:{number}: {line.strip()}")
    return out


def _facts_sources() -> list[Path]:
    engine = PACKAGE / "engine"
    return sorted([*engine.glob("facts*.py"), *(engine / "collectors").glob("*.py"), engine / "refine.py",
                   engine / "project_index.py", *PACKAGE.glob("cache*.py"), *(PACKAGE / "rules").rglob("*.py")])


def test_no_flag_string_or_keyed_anchor_facts_remain():
    found = _old_key_uses(_facts_sources())
    assert not found, "flag-string / keyed-anchor facts (use a typed FileFacts field):\n  " + "\n  ".join(found)


def test_the_old_key_scan_can_fail(tmp_path):
    old = tmp_path / "old.py"
    old.write_text('facts.anchors[f"download:{i}"] = a\n'
                   'if project.any_flag("trains"): pass\n'
                   'keys = [k for k in f.anchors if k.startswith("seed_truthiness:")]\n'
                   'facts.flags.add("mixed_precision")\n'
                   'new = facts.downloads\n')
    assert [line.split(":")[1] for line in _old_key_uses([old], tmp_path)] == ["1", "2", "3", "4"]


_RULE_CODE = re.compile(r"\bTR\d{3}\b")


def _rule_codes_in(paths) -> list[str]:
    return [f"{path.relative_to(PACKAGE)}:{number}"
            for path in paths for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
            if _RULE_CODE.search(line)]


def test_no_rule_code_in_the_engine():
    """Facts and the model say what the code does; which rule uses it is the rule's business."""
    paths = sorted([*(PACKAGE / "engine").rglob("*.py"), *PACKAGE.glob("cache*.py")])
    found = _rule_codes_in(paths)
    assert not found, "rule codes named in the engine:\n  " + "\n  ".join(found)
    assert _rule_codes_in([PACKAGE / "rules" / "security" / "tr105_download_without_integrity_check.py"])


def _facts_section() -> str:
    text = WRITING_RULES.read_text(encoding="utf-8")
    section = text[text.index("### Project facts"):]
    return section[:section.index("\n### ", 1)]


def test_every_fact_is_documented():
    documented = {word for code in re.findall(r"`([^`]+)`", _facts_section()) for word in re.findall(r"\w+", code)}
    missing = sorted(set(FIELDS) - documented)
    assert not missing, f"FileFacts fields missing from WRITING_RULES.md 'Project facts': {missing}"


def _project_rule_uses() -> dict[str, set[str]]:
    """``project.<member>`` read by each rule module that defines ``check_project``."""
    out = {}
    for path in sorted((PACKAGE / "rules").rglob("tr*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if not any(isinstance(n, ast.FunctionDef) and n.name == "check_project" for n in ast.walk(tree)):
            continue
        out[path.name] = {f"project.{n.attr}" for n in ast.walk(tree) if isinstance(n, ast.Attribute)
                          and isinstance(n.value, ast.Name) and n.value.id == "project"}
    return out


def test_project_rules_use_the_documented_project_context():
    from torchreview.engine.facts import ProjectContext

    text = WRITING_RULES.read_text(encoding="utf-8")
    uses = _project_rule_uses()
    assert len(uses) >= 10
    undocumented = sorted(f"{rule}: {use}" for rule, used in uses.items() for use in used
                          if f"`{use}" not in text)
    assert not undocumented, "project rules use undocumented ProjectContext members:\n  " + "\n  ".join(undocumented)
    missing = sorted(f"{rule}: {use}" for rule, used in uses.items() for use in used
                     if not hasattr(ProjectContext, use.split(".")[1]) and use.split(".")[1] not in
                     {f.name for f in dataclasses.fields(ProjectContext)})
    assert not missing, missing


# --- the cache: every field written and read back by its type ---------------------------------

A = Anchor("m.py", 3, 5, None, "x = 1")
B = Anchor("m.ipynb", 1, 1, 2, "y")


def _sample(hint, seed: int):
    """A value of the annotated type that differs from the field's default."""
    if hint is bool:
        return True
    if hint is int:
        return 7 + seed
    if hint is str:
        return f"s{seed}"
    if hint is Anchor:
        return B if seed % 2 else A
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, __import__("types").UnionType):
        return _sample(next(a for a in args if a is not type(None)), seed)
    if origin is tuple:
        return (_sample(args[0], seed), _sample(args[0], seed + 1))
    if origin is dict:
        return {"LR": _sample(args[1], seed), "EPOCHS": _sample(args[1], seed + 1)}
    if dataclasses.is_dataclass(hint):
        hints = typing.get_type_hints(hint)
        return hint(*(_sample(hints[f.name], seed + i) for i, f in enumerate(dataclasses.fields(hint))))
    raise AssertionError(hint)


def _full_facts() -> FileFacts:
    values = {name: _sample(HINTS[name], i) for i, name in enumerate(FIELDS) if name != "path"}
    return FileFacts(path="m.py", **values)


def test_every_field_survives_the_cache_round_trip():
    facts = _full_facts()
    assert all(getattr(facts, name) != f.default for name, f in FIELDS.items() if f.default is not dataclasses.MISSING)
    back = facts_from_json(json.loads(json.dumps(facts_to_json(facts))))
    assert back == facts
    assert isinstance(back.downloads[0], Download) and isinstance(back.built_after_resume[0], ClassBuild)
    assert back.hparams["LR"] == facts.hparams["LR"] and isinstance(back.hparams["LR"], Anchor)


def test_collected_facts_survive_the_cache_round_trip():
    facts = collect_facts(ctx_of(TRAIN))
    assert facts.trains and facts.downloads and facts.hparams  # a rich sample
    assert facts_from_json(json.loads(json.dumps(facts_to_json(facts)))) == facts


def _wrong(hint):
    if hint is bool:
        return 1
    if hint in (int, str):
        return True
    return "not a container"


@pytest.mark.parametrize("name", sorted(FIELDS))
def test_a_wrong_typed_field_is_refused(name):
    from torchreview.cache_schema import facts_ok

    doc = json.loads(json.dumps(facts_to_json(_full_facts())))
    assert facts_ok(doc, "m.py")
    doc[name] = _wrong(HINTS[name])
    assert not facts_ok(doc, "m.py")
    with pytest.raises(FactsError):
        facts_from_json(doc)


@pytest.mark.parametrize("damage", [
    lambda d: d.pop("devices"),
    lambda d: d.update(flags=["trains"]),
    lambda d: d.update(training_loop=["m.py", -1, 0, None, "x"]),
    lambda d: d.update(training_loop=["m.py", 1, 0, None]),
    lambda d: d.update(hparams={"LR": ["m.py", 1, 0, "cell", "x"]}),
    lambda d: d.update(downloads=[[["m.py", 1, 0, None, "x"], "u"]]),
    lambda d: d.update(built_after_resume=[["Ema", ["m.py", 1, 0, None, "x"], "extra"]]),
    lambda d: d.update(devices=[["nested"]]),
], ids=["missing", "unknown", "negative-line", "short-anchor", "cell-type", "short-download", "long-record",
        "nested"])
def test_damaged_facts_are_refused(damage):
    doc = json.loads(json.dumps(facts_to_json(_full_facts())))
    damage(doc)
    with pytest.raises(FactsError):
        facts_from_json(doc)


# --- each collector ------------------------------------------------------------------------

def collect(field: str, code: str, path: str = "m.py"):
    ctx = ctx_of(code, path)
    return COLLECTORS[field](ctx, CallNames(ctx))


def lines(value) -> list[int]:
    if value is None:
        return []
    if isinstance(value, Anchor):
        return [value.line]
    if isinstance(value, dict):
        return [a.line for a in value.values()]
    return [getattr(v, "anchor", v).line for v in value]


TRAIN = """\
import torch
from torch import nn
from torch.utils.data import DataLoader
import urllib.request

LR = 1e-3
EPOCHS = 3
UNUSED_LR = 0.5

urllib.request.urlretrieve("https://example.com/data.bin", "data.bin")
model = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4))
opt = torch.optim.SGD(model.parameters(), lr=LR)
loader = DataLoader(dataset, batch_size=8, shuffle=True)
for epoch in range(EPOCHS):
    for x, y in loader:
        opt.zero_grad()
        loss = model(x).sum()
        loss.backward()
        opt.step()
"""


def test_collect_facts_runs_every_collector():
    facts = collect_facts(ctx_of(TRAIN))
    assert facts.path == "m.py" and facts.has_torch and not facts.is_notebook
    assert lines(facts.training_loop) == [15] and lines(facts.epoch_loop) == [14]
    assert facts.builds_batchnorm and not facts.builds_conv_layers
    assert list(facts.hparams) == ["LR", "EPOCHS"]
    assert lines(facts.downloads) == [10] and facts.downloads[0].url == "https://example.com/data.bin"
    assert lines(facts.train_loaders_without_drop_last) == [13]


LR_RESTART = """\
import torch
def train(model, loader, epochs, first_epoch):
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    global_step = 0
    for epoch in range(first_epoch, epochs):
        for x, y in loader:
            for g in opt.param_groups:
                g["lr"] = 3e-4 * min(1.0, global_step / 1000)
            opt.zero_grad()
            model(x).mean().backward()
            opt.step()
            global_step += 1
"""


def test_lr_counter_restart_names_counter_and_start():
    (restart,) = collect("lr_counter_restarts", LR_RESTART.replace("first_epoch, epochs", "args.start[0], epochs"))
    assert (restart.counter, restart.start, restart.anchor.line) == ("global_step", "args.start[0]", 4)


# (field, code, expected): expected is the value, or line numbers for anchors
CASES = [
    ("module_classes", "import torch.nn as nn\nclass B(nn.Module): pass\nclass A(B): pass\nclass C: pass\n",
     ("A", "B")),
    ("module_classes", "class C: pass\n", ()),
    ("imports", "import torch.nn as nn\nfrom os import path\n",
     ("os", "os.path", "torch", "torch.nn")),
    ("is_test_file", "import torch\n", False),
    ("legacy_torch", "import torch\nx = Variable(torch.zeros(1), volatile=True)\n", True),
    ("legacy_torch", "import torch\nprint(loss.item(), w.data[0])\n", False),
    ("training_loop", TRAIN, [15]),
    ("training_loop", "import torch\nfor x in data:\n    loss = f(x)\n", []),
    ("epoch_loop", TRAIN, [14]),
    ("epoch_loop", TRAIN.replace("for epoch in range(EPOCHS):\n", "if True:\n"), []),
    ("train_loaders_without_drop_last", TRAIN, [13]),
    ("train_loaders_without_drop_last", TRAIN.replace("shuffle=True)", "shuffle=True, drop_last=True)"), []),
    ("train_loaders_without_drop_last", TRAIN.replace("shuffle=True)", "**kw)"), []),
    ("builds_batchnorm", "import torch.nn as nn\nm = nn.Sequential(nn.BatchNorm2d(3))\n", True),
    ("builds_batchnorm", "import torch\nclass N(torch.nn.Module):\n"
     "    def __init__(self):\n        self.bn = torch.nn.SyncBatchNorm.convert_sync_batchnorm(m)\n", True),
    ("builds_batchnorm", "import torch.nn as nn\nm = nn.Sequential(nn.LayerNorm(3))\n", False),
    ("builds_conv_layers", "from torch import nn\nc = nn.Conv2d(3, 8, 3)\n", True),
    ("builds_conv_layers", "from torch import nn\nc = nn.Linear(3, 8)\n", False),
    ("trainer_framework", "import lightning as L\ntrainer = L.Trainer()\n", True),
    ("trainer_framework", "from accelerate import Accelerator\n", True),
    ("trainer_framework", "import transformers\nm = transformers.AutoModel.from_pretrained('x')\n", False),
    ("managed_training", "from transformers import Trainer\nTrainer(model=m).train()\n", True),
    ("managed_training", "from accelerate import Accelerator\nAccelerator()\n", False),
    ("steps_environment", "import gymnasium as gym\nenv = gym.make('CartPole-v1')\n", True),
    ("steps_environment", "import gym\nenvs = gym.vector.SyncVectorEnv([])\n", True),
    ("steps_environment", "import gym\n", False),
    ("saves_checkpoint", "import torch\ntorch.save(m.state_dict(), 'm.pt')\n", True),
    ("saves_checkpoint", "model.save_pretrained('out')\n", True),
    ("saves_checkpoint", "import torch\nstate = torch.load('m.pt')\n", False),
    ("tracking", "import wandb\nwandb.log({'loss': 1})\n", True),
    ("tracking", "from torch.utils.tensorboard import SummaryWriter\nw = SummaryWriter()\n", True),
    ("tracking", "accelerator.init_trackers('run')\n", True),
    ("tracking", "import logging\nlogging.info('loss')\n", False),
    ("reads_config", "import argparse\np = argparse.ArgumentParser()\n", True),
    ("reads_config", "import click\n@click.command()\ndef main(): pass\n", True),
    ("reads_config", "import sys\nlr = float(sys.argv[1])\n", False),
    ("hparams", "import torch\nLR = 0.1\nBATCH_SIZE = 32\nopt = torch.optim.SGD(p, lr=LR)\n"
     "for _ in range(BATCH_SIZE):\n    pass\n", [2, 3]),
    ("hparams", "import torch\nLR = 0.1\nprint(LR)\nlr = 0.1\nopt = torch.optim.SGD(p, lr=lr)\n", []),
    ("cuda_explicit", "import torch\nx = torch.zeros(3).cuda()\n", True),
    ("cuda_explicit", "import torch\nx = torch.zeros(3)\n", False),
    ("gpu_only_research", "import torch\nx = torch.zeros(3)\n", False),
    ("uses_cuda", "x = x.cuda()\n", True),
    ("uses_cuda", "import torch\nx = torch.zeros(3, device=device)\n", True),
    ("uses_cuda", "x = x.to('mps')\n", True),
    ("uses_cuda", "x = x.to('cpu')\n", False),
    ("checks_accelerator", "import torch\nok = torch.cuda.is_available()\n", True),
    ("checks_accelerator", "import torch\nd = torch.accelerator.current_accelerator()\n", True),
    ("checks_accelerator", "import torch\nx = torch.zeros(3)\n", False),
    ("places_on_accelerator", "import torch\nx = torch.zeros(3, device='cuda')\n", True),
    ("places_on_accelerator", "import torch\nx = x.to(torch.float16)\ny = y.to('cpu')\n", False),
    ("devices", "import torch\nx = torch.zeros(3, device='cuda:1')\ny = x.cpu()\n", ("cuda:1",)),
    ("hardcoded_cpu_device", TRAIN.replace('LR = 1e-3\n', 'device = "cpu"\n'), [6]),
    ("hardcoded_cpu_device", TRAIN.replace('LR = 1e-3\n', 'device = "cpu"\nif ok:\n    device = "cuda"\n'), []),
    ("hardcoded_cpu_device", 'import torch\ndevice = "cpu"\n', []),  # does not train
    ("mixed_precision", "import torch\nwith torch.autocast('cuda'):\n    y = m(x)\n", True),
    ("mixed_precision", "m = m.half()\n", True),
    ("mixed_precision", "import torch\nx = x.to(torch.bfloat16)\n", True),
    ("mixed_precision", "parser.add_argument('--amp', action='store_true')\n", True),
    ("mixed_precision", "trainer = Trainer(precision='16-mixed')\n", True),
    ("mixed_precision", "import torch\nx = x.to(torch.float64)\n", False),
    ("compiles", "import torch\nm = torch.compile(m)\n", True),
    ("compiles", "import torch\ntorch.onnx.export(m, x, 'm.onnx')\n", True),
    ("compiles", "import torch.nn as nn\nmodel = nn.Linear(2, 2)\nmodel.compile()\n", True),
    ("compiles", "import re\np = re.compile('x')\n", False),
    ("inference_entry", "import torch\nmodel = torch.jit.load('m.pt')\nmodel.eval()\n\ndef predict(x):\n"
     "    with torch.no_grad():\n        return model(x)\n", [5]),
    ("inference_entry", "import torch\nmodel = torch.jit.load('m.pt')\n\ndef predict(x):\n"
     "    with torch.no_grad():\n        return model(x)\n", []),  # never put in eval mode
    ("seeds_torch", "import torch\ntorch.manual_seed(0)\n", True),
    ("seeds_torch", "import lightning as L\nL.seed_everything(0)\n", True),
    ("seeds_torch", "import numpy as np\nnp.random.seed(0)\n", False),
    ("seeds_numpy", "import numpy as np\nnp.random.seed(0)\n", True),
    ("seeds_numpy", "import random\nrandom.seed(0)\n", False),
    ("seeds_python", "import random\nrandom.seed(0)\n", True),
    ("seeds_python", "import numpy as np\nnp.random.seed(0)\n", False),
    ("seed_helper", "from utils import set_random_seed\nset_random_seed(1)\n", True),
    ("seed_helper", "import torch\ntorch.manual_seed(0)\ng.manual_seed(1)\ns = torch.initial_seed()\n", False),
    ("numpy_random", "import numpy as np\nnp.random.seed(0)\na = np.random.rand(3)\nb = np.random.randn(2)\n", [3]),
    ("numpy_random", "import numpy as np\nrng = np.random.default_rng(0)\na = rng.random(3)\n", []),
    ("python_random", "import random\nx = 1\nrandom.shuffle(items)\n", [3]),
    ("python_random", "import random\nrandom.seed(0)\nr = random.Random(0)\n", []),
    ("seed_truthiness_guards", "import torch\nif args.seed:\n    torch.manual_seed(args.seed)\n", [2]),
    ("seed_truthiness_guards", "import torch\nif args.seed is not None:\n    torch.manual_seed(args.seed)\n", []),
    ("seed_truthiness_guards", "import torch\nparser.add_argument('--seed', type=int, default=0)\n"
     "if args.seed:\n    torch.manual_seed(args.seed)\n", []),
    ("seed_truthiness_guards", "import torch\nparser.add_argument('--seed', type=int, default=42, "
     "help='Seed to use, if zero, no seed used')\nif args.seed:\n    torch.manual_seed(args.seed)\n", []),
    ("seed_truthiness_from_cli", "import argparse\nimport torch\nparser = argparse.ArgumentParser()\n"
     "args = parser.parse_args()\nif args.seed:\n    torch.manual_seed(args.seed)\n", [5]),
    ("seed_truthiness_from_cli", "import torch\n\n\ndef setup(seed):\n    if seed:\n        torch.manual_seed(seed)\n",
     []),
    ("downloads", "import urllib.request\nurllib.request.urlretrieve(URL, 'w.pkl')\n", [2]),
    ("downloads", "from torchvision.datasets.utils import download_url\n"
     "download_url('https://x.org/a.tgz', root, 'a.tgz', md5='0' * 32)\n", []),
    ("downloads", "import requests\nfrom PIL import Image\nimg = Image.open(requests.get(url, stream=True).raw)\n",
     []),
    ("checks_hashes", "import hashlib\nh = hashlib.sha256(data).hexdigest()\n", True),
    ("checks_hashes", "import os\nok = os.path.exists(p)\n", False),
    ("pickle_dumps", "import pickle, joblib\npickle.dump(x, f)\njoblib.dump(y, 'y.joblib')\n",
     ("joblib", "pickle")),
    ("pickle_dumps", "import pickle\nx = pickle.load(f)\n", ()),
    ("checkpoint_json", "import torch\nx = 1\n", ""),
    ("resume_skips_kept", "for epoch in range(start, n):\n    if resuming:\n"
     "        loader = accelerator.skip_first_batches(loader, step)\n    for batch in loader:\n"
     "        train(batch)\n", [3]),
    ("resume_skips_kept", "import itertools\nfor epoch in range(n):\n    if resuming:\n"
     "        loader = accelerator.skip_first_batches(loader, step)\n    for batch in loader:\n        pass\n"
     "for epoch in range(n):\n    if resuming:\n        data = itertools.islice(data, k, None)\n"
     "    for b in data:\n        pass\n", [4, 9]),  # in source order
    ("resume_skips_kept", "for epoch in range(start, n):\n    active = loader\n    if resuming:\n"
     "        active = accelerator.skip_first_batches(loader, step)\n    for batch in active:\n"
     "        train(batch)\n", []),
    ("state_dicts_without_scaler", "import torch\nclass Trainer:\n    def __init__(self):\n"
     "        self.scaler = torch.amp.GradScaler()\n    def state_dict(self):\n"
     "        return {'model': self.model.state_dict(), 'optimizer': self.optimizer.state_dict()}\n", [6]),
    ("state_dicts_without_scaler", "import torch\nclass Trainer:\n    def __init__(self):\n"
     "        self.scaler = torch.amp.GradScaler()\n    def state_dict(self):\n"
     "        return {'optimizer': self.optimizer.state_dict(), 'scaler': self.scaler.state_dict()}\n", []),
    ("counter_classes", "class Ema:\n    def __init__(self, model, updates=0):\n        self.updates = updates\n"
     "    def update(self):\n        self.updates += 1\n", [1]),
    ("counter_classes", "class Ema:\n    def __init__(self, model, updates=0):\n        self.updates = updates\n",
     []),
    ("built_after_resume", "def main():\n    start = ckpt['epoch'] + 1\n    ema = Ema(model)\n", [3]),
    ("built_after_resume", "def main():\n    ema = Ema(model)\n    start = ckpt['epoch'] + 1\n", []),
    ("built_after_resume", "def main():\n    start = ckpt['epoch'] + 1\n    ema = Ema(model, updates=start)\n", []),
    ("lr_counter_restarts", LR_RESTART, [4]),
    ("lr_counter_restarts", LR_RESTART.replace("global_step = 0", "global_step = first_epoch * len(loader)"), []),
    ("lr_counter_restarts", LR_RESTART.replace("range(first_epoch, epochs)", "range(epochs)"), []),
]


@pytest.mark.parametrize("field,code,expected", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_collector(field, code, expected):
    value = collect(field, code)
    hint = HINTS[field]
    if isinstance(expected, list) and hint is not list:
        assert lines(value) == expected
    else:
        assert value == expected


def test_every_collector_has_a_case_that_finds_something():
    """Each fact is shown both found (a non-default value) and, for most, absent."""
    found = {field for field, code, expected in CASES
             if expected not in ((), [], False, "", None)}
    untested = sorted(set(COLLECTORS) - found - {"is_test_file", "gpu_only_research", "checkpoint_json",
                                                 "target_torch"})
    assert not untested, f"collectors without a positive case: {untested}"


def test_is_test_file_and_checkpoint_index_collectors():
    assert collect("is_test_file", "import torch\n", path="tests/test_m.py") is True
    index = collect("checkpoint_json", "import torch\ntorch.save({'model': m.state_dict()}, 'c.pt')\n")
    facts = FileFacts(path="m.py", checkpoint_json=index)
    assert [e.key for e in facts.checkpoints.saves[0].entries] == ["model"]


def test_target_torch_is_the_torch_the_file_is_reviewed_against():
    import ast as _ast

    from torchreview.engine.context import FileContext
    from torchreview.engine.source import SourceFile

    code = "import torch\n"
    pinned = FileContext(SourceFile(path="m.py", text=code), _ast.parse(code), target_torch=(1, 12), has_torch=True)
    assert COLLECTORS["target_torch"](pinned, CallNames(pinned)) == (1, 12)
    assert collect("target_torch", code) == ()


def test_gpu_only_research_needs_explicit_cuda(monkeypatch):
    from torchreview.engine.advice import Advice

    monkeypatch.setattr(Advice, "gpu_only_research", property(lambda self: True))
    assert collect("gpu_only_research", "import torch\nx = torch.zeros(3).cuda()\n") is True
    assert collect("gpu_only_research", "import torch\nx = torch.zeros(3)\n") is False


def test_download_records_url_and_unpickling():
    code = ("import pickle, urllib.request\n"
            "urllib.request.urlretrieve('https://example.com/w.pkl', 'w.pkl')\n"
            "w = pickle.load(open('w.pkl', 'rb'))\n"
            "urllib.request.urlretrieve(f'{BASE}/data.txt', 'data.txt')\n")
    first, second = collect("downloads", code)
    assert (first.url, first.unpickled, first.anchor.line) == ("https://example.com/w.pkl", True, 2)
    assert (second.url, second.unpickled, second.anchor.line) == ("", False, 4)


def test_collectors_do_not_depend_on_each_other():
    """Run alone, in any order, a collector gives what collect_facts stores."""
    ctx = ctx_of(TRAIN)
    facts = collect_facts(ctx)
    calls = CallNames(ctx)
    for name in reversed(list(COLLECTORS)):
        assert COLLECTORS[name](ctx, calls) == getattr(facts, name), name
