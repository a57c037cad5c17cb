"""Classes of findings judged noise/false on the sweeps of the fourth 2026-11-29
session, each as a near-miss that must stay silent (or hidden by default) beside
a positive that must stay."""
from __future__ import annotations

from pathlib import Path

from projects import package as _package
from torchreview.engine.runner import Settings, run_review


def _found(root: Path, codes: tuple[str, ...], **kw) -> list:
    """Every finding of ``codes``, merged findings flattened to their places (each keeps its own
    confidence and kind)."""
    findings = run_review([str(root)], Settings(rule_codes=codes, jobs=1, min_confidence="low", **kw)).findings
    return [p for f in findings for p in (f.parts or (f,))]


def _merged(root: Path, codes: tuple[str, ...], **kw) -> list:
    """The findings as reported: merged ones with their related places."""
    return run_review([str(root)], Settings(rule_codes=codes, jobs=1, min_confidence="low", **kw)).findings


def _confidences(root: Path, codes: tuple[str, ...], **kw) -> dict[int, str]:
    """{line: confidence} of the findings of ``codes`` under ``root``."""
    return {f.line: f.confidence for f in _found(root, codes, **kw)}


def _by_line(findings, path_end: str) -> dict[int, str]:
    return {f.line: f.confidence for f in findings if f.path.endswith(path_end)}


HUB_LOADS = '''import torch
from transformers import AutoModel


def feature_extractor():
    return torch.hub.load("facebookresearch/dinov2", "dinov2_vitb14", trust_repo=True)


def third_party_extractor():
    return torch.hub.load("someuser/fancy-features", "extractor", trust_repo=True)


def official_encoder():
    return AutoModel.from_pretrained("microsoft/custom-encoder", trust_remote_code=True)


def community_encoder():
    return AutoModel.from_pretrained("someuser/custom-encoder", trust_remote_code=True)


def encoder_unpinned(name):
    return AutoModel.from_pretrained(name, trust_remote_code=True)
'''

PINNED = '''from transformers import AutoConfig


def heads_of(model_id, revision):
    config = AutoConfig.from_pretrained(model_id, revision=revision, trust_remote_code=True)
    return config.num_attention_heads
'''


def test_remote_code_of_a_model_publisher_or_a_pinned_variable_revision_is_medium(tmp_path):
    """pyiqa and k-diffusion loading DINOv2 from facebookresearch with `trust_repo=True`,
    learn2learn loading RoBERTa from pytorch/fairseq, open-r1 passing its own revision
    variable: judged noise (the model's own authors, a deliberate pin). A third-party
    repository and an unpinned model id in shipped code stay high."""
    pkg = _package(tmp_path / "proj", "proj")
    (pkg / "features.py").write_text(HUB_LOADS)
    findings = _found(tmp_path / "proj", ("TR104",))
    assert _by_line(findings, "features.py") == {6: "medium", 10: "high", 14: "medium", 18: "high", 22: "high"}
    pinned = _package(tmp_path / "pinned", "pinned")
    (pinned / "hub.py").write_text(PINNED)
    assert _by_line(_found(tmp_path / "pinned", ("TR104",)), "hub.py") == {5: "medium"}


ONE_EPOCH = '''import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler


def train(model, dataset, optimizer, num_epochs):
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, sampler=sampler, batch_size=32)
    for epoch in range(num_epochs):
        for x, y in loader:
            optimizer.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()


def main(model, dataset, optimizer):
    num_epochs = 1
    train(model, dataset, optimizer, num_epochs)
'''


def test_set_epoch_is_not_asked_of_an_epoch_loop_that_runs_once(tmp_path):
    """accel-training-pt2's DDP chapter hard-codes `num_epochs = 1` in `main()`: with one
    epoch there is no second one to repeat the order (judged noise). Ten epochs in the
    caller stay reported."""
    (tmp_path / "once").mkdir()
    (tmp_path / "once" / "ddp.py").write_text(ONE_EPOCH)
    assert not _found(tmp_path / "once", ("TR513",))
    (tmp_path / "many").mkdir()
    (tmp_path / "many" / "ddp.py").write_text(ONE_EPOCH.replace("num_epochs = 1", "num_epochs = 10"))
    assert [f.line for f in _found(tmp_path / "many", ("TR513",))] == [7]


SEED_FILE = '''import argparse
import torch

parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, default=1)
parser.add_argument("--seed_path", type=str, default=None)
args = parser.parse_args()


def load_seeds(seed_path):
    return [int(line) for line in open(seed_path).readlines()]


def seed_all(seed):
    torch.manual_seed(seed)


def main(model, loader, optimizer):
    torch.manual_seed(args.seed)
    if args.seed_path:
        levels = load_seeds(args.seed_path)
    if args.seed:
        seed_all(args.seed)
    for x, y in loader:
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
'''


def test_a_file_of_seeds_tested_for_truthiness_is_not_a_lost_seed(tmp_path):
    """level-replay: `if args.seed_path: train_seeds = load_seeds(args.seed_path)` reads a
    list of environment seeds from a file (judged false: the path is not a seed). A seed
    handed to a same-module helper that does seed stays reported."""
    (tmp_path / "train.py").write_text(SEED_FILE)
    assert [f.line for f in _found(tmp_path, ("TR405",))] == [22]


