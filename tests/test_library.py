"""engine/library.py: the single front door for library knowledge (both tables of
``torchreview/data``), its typed accessors and its shape checks."""

from __future__ import annotations

import ast
import copy
import os

import pytest

from torchreview.engine import library as L

SRC = os.path.join(os.path.dirname(__file__), os.pardir, "src", "torchreview")
DATA = os.path.join(SRC, "data")
# tables with their own owners (not library knowledge): the module that may read each
OWNED = {"deprecated_apis.json": "rules/quality/_apis.py", "private_apis.json": "rules/quality/_apis.py",
         "pickle_allowlist.json": "artifacts/policy.py", "track_record.json": "track_record.py",
         "torch_api_floors.json": "engine/api_floor.py"}
FRONT_DOOR = "engine/library.py"


def test_layers_are_typed():
    assert L.layer("torch.nn.RReLU") == L.Layer("torch.nn.RReLU", "active")
    batch_norm = L.layer("torch.nn.BatchNorm2d")  # mode-free without running statistics
    assert batch_norm.mode == "conditional" and batch_norm.flags == (L.Arg("track_running_stats", 4, True),)
    assert L.layer("einops.layers.torch.Rearrange").mode == "free"
    dropout = L.layer("torch.nn.Dropout")
    assert dropout.mode == "conditional" and dropout.rates == (L.Arg("p", 0, 0.5),) and dropout.flags == ()
    assert L.layer("torch.nn.InstanceNorm2d").flags == (L.Arg("track_running_stats", 4, False),)
    assert L.layer("linformer.Linformer").rates == (L.Arg("dropout", None, 0.0),)  # keyword only
    assert L.layer("torch.nn.LSTM").stack == L.Arg("num_layers", 2, 1) and dropout.stack is None
    assert L.layer("torch.nn.FancyNewLayer") is None and L.layer(None) is None and L.layer("") is None


def test_functional_calls_are_typed():
    dropout = L.functional("torch.nn.functional.dropout")
    assert dropout.training == L.Arg("training", 2, True) and dropout.rate == L.Arg("p", 1, 0.5)
    assert L.functional("torch.nn.functional.batch_norm").rate is None
    assert L.functional("_about") is None  # the table's comment is no entry
    assert L.functional("torch.nn.functional.relu") is None


def test_constructors_are_typed():
    vit = L.constructor("torchvision.models.vit_b_16")
    assert isinstance(vit, L.Constructor) and vit.kind == "model" and vit.mode == "train"
    assert vit.contains == {"batchnorm", "dropout"} and not vit.mode_free
    resnet = L.constructor("torchvision.models.resnet50")
    assert resnet.contains == {"batchnorm"} and resnet.norm_argument == "norm_layer" and not resnet.mode_free
    scripted = L.constructor("torch.jit.load")
    assert scripted.mode == "eval" and scripted.mode_free
    assert L.constructor("diffusers.UNet2DModel.from_pretrained").class_words  # class words filter
    assert L.constructor("diffusers.DDPMScheduler.from_pretrained") is None
    assert L.constructor(None) is None


def test_eval_loaders_are_data():
    # whatever class a from_pretrained load builds, and a TorchScript load: eval mode
    assert L.loads_in_eval("transformers.AutoModel.from_pretrained")
    assert L.loads_in_eval("nets.MyNet.from_pretrained") and L.loads_in_eval("torch.jit.load")
    assert not L.loads_in_eval("torch.load") and not L.loads_in_eval("nets.from_pretrained_weights")
    assert not L.loads_in_eval("") and not L.loads_in_eval(None)
    assert "torch.jit.load" in L.parse_eval_loaders(L._read(L.MODELS_FILE))


def test_frameworks_are_typed():
    table = L._tables().frameworks
    assert {f.name for f in table} >= {"Lightning", "Accelerate", "Ignite", "skorch", "Hugging Face Trainer"}
    for f in table:
        assert isinstance(f, L.Framework) and f.takes_over <= L.DUTIES and (f.entry or f.base_classes)
    accelerate = next(f for f in table if f.name == "Accelerate")
    assert "accelerate.Accelerator" in accelerate.entry and "zero_grad" not in accelerate.takes_over


def test_tables_are_read_once():
    L._tables.cache_clear()
    first = L._tables()
    L.layer("torch.nn.ReLU"), L.constructor("timm.create_model.x"), L.functional("torch.nn.functional.dropout")
    assert L._tables() is first and L._tables.cache_info().misses == 1


_MODELS = (L.MODELS_FILE, L.parse_models)
_LAYERS = (L.LAYERS_FILE, L.parse_layers)
_LOADERS = (L.MODELS_FILE, L.parse_eval_loaders)


