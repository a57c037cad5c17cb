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
    notebooks (8 findings judged noise); a Hub download of a repository the operator names
    in a script is their choice too (trlx examples judged noise on 2026-11-29): medium,
    still reported when medium confidence is asked for."""
    path = FIXTURES / "project" / "TR101_opt_out_in_scripts"
    assert _default(path, ("TR101", "TR102")) == []
    medium = run_review([str(path)], Settings(rule_codes=("TR101", "TR102"), jobs=1, advice_codes=(),
                                              min_confidence="medium")).findings
    assert ("infer.py", 16, "TR101") in [(Path(f.path).name, f.line, f.code) for f in medium]


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


def test_a_load_of_unknown_origin_is_high_only_where_a_service_loads_it(tmp_path):
    """audiocraft caches / resume checkpoints / export tools (torch pinned 2.1): a missing
    weights_only where nothing shows who makes the file (7 judged noise) is medium; in a
    file that serves requests (Made-With-ML's serving path, judged true) it stays high."""
    (tmp_path / "cache.py").write_text("import torch\n\ndef read(path):\n    return torch.load(path)\n")
    (tmp_path / "serve.py").write_text("import torch\nfrom fastapi import FastAPI\n\napp = FastAPI()\n"
                                       "\ndef model_state(path):\n    return torch.load(path)\n")
    everything = run_review([str(tmp_path)], Settings(rule_codes=("TR102",), jobs=1, target_torch=(2, 1))).findings
    assert {(f.path.rsplit("/", 1)[-1], f.line): f.confidence for f in everything} == {
        ("cache.py", 4): "medium", ("serve.py", 7): "high"}


SELECT_ON_TEST = """import torch
from torch.utils.data import DataLoader


def main(model, evaluate, datasets, steps):
    eval_loader = DataLoader(datasets["test"], batch_size=8)
    dev_loader = DataLoader(datasets["validation"], batch_size=8)
    best = None
    for step in range(steps):
        metrics = evaluate(model, eval_loader)
        if best is None or metrics["wer"] < best:
            best = metrics["wer"]
            torch.save(model.state_dict(), "best.pt")
    metrics = evaluate(model, eval_loader)
    if best is None or metrics["wer"] < best:
        best = metrics["wer"]
        torch.save(model.state_dict(), "best.pt")
"""


def test_selection_on_test_is_one_finding_per_loader_and_medium_in_examples(tmp_path):
    """peft examples/int8_training: two "best" comparisons on the test loader in one function
    (the second judged a repeat), in a library's usage example (judged noise: a recipe, not a
    reported result). In a research script the same code is one high finding."""
    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / "train.py").write_text(SELECT_ON_TEST)
    (tmp_path / "train.py").write_text(SELECT_ON_TEST)
    everything = run_review([str(tmp_path)], Settings(rule_codes=("TR519",), jobs=1)).findings
    # one practice of the project: one finding, the research script's high one leading
    assert len(everything) == 1 and everything[0].confidence == "high"
    got = {(Path(p.path).parent.name, p.line): p.confidence for p in everything[0].parts}
    assert got == {("examples", 11): "medium", ("examples", 15): "medium",
                   (tmp_path.name, 11): "high", (tmp_path.name, 15): "high"}


def test_an_option_named_like_the_network_is_not_a_network_read(tmp_path):
    """EDM generate.py: `pickle.load` of the file a click option `network_pkl` names (the
    model format of the project, judged noise) read as 'network' bytes by its name: it is
    a path the operator gives, medium; a `requests.get` body stays high."""
    (tmp_path / "generate.py").write_text(
        "import pickle\nimport click\nimport requests\n\n@click.command()\n"
        "@click.option('--network', 'network_pkl')\ndef main(network_pkl):\n"
        "    with open(network_pkl, 'rb') as f:\n        net = pickle.load(f)\n"
        "    other = pickle.loads(requests.get('https://example.org/n.pkl').content)\n"
        "    return net, other\n")
    everything = run_review([str(tmp_path)], Settings(rule_codes=("TR103",), jobs=1)).findings
    assert {f.line: f.confidence for f in everything} == {9: "medium", 10: "high"}