PROTOTYPES = '''import torch


def init_prototypes(n, dim, device, trainable):
    with torch.no_grad():
        prototypes = torch.empty(n, dim)
        torch.nn.init.uniform_(prototypes, -0.1, 0.1)
        prototypes = torch.nn.Parameter(prototypes).to(device)
    if trainable:
        prototypes.requires_grad = True
    return torch.optim.SGD([prototypes], lr=0.1)


def init_weights(n, dim, device):
    weights = torch.nn.Parameter(torch.randn(n, dim)).to(device)
    return torch.optim.SGD([weights], lr=0.1)
'''


def test_a_parameter_moved_under_no_grad_is_still_a_leaf(tmp_path):
    """msn: prototypes built as `nn.Parameter(p).to(device)` inside `torch.no_grad()`, then
    `requires_grad = True`: the copy has no autograd history, it is a leaf and the optimizer
    takes it (judged false). The same move outside no_grad stays reported."""
    (tmp_path / "protos.py").write_text(PROTOTYPES)
    assert [f.line for f in _found(tmp_path, ("TR511",))] == [15]


FINAL_EVAL = '''import torch


def evaluate(model, loader):
    model.eval()
    with torch.no_grad():
        return sum(float(model(x).sum()) for x in loader)


def train(model, loader, valid, optimizer, max_steps, save_steps):
    step = 0
    model.train()
    while True:
        for x in loader:
            loss = model(x).sum()
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            step += 1
            if step == max_steps:
                score = evaluate(model, valid)
                torch.save(model.state_dict(), f"last-{score}.pt")
                return
            if step % save_steps == 0:
                score = evaluate(model, valid)
                torch.save(model.state_dict(), f"step-{step}.pt")
'''


def test_the_final_evaluation_before_return_is_not_the_sticky_mode(tmp_path):
    """CodeReviewer: the evaluation at the last step is followed by `return`, so no pass
    runs after it (the finding anchored there was judged false); the periodic evaluation
    after which training goes on is the real one and is where the finding goes."""
    (tmp_path / "finetune.py").write_text(FINAL_EVAL)
    assert [f.line for f in _found(tmp_path, ("TR504",))] == [25]
    (tmp_path / "finetune.py").write_text(FINAL_EVAL.replace(
        "                score = evaluate(model, valid)\n                torch.save(model.state_dict(), f\"step-",
        "                score = 0\n                torch.save(model.state_dict(), f\"step-"))
    assert not _found(tmp_path, ("TR504",))


PLAIN_LIST = '''import torch.nn as nn


class EnsembleMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = [nn.Linear(4, 4) for _ in range(3)]

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x
'''


def test_sample_modules_of_a_test_suites_fixtures_are_test_code(tmp_path):
    """torchinfo and torchview keep sample modules in `tests/fixtures/models.py`, built on
    purpose with no or unregistered parameters to check what the library prints (judged
    noise). The same module in the package stays reported."""
    pkg = _package(tmp_path / "proj", "proj")
    (tmp_path / "proj" / "tests" / "fixtures").mkdir(parents=True)
    (tmp_path / "proj" / "tests" / "fixtures" / "models.py").write_text(PLAIN_LIST)
    (pkg / "models.py").write_text(PLAIN_LIST)
    found = _found(tmp_path / "proj", ("TR508",))
    places = [r.path.replace("\\", "/") for f in found for r in (f, *f.related)]
    assert [p.split("/proj/")[-1] for p in places] == ["proj/models.py"], places


MAML_TEST = '''import torch
import torch.nn as nn


def make_net():
    return nn.Sequential(nn.Conv2d(1, 8, 3), nn.BatchNorm2d(8, momentum=1.0), nn.ReLU(), nn.Flatten())


def test(db, net):
    net.train()
    accs = []
    for x, y in db:
        logits = net(x).detach()
        accs.append((logits.argmax(1) == y).float().mean())
    return accs


def test_untouched(db, net):
    accs = []
    for x, y in db:
        logits = net(x).detach()
        accs.append((logits.argmax(1) == y).float().mean())
    return accs


def main(db):
    net = make_net()
    test(db, net)
    test_untouched(db, net)
'''


def test_a_test_function_that_switches_to_train_itself_chose_the_mode(tmp_path):
    """torchopt's MAML example: `test()` calls `net.train()` first, on purpose (BatchNorm
    with momentum 1.0 on batch statistics at test time; judged false). The same evaluation
    without the explicit switch stays reported."""
    (tmp_path / "maml.py").write_text(MAML_TEST)
    assert [f.line for f in _found(tmp_path, ("TR207",))] == [21]


RESUME_REFERENCE = '''import argparse
import torch
import torch.nn as nn

parser = argparse.ArgumentParser()
parser.add_argument("--resume", default="")
parser.add_argument("--model", default="")
args = parser.parse_args()

model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2))
model_ref = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

if args.resume:
    checkpoint = torch.load(args.resume)
    model_ref.load_state_dict(checkpoint["state_dict"])
if args.model:
    checkpoint = torch.load(args.model)
    model.load_state_dict(checkpoint["state_dict"])

for epoch in range(10):
    for x, y in [(torch.randn(8, 4), torch.randint(0, 2, (8,)))]:
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
    torch.save({"state_dict": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch},
               "checkpoint.pth")
'''