@pytest.mark.parametrize("table, edit, message", [
    (_MODELS, lambda d: d.pop("frameworks"), "needs the lists"),
    (_MODELS, lambda d: d["constructors"][0].update(contains=["conv"]), "'contains' is a list drawn from"),
    (_MODELS, lambda d: d["constructors"][0].update(mode="inference"), "'mode' is"),
    (_MODELS, lambda d: d["constructors"][1].pop("match"), "constructors[1]: needs the strings"),
    (_MODELS, lambda d: d["frameworks"][0]["takes_over"].append("teleport"), "unknown duties ['teleport']"),
    (_MODELS, lambda d: d["frameworks"][2].update(entry="transformers.Trainer"), "frameworks[2]: needs"),
    (_LOADERS, lambda d: d.update(eval_loaders="*.from_pretrained"), "eval_loaders: a list of"),
    (_LAYERS, lambda d: d.pop("conditional"), "needs the lists"),
    (_LAYERS, lambda d: d["active"].append("torch.nn.Linear"), "torch.nn.Linear: listed twice"),
    (_LAYERS, lambda d: d["conditional"].update({"x.Drop": {"rates": [["p", "zero", 0.5]]}}),
     "x.Drop: an argument is"),
    (_LAYERS, lambda d: d["conditional"].update({"x.Drop": {"rate": []}}), "only the lists 'rates' and 'flags'"),
    (_LAYERS, lambda d: d["functional"].update({"x.f": {"rate": ["p", 1, 0.5]}}), "x.f: a functional call has"),
    (_LAYERS, lambda d: d["conditional"].update({"x.Rnn": {"rates": [], "stack": "num_layers"}}),
     "the argument 'stack'"),
])
def test_malformed_table_is_refused(table, edit, message):
    filename, parse = table
    data = copy.deepcopy(L._read(filename))
    edit(data)
    with pytest.raises(L.LibraryDataError, match=rf"^data/{filename}: ") as err:
        parse(data)
    assert message in str(err.value)


def test_shipped_tables_parse():
    constructors, frameworks = L.parse_models(L._read(L.MODELS_FILE))
    layers, functionals = L.parse_layers(L._read(L.LAYERS_FILE))
    assert len(constructors) >= 7 and len(frameworks) >= 6 and len(layers) >= 100 and len(functionals) >= 8


# ------------------------------------------------------------------ one front door
def _data_readers(text: str) -> tuple[set[str], bool]:
    """(data table names a module mentions, does it open the ``torchreview.data``
    package or a ``data`` folder next to its own file)."""
    tables = set(os.listdir(DATA))
    named: set[str] = set()
    opens = False
    tree = ast.parse(text)
    docs = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr)}  # docstrings only talk
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            named |= {t for t in tables if t.endswith(".json") and t in node.value}
            if node.value == "torchreview.data":
                opens = True
        if isinstance(node, ast.Call):
            words = {n.value for n in ast.walk(node) if isinstance(n, ast.Constant)}
            names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
            if "data" in words and "__file__" in names:
                opens = True  # os.path.join(os.path.dirname(__file__), "data", ...)
    return named, opens


def _violations(relative: str, text: str) -> list[str]:
    if relative == FRONT_DOOR:
        return []
    named, opens = _data_readers(text)
    out = [f"{relative} names {t}" for t in sorted(named) if OWNED.get(t) is None]
    owns = {t for t, owner in OWNED.items() if owner == relative}
    if opens and not owns:
        out.append(f"{relative} opens torchreview/data")
    return out


def test_checker_catches_a_second_door():
    old = ('path = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", "mode_layers.json")\n')
    assert _violations("engine/module_modes.py", old) == ["engine/module_modes.py names mode_layers.json",
                                                          "engine/module_modes.py opens torchreview/data"]
    sneaky = 'resources.files("torchreview.data").joinpath(name)\n'
    assert _violations("engine/kinds.py", sneaky) == ["engine/kinds.py opens torchreview/data"]
    assert _violations("artifacts/policy.py", 'resources.files("torchreview.data")\n') == []


def test_only_the_front_door_reads_library_knowledge():
    found = []
    for root, _, files in os.walk(SRC):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(root, name)
                relative = os.path.relpath(path, SRC).replace(os.sep, "/")
                with open(path, encoding="utf-8") as handle:
                    found.extend(_violations(relative, handle.read()))
    assert found == []
    assert set(OWNED) | {L.MODELS_FILE, L.LAYERS_FILE} == {t for t in os.listdir(DATA) if t.endswith(".json")}