def test_code_written_for_torch_0_3_is_reviewed_against_it(tmp_path):
    """code-of-learn-deep-learning-with-pytorch: notebooks and scripts using `loss.data[0]` and
    `Variable(x, volatile=True)`, no pin. A torch >= 2.6 weights-only crash (TR520) and a
    transform removed in torchvision 0.12 (TR425) were judged noise: the code runs on torch 0.3
    only. The same code without those idioms is reviewed against the newest torch."""
    legacy = ("import torch\nfrom torch.autograd import Variable\nfrom torchvision import transforms\n"
              "tf = transforms.Scale(256)\nnet = torch.nn.Linear(2, 2)\n"
              "torch.save(net, 'net.pth')\nnet2 = torch.load('net.pth')\n"
              "x = Variable(torch.zeros(1, 2), volatile=True)\nloss = net2(x).sum()\nprint(loss.data[0])\n")
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "lesson.py").write_text(legacy)
    (tmp_path / "new").mkdir()
    (tmp_path / "new" / "lesson.py").write_text(legacy.replace(", volatile=True", "").replace(".data[0]", ".item()"))
    shown = {(Path(f.path).parent.name, f.code, f.severity.label)
             for f in run_review([str(tmp_path)], Settings(rule_codes=("TR520", "TR425"), jobs=1,
                                                           detect_torch=True)).findings}
    assert ("new", "TR520", "high") in shown and ("new", "TR425", "high") in shown
    assert not any(folder == "old" and (code == "TR520" or severity == "high") for folder, code, severity in shown)


def test_findings_in_a_copy_of_another_repository_are_medium(tmp_path):
    """microsoft/LoRA examples/NLU: a whole copy of transformers (its own setup.py naming
    the package, its own CONTRIBUTING.md) inside the project; 12 findings in its legacy and
    research scripts judged noise (not this project's code). The project's own files keep
    their confidence; a folder with a setup.py but no repository files is a sub-project."""
    script = ("import torch\n\nmodel = torch.nn.Linear(2, 2)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
              "for x in torch.rand(10, 2):\n    loss = model(x).sum()\n    loss.backward()\n    opt.step()\n")
    (tmp_path / "setup.py").write_text("from setuptools import setup\nsetup(name='loralib')\n")
    for folder in ("examples/NLU", "examples/NLG"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "setup.py").write_text("from setuptools import setup\nsetup(name='x')\n")
        (tmp_path / folder / "train.py").write_text(script)
    (tmp_path / "examples/NLU/CONTRIBUTING.md").write_text("How to contribute\n")
    everything = run_review([str(tmp_path)], Settings(rule_codes=("TR401",), jobs=1, detect_torch=True)).findings
    got = {(Path(f.path).parent.name, f.confidence) for f in everything}
    assert got == {("NLU", "medium"), ("NLG", "high")}
    assert all("a copy of another repository" in f.message for f in everything if "NLU" in f.path)


def test_a_forward_driven_by_a_base_class_elsewhere_is_medium(tmp_path):
    """IOPaint ldm.py: `.numpy()` in a `forward` only the base class's `@torch.no_grad()
    __call__` (base.py) runs (judged false as a high defect): medium confidence."""
    path = FIXTURES / "project" / "TR502_forward_driven_by_base"
    everything = run_review([str(path)], Settings(rule_codes=("TR502",), jobs=1)).findings
    assert [(Path(f.path).name, f.line, f.confidence) for f in everything] == [("ldm.py", 15, "medium")]


INPLACE = """import torch
from torch import nn


class ClipModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.text_projection = nn.Parameter(torch.eye(4))

    def set_up_textual_embeddings(self, tokens, current_embeds):
        new_embedding = nn.Embedding(10, 4)
        new_embedding.weight[:4] = current_embeds.weight[:4]
        new_embedding.weight[4:8] = current_embeds.weight[:4]
        new_embedding.weight[8:] = current_embeds.weight[:2]
        return new_embedding


def init_bias(layer):
    layer.bias[:2] = 1.0


init_bias(nn.Linear(4, 4))
"""


def test_inplace_writes_on_one_leaf_fold_and_unseen_callers_lower_the_confidence(tmp_path):
    """Fooocus sd1_clip.py: three slice writes to one embedding weight in a method only other
    modules call, under `@torch.no_grad()` there (judged false): one finding, medium. A helper
    this file calls with grad on stays high."""
    (tmp_path / "clip.py").write_text(INPLACE)
    everything = run_review([str(tmp_path)], Settings(rule_codes=("TR501",), jobs=1)).findings
    got = {(f.line, f.confidence, len(f.related)) for f in everything}
    assert got == {(12, "medium", 2), (19, "high", 0)}