PRUNE_SCRIPT = '''import argparse
import torch
import torch.nn as nn

parser = argparse.ArgumentParser()
parser.add_argument("--resume", default="")
args = parser.parse_args()

model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2))
if args.resume:
    checkpoint = torch.load(args.resume)
    model.load_state_dict(checkpoint["state_dict"])
for p in model.parameters():
    p.data.mul_(p.data.abs().gt(0.1).float())
torch.save({"epoch": 0, "state_dict": model.state_dict()}, args.resume.replace(".pth", "_pruned.pth"))
'''


def test_a_resume_into_a_reference_model_or_in_a_script_that_trains_nothing_is_no_resume(tmp_path):
    """rethinking-network-pruning: `--resume` fills `model_ref` (the pruned network whose
    zeros give the masks) while the optimizer trains `model`, and `cifar_prune.py` loads,
    prunes and saves without training (judged false three times). A second `torch.load`
    rebound to the same name is its own checkpoint. Loading into the trained model stays
    reported."""
    (tmp_path / "ref").mkdir()
    (tmp_path / "ref" / "main_lottery.py").write_text(RESUME_REFERENCE)
    (tmp_path / "ref" / "cifar_prune.py").write_text(PRUNE_SCRIPT)
    assert not _found(tmp_path / "ref", ("TR518",), advice_codes=("TR518",))
    (tmp_path / "own").mkdir()
    (tmp_path / "own" / "main.py").write_text(RESUME_REFERENCE.replace(
        'model_ref.load_state_dict(checkpoint["state_dict"])', 'model.load_state_dict(checkpoint["state_dict"])'))
    assert [f.line for f in _found(tmp_path / "own", ("TR518",), advice_codes=("TR518",))] == [15]


CPU_LOOP = '''import torch
import torch.nn as nn


def update(pi, optimizer, loader, log):
    for obs, adv in loader:
        optimizer.zero_grad()
        loss_pi = -(pi(obs) * adv).mean()
        loss_pi.backward()
        optimizer.step()
        steps = int(loss_pi.detach().abs().sum())
        log.extend([0] * steps)
'''


def test_a_training_loop_in_a_file_that_names_no_device_has_no_host_sync(tmp_path):
    """Spinning Up's PyTorch algorithms never move anything to a GPU: `loss_pi.item()` in
    the update loop waits for nothing (judged false twice). The same loop in a file that
    moves its data to CUDA stays reported."""
    (tmp_path / "cpu").mkdir()
    (tmp_path / "cpu" / "ppo.py").write_text(CPU_LOOP)
    assert not _found(tmp_path / "cpu", ("TR209",), advice_codes=("TR209",))
    (tmp_path / "gpu").mkdir()
    (tmp_path / "gpu" / "ppo.py").write_text(CPU_LOOP.replace("pi(obs)", "pi(obs.cuda())"))
    assert [f.line for f in _found(tmp_path / "gpu", ("TR209",), advice_codes=("TR209",))] == [11]


STUB_CELL = '''import torch.nn as nn


class Encoder(nn.Module):
    def __init__(self, input_dim, hid_dim):
        ...


class Decoder(nn.Module):
    def __init__(self, output_dim, hid_dim):
        ...


class Doubler(nn.Module):
    def __init__(self):
        ...

    def forward(self, x):
        return x * 2


enc, dec, dbl = Encoder(10, 4), Decoder(10, 4), Doubler()
'''


def test_a_module_class_of_placeholder_stubs_is_an_exercise(tmp_path):
    """creative_ml's transformer exercise: classes whose only method is a `...` constructor
    for the learner to fill in (judged noise three times). A `...` constructor beside a real
    `forward` stays reported."""
    (tmp_path / "exercise.py").write_text(STUB_CELL)
    assert [f.line for f in _found(tmp_path, ("TR510",))] == [15]


SMOOTHING = '''import numpy as np
import torch


def running_mean(signal, n):
    conv = torch.nn.Conv1d(1, 1, kernel_size=2 * n + 1, bias=False)
    conv.weight.requires_grad_(False)
    conv.weight *= 0
    conv.weight += 1 / (2 * n + 1)
    x = torch.from_numpy(np.asarray(signal, dtype=np.float32).reshape(1, 1, -1))
    return conv(x).squeeze().numpy()


def running_mean_biased(signal, n):
    conv = torch.nn.Conv1d(1, 1, kernel_size=2 * n + 1)
    conv.weight.requires_grad_(False)
    x = torch.from_numpy(np.asarray(signal, dtype=np.float32).reshape(1, 1, -1))
    return conv(x).squeeze().numpy()
'''


def test_a_layer_whose_every_parameter_is_switched_off_gives_no_graph(tmp_path):
    """KPConv's plotting helper smooths a curve with a `Conv1d(..., bias=False)` whose weight
    it switches off: the output needs no grad and `.numpy()` works (judged false). With a
    bias still trainable the output is part of a graph and the crash stays reported."""
    (tmp_path / "plots.py").write_text(SMOOTHING)
    assert [f.line for f in _found(tmp_path, ("TR502",))] == [18]


LOCAL_VIEWER = '''import pickle

from flask import Flask, jsonify, request

app = Flask(__name__)


@app.route("/api/read_detection", methods=["POST"])
def read_detection():
    path = request.json["det_path"]
    with open(path, "rb") as f:
        annos = pickle.load(f)
    return jsonify(count=len(annos))


@app.route("/api/upload", methods=["POST"])
def upload():
    annos = pickle.loads(request.get_data())
    return jsonify(count=len(annos))


if __name__ == "__main__":
    app.run(host="127.0.0.1", port=16666)
'''


def test_a_local_viewer_opening_a_file_a_request_names_is_medium(tmp_path):
    """second.pytorch's KITTI viewer: a Flask app on 127.0.0.1 unpickles a results file whose
    path the browser sends (judged noise: the request picks one of the operator's files, it
    does not supply the bytes). Bytes from the request, or the same server on 0.0.0.0, stay
    high."""
    (tmp_path / "local").mkdir()
    (tmp_path / "local" / "main.py").write_text(LOCAL_VIEWER)
    found = _confidences(tmp_path / "local", ("TR103",))
    assert found == {12: "medium", 18: "high"}, found
    (tmp_path / "open").mkdir()
    (tmp_path / "open" / "main.py").write_text(LOCAL_VIEWER.replace("127.0.0.1", "0.0.0.0"))
    found = _confidences(tmp_path / "open", ("TR103",))
    assert found == {12: "high", 18: "high"}, found


TELEMETRY = '''from posthog import Posthog

client = Posthog(project_api_key="phc_tk7IUlV7Q7lEa9LNbXxyC1sMWlCqiW6DkHyhJrbWMCS", host="https://eu.posthog.com")
stripe_key = "pk_live_51HxYzAbCdEfGhIjKlMnOpQrStUvWx"
api_key = "sk_live_9f8e7d6c5b4a39281726354a5b6c7d8e"
'''

SCRIPT_A = '''import openai

api_key = "050fd3a7c2b94e61a8f0d2c3b4e5f6a7"
client = openai.AzureOpenAI(api_key=api_key)
'''

SCRIPT_B = '''import openai

api_key = "050fd3a7c2b94e61a8f0d2c3b4e5f6a7"
openai_api_key = "7cf7a1b2c3d4e5f60718293a4b5c6d7e"
'''


def test_public_keys_are_no_leak_and_one_secret_in_two_files_is_one_finding(tmp_path):
    """metavoice's PostHog project key (`phc_`, public by design: judged false) and LESS's
    one Azure key pasted into two scripts (judged a repeat). A secret key stays reported,
    and a different secret in the second file is its own finding."""
    (tmp_path / "tel").mkdir()
    (tmp_path / "tel" / "posthog.py").write_text(TELEMETRY)
    assert [f.line for f in _found(tmp_path / "tel", ("TR107",))] == [5]
    (tmp_path / "eval").mkdir()
    (tmp_path / "eval" / "a.py").write_text(SCRIPT_A)
    (tmp_path / "eval" / "b.py").write_text(SCRIPT_B)
    found = _merged(tmp_path / "eval", ("TR107",))
    assert sorted((f.path.rsplit("/", 1)[-1], f.line, len(f.related)) for f in found) == [("a.py", 3, 1), ("b.py", 4, 0)]


NARROWED = '''from transformers import AutoModelForCausalLM


def load_model(name):
    if name.startswith("meta-llama/Llama-2-70b"):
        return AutoModelForCausalLM.from_pretrained(name, trust_remote_code=True)
    if name.startswith("someuser/"):
        return AutoModelForCausalLM.from_pretrained(name, trust_remote_code=True)
    return AutoModelForCausalLM.from_pretrained(name)
'''


def test_a_model_id_pinned_by_the_enclosing_test_names_its_owner(tmp_path):
    """vec2text: `trust_remote_code=True` under `elif name.startswith("meta-llama/Llama-2-70b")`
    in a package (judged false: Meta's own repositories). The same under a community owner's
    prefix stays high."""
    pkg = _package(tmp_path / "proj", "proj")
    (pkg / "models.py").write_text(NARROWED)
    found = _confidences(tmp_path / "proj", ("TR104",))
    assert found == {6: "medium", 8: "high"}, found


FOLDING = '''import torch
import torch.nn as nn


class Folding(nn.Module):
    def __init__(self, grid):
        super().__init__()
        a = torch.linspace(-0.05, 0.05, steps=grid).view(1, grid).expand(grid, grid).reshape(1, -1)
        self.seed = torch.cat([a, a], dim=0).view(1, 2, grid ** 2)
        self.proj = nn.Conv1d(2, 3, 1)

    def forward(self, feature):
        b = feature.shape[0]
        seed = self.seed.unsqueeze(2).expand(b, -1, 4, -1)
        seed = seed.reshape(b, 2, -1).to(feature.device)
        return self.proj(seed)


class Unmoved(nn.Module):
    def __init__(self, grid):
        super().__init__()
        self.seed = torch.linspace(-0.05, 0.05, steps=grid).view(1, 1, grid)
        self.proj = nn.Conv1d(1, 3, 1)

    def forward(self, feature):
        seed = self.seed.expand(feature.shape[0], -1, -1)
        seed = seed.reshape(feature.shape[0], 1, -1)
        return self.proj(seed) + feature
'''


def test_an_attribute_moved_through_a_local_after_shape_methods_is_moved_where_used(tmp_path):
    """Point-BERT's folding seed: `seed = self.folding_seed.unsqueeze(2).expand(...)`, then
    `seed = seed.reshape(...).to(feature.device)` (judged false). The same chain without the
    move stays reported."""
    (tmp_path / "dvae.py").write_text(FOLDING)
    assert [f.line for f in _found(tmp_path, ("TR511",))] == [22]