def test_one_softmax_model_fed_to_the_loss_twice_is_one_finding():
    """app_deep_learning kfold notebook: the same softmax-ended model's output fed to the
    loss on the training and the validation data of one cell (the second judged a repeat)."""
    path = FIXTURES / "quality" / "TR411_cross_entropy_on_softmax.py"
    everything = run_review([str(path)], Settings(rule_codes=("TR411",), jobs=1)).findings
    # (the fixture file repeats the habit elsewhere too: one finding for the file, 88 and 89 among its places)
    lead = next(f for f in everything if 88 in [f.line, *(r.line for r in f.related)])
    assert 89 in [r.line for r in lead.related] and not any(f.line == 89 for f in everything)


VAL_NAMED = """import torch
from sklearn.model_selection import train_test_split
from torch.utils.data import DataLoader
from torchvision import datasets


def fit(model, loss_fn, x, y, optimizer, epochs, patience):
    x_train, x_test, y_train, y_test = train_test_split(x, y, test_size=0.25)
    best_loss, bad = float("inf"), 0
    for epoch in range(epochs):
        loss = loss_fn(model(x_train), y_train)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        with torch.no_grad():
            y_val_pred = model(x_test)
            val_loss = loss_fn(y_val_pred, y_test)
        if val_loss < best_loss:
            best_loss = val_loss
            torch.save(model.state_dict(), "best.pt")


def fit_official(model, evaluate, epochs):
    val_loader = DataLoader(datasets.CIFAR10("data", train=False), batch_size=256)
    best = 0.0
    for epoch in range(epochs):
        val_acc = evaluate(model, val_loader)
        if val_acc > best:
            best = val_acc
            torch.save(model.state_dict(), "best.pt")
"""


def test_a_validation_score_on_data_only_named_test_is_medium(tmp_path):
    """app_deep_learning kaggle notebook: `val_loss` on `x_test` of a train_test_split of the
    training data (judged noise: the author's validation split) -- medium at first, silent
    since the sixth 2026-11-29 session: a later element of a `train_test_split` is held out
    of the same data, a validation split whatever it is called. A "val" metric on a loader
    built as the official test split (`train=False`) stays high: the bug TR519 is for."""
    (tmp_path / "fit.py").write_text(VAL_NAMED)
    everything = run_review([str(tmp_path)], Settings(rule_codes=("TR519",), jobs=1, min_confidence="low")).findings
    assert {f.line: f.confidence for f in everything} == {28: "high"}


def test_a_model_known_only_by_its_parameter_name_gives_a_medium_numpy_finding(tmp_path):
    """efficientvit gazesamcore runtime_variants.py: `output = model(img)` where `model` is an
    untyped parameter (a TensorRT engine there; 3 findings judged false): medium. A model built
    in the same scope stays high."""
    (tmp_path / "run.py").write_text(
        "import torch\nfrom torch import nn\n\n"
        "def run_trt(img, model):\n    output = model(torch.tensor(img))\n    return output.numpy()\n\n"
        "def run_built(img):\n    net = nn.Linear(4, 2)\n    return net(img).numpy()\n")
    everything = run_review([str(tmp_path)], Settings(rule_codes=("TR502",), jobs=1)).findings
    assert {f.line: f.confidence for f in everything} == {6: "medium", 10: "high"}


def test_a_dataset_rng_is_medium_when_its_loaders_are_out_of_sight(tmp_path):
    """LoRA examples/NLG data_utils.py: `self.rng = random.Random(...)` used in `__getitem__` of a
    dataset whose loaders (other files) all run with num_workers=0 (judged false): the file
    builds no loader, so the workers are out of sight -- medium. With a worker loader in the
    same file it stays high."""
    dataset = ("import random\nimport torch\nfrom torch.utils.data import Dataset, DataLoader\n\n"
               "class FT(Dataset):\n    def __init__(self, n):\n        self.n = n\n"
               "        self.rng = random.Random(0)\n\n    def __len__(self):\n        return self.n\n\n"
               "    def __getitem__(self, i):\n        return self.rng.random()\n")
    (tmp_path / "data_utils.py").write_text(dataset)
    (tmp_path / "train.py").write_text(dataset + "\nloader = DataLoader(FT(8), batch_size=2, num_workers=4)\n")
    everything = run_review([str(tmp_path)], Settings(rule_codes=("TR426",), jobs=1)).findings
    assert {(f.path.rsplit("/", 1)[-1], f.confidence) for f in everything} == {
        ("data_utils.py", "medium"), ("train.py", "high")}