NODE_SCRIPT = '''import torch
import torch.nn as nn

STATE = ["epoch"]
epoch = 0
model = nn.Linear(4, 2)
if torch.cuda.device_count() > 1:
    model = nn.DataParallel(model)
optimizer = torch.optim.Adam(model.parameters())


def checkpoint_path(stage):
    return f"checkpoint_{stage}.pt"


def save_checkpoint(stage):
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                **{x: globals()[x] for x in STATE}}, checkpoint_path(stage))


def load_best_model(stage):
    model.load_state_dict(torch.load(checkpoint_path(stage))["model"])
'''

ANALYSIS_SCRIPT = '''import torch
import torch.nn as nn

model = nn.Linear(4, 2)
out = {"model": model.state_dict(), "predictions": torch.zeros(3)}
torch.save(out, "outputs_0.pt")
'''


def test_a_load_reads_its_own_scripts_save_with_those_keys(tmp_path):
    """rtdl: `load_best_model` reads back what the same script's `save_checkpoint` wrote from
    the same (maybe wrapped) model; linking it to another script's `outputs_0.pt` with a
    `model` key was judged false. Without a save of its own holding that key, the other
    script's is the link."""
    (tmp_path / "own").mkdir()
    (tmp_path / "own" / "node.py").write_text(NODE_SCRIPT)
    (tmp_path / "own" / "analysis.py").write_text(ANALYSIS_SCRIPT)
    assert not _found(tmp_path / "own", ("TR517",))
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "node.py").write_text(NODE_SCRIPT.replace('{"model": model', '{"weights": model'))
    (tmp_path / "other" / "analysis.py").write_text(ANALYSIS_SCRIPT)
    assert [f.line for f in _found(tmp_path / "other", ("TR517",))] == [22]


TRAILING_COMMA = '''import torch.nn as nn


class Upsample(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.sample = nn.Conv2d(channels, channels, 3, padding=1),
        self.pair = (nn.Conv2d(channels, channels, 1), nn.Conv2d(channels, channels, 1))

    def forward(self, x):
        return self.sample(x) + self.pair[0](x) + self.pair[1](x)
'''


def test_a_stray_trailing_comma_is_named_as_such(tmp_path):
    """VQ-Diffusion's `self.sample = nn.Conv2d(...),`: a trailing comma, not a container; the
    fix is to delete it (a `ModuleList` would not be callable either: judged a wrong
    diagnosis). A real tuple of layers keeps the container message."""
    (tmp_path / "vqgan.py").write_text(TRAILING_COMMA)
    found = {f.line: f.message for f in _found(tmp_path, ("TR508",))}
    assert sorted(found) == [7, 8]
    assert "trailing comma" in found[7] and "delete the comma" in found[7]
    assert "nn.ModuleList" in found[8] and "comma" not in found[8]


def test_install_steps_in_an_install_file_or_a_conda_create_line_set_the_target_torch(tmp_path):
    """Oscar's INSTALL.md (`conda install pytorch==1.2.0 ...`) and ViLBERT's README (`conda
    create -n vilbert-mt python=3.6`): code written for torch 1.x, where TR520's weights-only
    default and TR429's removed `torch._six` do not apply (judged noise). A README naming
    only a floor, or a Python that today's torch supports, sets nothing."""
    from torchreview.config import detect_target_torch

    (tmp_path / "oscar").mkdir()
    (tmp_path / "oscar" / "INSTALL.md").write_text(
        "conda create --name oscar python=3.7\nconda install pytorch==1.2.0 torchvision==0.4.0 -c pytorch\n")
    (tmp_path / "oscar" / "train.py").write_text("import torch\n")
    assert detect_target_torch(str(tmp_path / "oscar" / "train.py")) == (1, 2)
    (tmp_path / "vilbert").mkdir()
    (tmp_path / "vilbert" / "README.md").write_text(
        "conda create -n vilbert-mt python=3.6\nconda install pytorch torchvision cudatoolkit=10.0 -c pytorch\n")
    assert detect_target_torch(str(tmp_path / "vilbert")) == (1, 10)
    (tmp_path / "new").mkdir()
    (tmp_path / "new" / "README.md").write_text(
        "conda create -n new python=3.11\npip install torch>=1.13\nRequires PyTorch 1.13 or later.\n")
    assert detect_target_torch(str(tmp_path / "new")) is None


LOCAL_MODELS = '''from transformers import AutoModel

MODEL_PATH = "/root/autodl-tmp/OpenBMB/MiniCPM-o-2_6"
PLACEHOLDER = "<your model path>"
MODEL_ID = "someuser/custom-encoder"


def load_local():
    return AutoModel.from_pretrained(MODEL_PATH, trust_remote_code=True)


def load_placeholder():
    return AutoModel.from_pretrained(PLACEHOLDER, trust_remote_code=True)


def load_hub():
    return AutoModel.from_pretrained(MODEL_ID, trust_remote_code=True)
'''


def test_a_model_folder_held_in_a_name_or_a_placeholder_is_a_local_folder(tmp_path):
    """self-llm's tutorials: `model_path = "/root/autodl-tmp/..."` (a folder the reader
    downloaded) and `"请修改我！！！"` ("edit me") handed to `from_pretrained(...,
    trust_remote_code=True)` (judged noise): a local folder, advice at medium confidence. A
    Hub id bound to a name stays high where the code ships."""
    pkg = _package(tmp_path / "proj", "proj")
    (pkg / "models.py").write_text(LOCAL_MODELS)
    found = {f.line: (f.confidence, f.kind) for f in _found(tmp_path / "proj", ("TR104",), advice_codes=("TR104",))}
    assert found == {9: ("medium", "advice"), 13: ("medium", "advice"), 17: ("high", "defect")}, found


FEATURES = '''import torch
import torch.nn as nn
from torch.utils.data import DataLoader


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU())

    def forward(self, x):
        return self.net(x)


def test_model(model, training_set):
    model.eval()
    loader = DataLoader(training_set, batch_size=1, shuffle=True)
    with torch.no_grad():
        return [model(x) for x, _ in loader]


def train_model(model, training_set, optimizer):
    loader = DataLoader(training_set, batch_size=1, shuffle=True)
    for x, y in loader:
        optimizer.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
'''


def test_a_one_sample_loader_of_an_evaluation_function_is_fine_for_batchnorm(tmp_path):
    """TF-C's `test_model`: `model.eval()`, then a shuffled `batch_size=1` loader over the
    training set to extract features under no_grad (judged false). The same loader in the
    training function stays reported."""
    (tmp_path / "train_model.py").write_text(FEATURES)
    assert [f.line for f in _found(tmp_path, ("TR512",))] == [23]


SPEED_TEST = '''import time

import torch
import torch.nn.functional as F


def model_speed_test(modul, batch_size=12):
    net = modul.net
    x = torch.ones([batch_size, 1, 128, 998]).cuda()
    target = torch.ones([batch_size, 527]).cuda()
    optimizer = torch.optim.SGD(net.parameters(), lr=0.001)
    t1 = time.time()
    for i in range(10):
        y_hat = net(x)
        loss = F.binary_cross_entropy_with_logits(y_hat, target)
        loss.backward()
        optimizer.step()
    t2 = time.time()
    print("warmup done:", t2 - t1)
    x = torch.ones([batch_size, 1, 128, 998]).cuda()


def train(net, loader, optimizer):
    for x, target in loader:
        loss = F.binary_cross_entropy_with_logits(net(x), target)
        loss.backward()
        optimizer.step()
'''


def test_a_timed_loop_over_constant_inputs_of_an_unknown_network_is_a_speed_test(tmp_path):
    """PaSST's `model_speed_test`: `net = modul.net`, constant `torch.ones` inputs, the loop
    between two `time.time()` reads, no `zero_grad` (judged noise: a throughput probe whose
    gradients nobody uses). A real training loop stays high."""
    (tmp_path / "ex.py").write_text(SPEED_TEST)
    found = _confidences(tmp_path, ("TR401",))
    assert found == {13: "medium", 24: "high"}, found


ACCEL = '''import torch
from accelerate import Accelerator

gradient_accumulation_steps = 1
accelerator = Accelerator(gradient_accumulation_steps=gradient_accumulation_steps)


def train(model, loader, optimizer):
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    for x, y in loader:
        with accelerator.accumulate(model):
            loss = torch.nn.functional.mse_loss(model(x), y)
            accelerator.backward(loss)
            accelerator.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            optimizer.zero_grad()
'''


def test_clipping_inside_accumulate_of_a_one_step_accelerator_is_fine(tmp_path):
    """pytorch-adventures: `gradient_accumulation_steps = 1` at the top of the script, so every
    micro-step inside `accumulate()` is a sync step (judged false). Four steps stay reported."""
    (tmp_path / "one").mkdir()
    (tmp_path / "one" / "train_vae.py").write_text(ACCEL)
    assert not _found(tmp_path / "one", ("TR416",))
    (tmp_path / "four").mkdir()
    (tmp_path / "four" / "train_vae.py").write_text(ACCEL.replace("gradient_accumulation_steps = 1",
                                                                  "gradient_accumulation_steps = 4"))
    assert [f.line for f in _found(tmp_path / "four", ("TR416",))] == [14]


FROZEN_PARAMETER = '''import torch
import torch.nn as nn


class TimeEmbedding(nn.Module):
    def __init__(self, dim, device):
        super().__init__()
        self.inv_freqs = nn.Parameter(1.0 / (10000 ** (torch.arange(0, dim, 2).float() / dim)),
                                      requires_grad=False).to(device)

    def forward(self, t):
        return t[:, None] * self.inv_freqs


class Scale(nn.Module):
    def __init__(self, dim, device):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(dim)).to(device)

    def forward(self, x):
        return x * self.scale
'''


def test_a_frozen_parameter_moved_at_construction_is_medium(tmp_path):
    """pytorch-adventures' time embedding: `nn.Parameter(freqs, requires_grad=False).to(device)`
    loses the registration, but it is a constant rebuilt on construction (judged noise). A
    trainable one stays high."""
    (tmp_path / "embed.py").write_text(FROZEN_PARAMETER)
    found = _confidences(tmp_path, ("TR511",))
    assert found == {8: "medium", 18: "high"}, found


LOCAL_DB = '''from neo4j import GraphDatabase

url = "bolt://localhost:7687"
username = "neo4j"
password = "docdb@123"
driver = GraphDatabase.driver(url, auth=(username, password))
api_key = "4fa9c2b81e7d4c3a9b6f0e1d2c3b4a59"
'''


def test_the_password_of_a_local_database_is_medium(tmp_path):
    """LLM-Finetuning's notebooks: `password = "docdb@123"` for a Neo4j at
    `bolt://localhost:7687` (judged noise twice). An API key in the same file, or the same
    password for a remote host, stays high."""
    (tmp_path / "local").mkdir()
    (tmp_path / "local" / "graph.py").write_text(LOCAL_DB)
    found = _confidences(tmp_path / "local", ("TR107",))
    assert found == {5: "medium", 7: "high"}, found
    (tmp_path / "remote").mkdir()
    (tmp_path / "remote" / "graph.py").write_text(LOCAL_DB.replace("localhost", "db.example.com"))
    found = _confidences(tmp_path / "remote", ("TR107",))
    assert found == {5: "high", 7: "high"}, found


POSE_MODEL = '''import torch
import torch.nn as nn
import tops


class PoseModel(nn.Module):
    def __init__(self, weight_path):
        super().__init__()
        self.head = nn.Sequential(nn.Linear(4, 2), nn.Dropout(0.2))
        self.backbone = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4))
        ckpt = torch.load(weight_path, map_location=tops.get_device())
        self.load_state_dict(ckpt["state_dict"])
        self.backbone.eval()
        self.head.eval()

    def forward(self, x):
        return self.head(self.backbone(x))
'''

POSE_USER = '''import torch

from .pose import PoseModel


@torch.no_grad()
def keypoints(path, x):
    pose_model = PoseModel(path)
    return pose_model(x)
'''


def test_a_helper_call_inside_a_torch_load_argument_builds_no_submodule(tmp_path):
    """deep_privacy2's `VitPoseModel`: its constructor switches both submodules to eval, but
    `torch.load(..., map_location=tops.get_device())` made the class's content unknown (an
    external call that might build a module), so two callers were told to call `.eval()`
    (judged false). A class that does not switch its submodules stays reported."""
    pkg = _package(tmp_path / "proj", "proj")
    (pkg / "pose.py").write_text(POSE_MODEL)
    (pkg / "infer.py").write_text(POSE_USER)
    assert not _found(tmp_path / "proj", ("TR207",))
    (pkg / "pose.py").write_text(POSE_MODEL.replace("        self.backbone.eval()\n        self.head.eval()\n", ""))
    assert [f.line for f in _found(tmp_path / "proj", ("TR207",))] == [9]


COPIED_SCRIPT = '''import argparse

import torch
import torch.nn as nn

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=10)
parser.add_argument("--lr", type=float, default=0.01)
parser.add_argument("--batch_size", type=int, default=32)
parser.add_argument("--hidden", type=int, default=64)
parser.add_argument("--seed", type=int, default=1)
args = parser.parse_args()
torch.manual_seed(args.seed)
model = nn.Sequential(nn.Linear(8, args.hidden), nn.ReLU(), nn.Linear(args.hidden, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
criterion = nn.CrossEntropyLoss()
data = [(torch.randn(args.batch_size, 8), torch.randint(0, 2, (args.batch_size,))) for _ in range(10)]


def train_one_epoch(epoch):
    model.train()
    total_loss = 0.0
    for inputs, targets in data:
        outputs = model(inputs)
        loss = criterion(outputs, targets)
        loss.backward()
        optimizer.step()
        total_loss += loss.item()
    print("epoch", epoch, "loss", total_loss / len(data))


for epoch in range(args.epochs):
    train_one_epoch(epoch)
torch.save(model.state_dict(), "model_final.pth")
'''


def test_one_finding_in_copies_of_a_script_whose_flagged_line_was_edited(tmp_path):
    """PAConv's `part_seg/main.py` and `main_ddp.py`: the same TR519 comparison, edited in the
    DDP copy (`and main_process()`), was two findings (judged a repeat). Copies now give one
    finding with the other as a related location; an unrelated script stays its own."""
    (tmp_path / "main.py").write_text(COPIED_SCRIPT)
    (tmp_path / "main_ddp.py").write_text(COPIED_SCRIPT.replace(
        "    for inputs, targets in data:", "    for step, (inputs, targets) in enumerate(data):").replace(
        "model_final.pth", "model_final_ddp.pth"))
    (tmp_path / "other.py").write_text(OTHER_TRAINER)
    found = _merged(tmp_path, ("TR401",))
    assert [(f.path.rsplit("/", 1)[-1], [r.path.rsplit("/", 1)[-1] for r in f.related]) for f in found] == \
        [("main.py", ["main_ddp.py"]), ("other.py", [])]


OTHER_TRAINER = '''import torch


def fit(batches):
    net = torch.nn.Linear(4, 1)
    opt = torch.optim.Adam(net.parameters())
    for x, y in batches:
        loss = torch.nn.functional.mse_loss(net(x), y)
        loss.backward()
        opt.step()
'''


INFERER = '''import torch
import torch.nn as nn
import torch.nn.functional as F


class Inferer:
    def __init__(self, path):
        self.model = nn.Sequential(nn.Linear(4, 3))
        self.model.load_state_dict(torch.load(path))
        self.model.eval()
        torch.autograd.set_grad_enabled(False)

    def evaluate(self, x):
        return F.softmax(self.model(x), dim=-1).numpy()
'''


def test_a_constructor_that_turns_autograd_off_covers_the_methods(tmp_path):
    """ABSA-PyTorch's `Inferer.__init__` ends with `torch.autograd.set_grad_enabled(False)`:
    `evaluate()` runs on a constructed instance with autograd off, so `.numpy()` cannot raise
    (TR502 judged false). Without the switch the crash stays reported."""
    (tmp_path / "on").mkdir()
    (tmp_path / "on" / "infer_example.py").write_text(INFERER)
    assert not _found(tmp_path / "on", ("TR502",))
    (tmp_path / "off").mkdir()
    (tmp_path / "off" / "infer_example.py").write_text(INFERER.replace(
        "        torch.autograd.set_grad_enabled(False)\n", ""))
    assert [f.line for f in _found(tmp_path / "off", ("TR502",))] == [13]


PROVOKED = '''import torch

w = torch.randn(3, requires_grad=True)
try:
    w += 1
except RuntimeError as e:
    print("in-place update of a leaf fails:", e)

try:
    w.numpy()
except (TypeError, RuntimeError) as e:
    print(e)

try:
    w.numpy()
except Exception:
    pass

w.numpy()
'''


def test_a_crash_provoked_inside_a_try_that_names_the_error_is_a_demonstration(tmp_path):
    """pytorch-workshop's lessons provoke the in-place-leaf and `.numpy()` errors inside
    `try: ... except RuntimeError as e: print(e)` (TR501 and TR502 judged false). A broad
    `except Exception` swallowing it, and the same call outside any `try`, stay reported."""
    (tmp_path / "lesson.py").write_text(PROVOKED)
    found = _found(tmp_path, ("TR501", "TR502"))
    assert sorted(r.line for f in found for r in (f, *f.related)) == [15, 19]


def test_a_password_in_a_test_file_is_a_fixture(tmp_path):
    """LibrePhotos' unit test patches `"demo1234"` into the environment as the admin password
    (judged false). A token in the same test, and the password in application code, stay
    high."""
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_setup.py").write_text(
        'import os\nfrom unittest import mock\n\nadmin_password = "demo1234x"\n'
        'hf_token = "hf_Qm7RtZp2LxV9nKc4WbY8sDf6GhJ1uEa3NoTi"\n')
    (tmp_path / "settings.py").write_text('admin_password = "prod9876y"\n')
    found = {(f.path.rsplit("/", 1)[-1], f.line): f.confidence for f in _found(tmp_path, ("TR107",))}
    assert found == {("test_setup.py", 4): "medium", ("test_setup.py", 5): "high", ("settings.py", 1): "high"}, found


BACKPACK = '''from transformers import AutoModel, AutoTokenizer, GPT2LMHeadModel


class BackpackLMHeadModel(GPT2LMHeadModel):
    pass


def create(name="someuser/backpack-gpt2"):
    tokenizer = AutoTokenizer.from_pretrained("gpt2", trust_remote_code=True)
    model = BackpackLMHeadModel.from_pretrained(name, trust_remote_code=True)
    other = AutoModel.from_pretrained(name, trust_remote_code=True)
    return tokenizer, model, other
'''


def test_a_project_class_or_a_canonical_name_runs_no_repository_code(tmp_path):
    """pyvene: `BackpackGPT2LMHeadModel.from_pretrained(name, trust_remote_code=True)` on the
    project's own class, and `AutoTokenizer.from_pretrained("gpt2", ...)`, a canonical name
    of a natively supported model (both judged false). An `Auto` class on the same user-named
    repository stays high."""
    pkg = _package(tmp_path / "proj", "proj")
    (pkg / "backpack.py").write_text(BACKPACK)
    assert _confidences(tmp_path / "proj", ("TR104",)) == {9: "medium", 11: "high"}


NORMALISED_ON_DEVICE = '''import torch
from torch.utils.data import DataLoader, TensorDataset

device = "cuda" if torch.cuda.is_available() else "cpu"
X = torch.stack([torch.zeros(1, 4)] * 8).to(device)
X = (X - X.mean()) / X.std()
Y = torch.stack([torch.zeros(1, 4)] * 8).to(device)
Y = (Y < 0.5).float()
model = torch.nn.Linear(4, 4).to(device)
dataloader = DataLoader(TensorDataset(X, Y), batch_size=4, shuffle=True)
for x, y in dataloader:
    loss = ((model(x) - y) ** 2).mean()
'''


def test_tensors_normalised_after_the_move_stay_on_the_device(tmp_path):
    """info8010's U-Net lesson: `X = X.to(device)`, then `X = (X - X.mean()) / X.std()` and
    `Y = (Y < 0.5).float()` before `TensorDataset(X, Y)`: the batches are on the device (TR403
    judged false; the right-hand side of `X = ...X...` reads the previous `X`, and a
    comparison stays on its operands' device). Without the moves the finding stays."""
    (tmp_path / "on").mkdir()
    (tmp_path / "on" / "unet.py").write_text(NORMALISED_ON_DEVICE)
    assert not _found(tmp_path / "on", ("TR403",))
    (tmp_path / "off").mkdir()
    (tmp_path / "off" / "unet.py").write_text(NORMALISED_ON_DEVICE.replace(".to(device)\nX =", "\nX =").replace(
        "* 8).to(device)\nY =", "* 8)\nY ="))
    assert [f.line for f in _found(tmp_path / "off", ("TR403",))] == [12]
