"""Classes of findings judged false or noise on blind tests, fixed in the twentieth session
(2026-11-30), each as a near-miss that must change beside a positive that must stay."""
from __future__ import annotations

import json

from residue_helpers import found as _found, write as _write
from torchreview.engine.runner import Settings, run_review


def _notebook(*cells: str) -> str:
    return json.dumps({"cells": [{"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
                                  "source": c.splitlines(keepends=True)} for c in cells],
                       "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


# --- merge: sibling notebook copies whose messages name their own file ------------------------------
# (pytorch-tutorials-venkat: one U-Net notebook copied once per loss function, each saving the whole
# module and loading it back; TR520's message names the notebook that saves, so the copies' messages
# differed by their own paths and four of seven findings were judged repeats, blind test 73)

UNET_CELLS = (
    '''import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
''',
    '''class DoubleConv(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.block = nn.Sequential(
            nn.Conv2d(in_channels, out_channels, kernel_size=3, padding=1),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(inplace=True),
            nn.Conv2d(out_channels, out_channels, kernel_size=3, padding=1),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(inplace=True),
        )

    def forward(self, inputs):
        return self.block(inputs)


class UNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.down_one = DoubleConv(3, 16)
        self.down_two = DoubleConv(16, 32)
        self.pool_layer = nn.MaxPool2d(2)
        self.up_sample = nn.ConvTranspose2d(32, 16, kernel_size=2, stride=2)
        self.up_one = DoubleConv(32, 16)
        self.out_conv = nn.Conv2d(16, 1, kernel_size=1)

    def forward(self, inputs):
        first = self.down_one(inputs)
        second = self.down_two(self.pool_layer(first))
        merged = torch.cat([self.up_sample(second), first], dim=1)
        return self.out_conv(self.up_one(merged))
''',
    '''images = torch.rand(64, 3, 32, 32)
masks = (torch.rand(64, 1, 32, 32) > 0.5).float()
train_loader = DataLoader(TensorDataset(images, masks), batch_size=8, shuffle=True)
unet = UNet()
optimizer = torch.optim.Adam(unet.parameters(), lr=1e-3)
''',
    '''for epoch in range(5):
    unet.train()
    for batch_images, batch_masks in train_loader:
        optimizer.zero_grad()
        predictions = unet(batch_images)
        loss = {loss}
        loss.backward()
        optimizer.step()
    print("epoch", epoch, "loss", loss.item())
''',
    '''torch.save(unet, "models/{name}.pt")
''',
    '''unet = torch.load("models/{name}.pt")
unet.eval()
''',
)


def _unet_notebook(name: str, loss: str) -> str:
    return _notebook(*(c.replace("{name}", name).replace("{loss}", loss) for c in UNET_CELLS))


def test_sibling_notebook_copies_naming_themselves_are_one_finding(tmp_path):
    _write(tmp_path, {
        "unet/bce.ipynb": _unet_notebook("unet_bce", "F.binary_cross_entropy_with_logits(predictions, batch_masks)"),
        "unet/mse.ipynb": _unet_notebook("unet_mse", "F.mse_loss(torch.sigmoid(predictions), batch_masks)"),
        "unet/dice.ipynb": _unet_notebook("unet_dice", "1 - (2 * (torch.sigmoid(predictions) * batch_masks).sum() + 1) "
                                                      "/ (torch.sigmoid(predictions).sum() + batch_masks.sum() + 1)"),
    })
    report = run_review([str(tmp_path)], Settings(rule_codes=("TR520",), jobs=1, min_confidence="low"))
    assert len(report.findings) == 1, [(f.path, f.message) for f in report.findings]
    assert len(report.findings[0].parts) == 3  # a baseline or --since still sees every place


def test_different_notebooks_saving_whole_modules_keep_their_findings(tmp_path):
    # near-miss: the same mistake in two notebooks that are not copies of each other
    other = _notebook(
        "import torch\nfrom torch import nn\n",
        "encoder = nn.Sequential(nn.Linear(784, 64), nn.ReLU(), nn.Linear(64, 16))\n",
        "torch.save(encoder, 'encoder.pt')\n",
        "encoder = torch.load('encoder.pt')\nencoder.eval()\n",
    )
    _write(tmp_path, {"unet/bce.ipynb": _unet_notebook("unet_bce", "F.binary_cross_entropy_with_logits("
                                                                   "predictions, batch_masks)"),
                      "autoencoder/encoder.ipynb": other})
    found = _found(tmp_path, ("TR520",))
    report = run_review([str(tmp_path)], Settings(rule_codes=("TR520",), jobs=1, min_confidence="low"))
    assert sorted(f.path.rsplit("/", 1)[-1] for f in found) == ["bce.ipynb", "encoder.ipynb"]
    assert len(report.findings) == 2 and all(not f.related for f in report.findings)


# --- TR209: a synchronize the rest of its block already waits after ----------------------------------
# (DNA's distillation loop: `torch.cuda.synchronize()` in the gradient-accumulation micro-step loop, then
# `losses.update(loss.item())` in both arms of `if not args.distributed:`; judged noise, blind test 73)

SYNC_LOOP = '''import torch


def train(model, loader, optimizer, criterion, meter, args):
    model.cuda()
    for inputs, targets in loader:
        optimizer.zero_grad()
        for micro in range(args.update_frequency):
            loss = criterion(model(inputs.cuda()), targets.cuda())
            loss.backward()
            torch.cuda.synchronize()
{after}
        optimizer.step()
'''

BOTH_ARMS = '''            if not args.distributed:
                meter.update(loss.item())
            else:
                meter.update(reduce(loss).item())'''
ONE_ARM = '''            if args.verbose:
                meter.update(loss.item())'''


def _sync(tmp_path, after: str) -> list:
    return [f for f in _found(_write(tmp_path, {"train.py": SYNC_LOOP.replace("{after}", after)}), ("TR209",))
            if "synchronize" in f.message]


def test_synchronize_before_a_read_on_every_path_is_low(tmp_path):
    found = _sync(tmp_path, BOTH_ARMS)
    assert len(found) == 1 and found[0].confidence == "low" and "already waits" in found[0].message


def test_synchronize_before_a_read_on_one_arm_only_stays(tmp_path):
    found = _sync(tmp_path, ONE_ARM)
    assert len(found) == 1 and found[0].confidence == "high", [(f.confidence, f.message) for f in found]


# --- TR511: moved at the point of use with sizes, 0-dim numbers, fixed inputs, already-placed leaves ------
# (blind test 73: torchtrainer's `torch.tile(self.filter, (channels, 1, 1, 1)).to(x.device)`; an SNN's
# `torch.exp(torch.tensor(-dt / tau_m))` with `dt=1.0`; a GAN tutorial's `validation_z` noise fed to
# `self(z)`; `torch.rand(1, requires_grad=True, device=device).to(device)` -- all judged false)

TILED = '''import torch
import torch.nn as nn
import torch.nn.functional as F


class InterpolateConv(nn.Module):
    def __init__(self):
        super().__init__()
        self.filter = torch.tensor([[0.25, 0.5, 0.25], [0.5, 1.0, 0.5], [0.25, 0.5, 0.25]])

    def forward(self, x):
        channels = x.shape[1]
        weight = {use}
        return F.conv_transpose2d(x, weight, stride=2, padding=1, groups=channels)
'''


def test_constant_moved_after_tiling_by_sizes_is_silent(tmp_path):
    text = TILED.replace("{use}", "torch.tile(self.filter, (channels, 1, 1, 1)).to(x.device)")
    assert not _found(_write(tmp_path, {"layers.py": text}), ("TR511",))


def test_constant_tiled_with_a_tensor_operand_still_reported(tmp_path):
    # near-miss: the CPU constant meets `x` before the move
    text = TILED.replace("{use}", "torch.mul(self.filter, x.mean()).to(x.device)")
    assert [f.code for f in _found(_write(tmp_path, {"layers.py": text}), ("TR511",))] == ["TR511"]


NEURON = '''import torch
import torch.nn as nn


class LIF(nn.Module):
    def __init__(self, size, dt=1.0, tau_m=20.0, steps=4):
        super().__init__()
        self.fc = nn.Linear(size, size)
        self.alpha = {alpha}

    def forward(self, x):
        v = torch.zeros_like(x)
        for _ in range(4):
            v = self.alpha * v + self.fc(x)
        return v
'''


def test_zero_dim_tensor_of_float_parameters_is_silent(tmp_path):
    text = NEURON.replace("{alpha}", "torch.exp(torch.tensor(-dt / tau_m))")
    assert not _found(_write(tmp_path, {"neuron.py": text}), ("TR511",))


def test_tensor_of_int_parameter_arithmetic_still_reported(tmp_path):
    # near-miss: `steps` defaults to an int, a size as often as a number: a table of `steps * 2` values
    text = NEURON.replace("{alpha}", "torch.ones(steps * 2)")
    assert [f.code for f in _found(_write(tmp_path, {"neuron.py": text}), ("TR511",))] == ["TR511"]


GAN = '''import torch
import torch.nn as nn


class GAN(nn.Module):
    def __init__(self, latent_dim=100):
        super().__init__()
        self.generator = nn.Sequential(nn.Linear(latent_dim, 784), nn.Tanh())
        self.{name} = torch.randn(6, latent_dim, requires_grad=True)

    def forward(self, z):
        return self.generator(z)

    def {method}(self):
        {body}
'''


def test_requires_grad_noise_fed_to_the_model_is_silent(tmp_path):
    text = GAN.replace("{name}", "validation_z").replace("{method}", "plot_imgs").replace(
        "{body}", "z = self.validation_z.type_as(self.generator[0].weight)\n        return self(z).cpu()")
    assert not _found(_write(tmp_path, {"gan.py": text}), ("TR511",))


def test_requires_grad_tensor_used_as_a_weight_still_reported(tmp_path):
    # near-miss: the tensor scales the output, a weight someone forgot to register
    text = GAN.replace("{name}", "scale").replace("{method}", "scaled").replace(
        "{body}", "return self.generator(torch.randn(6, 100)) * self.scale.sum()")
    assert [f.code for f in _found(_write(tmp_path, {"gan.py": text}), ("TR511",))] == ["TR511"]


LEAF = '''import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
w1 = torch.rand(1, requires_grad=True{where}).to(device)
optimizer = torch.optim.Adam([w1], lr=1e-2)
'''


def test_factory_placed_on_the_device_it_is_moved_to_is_silent(tmp_path):
    assert not _found(_write(tmp_path, {"loss.py": LEAF.replace("{where}", ", device=device")}), ("TR511",))


def test_factory_on_the_cpu_moved_to_the_device_still_reported(tmp_path):
    assert [f.code for f in _found(_write(tmp_path, {"loss.py": LEAF.replace("{where}", "")}), ("TR511",))] == ["TR511"]


# --- TR518: a weights-only restore beside the full one ------------------------------------------------
# (MatchZoo's `Trainer.restore_model` (weights) next to `Trainer.restore` (model, optimizer, scheduler,
# early stopping); judged false, blind test 73)

TRAINER = '''import torch


class Trainer:
    def __init__(self, model, optimizer_lr, scheduler, loader, epochs, start_epoch=1):
        self._model, self._scheduler = model, scheduler
        self._optimizer = torch.optim.Adam(self._model.parameters(), lr=optimizer_lr)
        self._loader, self._epochs, self._start_epoch = loader, epochs, start_epoch

    def run(self):
        for epoch in range(self._start_epoch, self._epochs + 1):
            for x, y in self._loader:
                self._optimizer.zero_grad()
                loss = torch.nn.functional.mse_loss(self._model(x), y)
                loss.backward()
                self._optimizer.step()
            self._scheduler.step()
            self.save(epoch)

    def save(self, epoch):
        torch.save({"model": self._model.state_dict(), "optimizer": self._optimizer.state_dict(),
                    "scheduler": self._scheduler.state_dict(), "epoch": epoch}, "trainer.pt")
        torch.save(self._model.state_dict(), "model.pt")

    def restore_model(self, checkpoint):
        """Restore model.

        :param checkpoint: A checkpoint from which to continue training.
        """
        state = torch.load(checkpoint, weights_only=True)
        self._model.load_state_dict(state)
{full}
'''
FULL = '''
    def restore(self, checkpoint):
        state = torch.load(checkpoint, weights_only=True)
        self._model.load_state_dict(state["model"])
        self._optimizer.load_state_dict(state["optimizer"])
        self._scheduler.load_state_dict(state["scheduler"])
        self._start_epoch = state["epoch"] + 1
'''


def test_weights_only_restore_beside_a_full_restore_is_silent(tmp_path):
    assert not _found(_write(tmp_path, {"trainer.py": TRAINER.replace("{full}", FULL)}), ("TR518",))


def test_weights_only_restore_alone_is_still_reported(tmp_path):
    assert [f.code for f in _found(_write(tmp_path, {"trainer.py": TRAINER.replace("{full}", "")}), ("TR518",))]


# --- the model: a default built by a factory says what the argument is ------------------------------
# (MatchZoo's `self._optimizer = optimizer or optim.Adam(self._model.parameters())`: the trainer's
# optimizer had no kind, so the file did not "train" and its resume went unexamined; found while
# writing the TR518 near-miss above)

DEFAULTED = '''import torch


def train(model, loader, epochs, updater=None):
    upd = {value}
    for epoch in range(epochs):
        for x, y in loader:
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            upd.step()
'''


def test_or_default_built_by_a_factory_gives_its_kind(tmp_path):
    text = DEFAULTED.replace("{value}", "updater or torch.optim.Adam(model.parameters())")
    assert [f.code for f in _found(_write(tmp_path, {"train.py": text}), ("TR401",))] == ["TR401"]


def test_conditional_default_gives_its_kind(tmp_path):
    text = DEFAULTED.replace("{value}", "torch.optim.Adam(model.parameters()) if updater is None else updater")
    assert [f.code for f in _found(_write(tmp_path, {"train.py": text}), ("TR401",))] == ["TR401"]


def test_alternatives_of_different_kinds_give_none(tmp_path):
    # near-miss: a model or an optimizer, depending on the call: nothing known
    text = DEFAULTED.replace("{value}", "updater or torch.nn.Linear(4, 4)")
    assert not _found(_write(tmp_path, {"train.py": text}), ("TR401",))


# --- TR108: classes of well-known data libraries absent from the reviewing machine ---------------------
# (DA-MolDQN's experiment results pickle RDKit molecules: `rdkit.Chem.rdchem.Mol(<bytes>)`; without rdkit
# installed the scanner could not show the name is a class and called the file code-executing, nine
# times; judged false, blind test 74)

def test_tr108_rdkit_molecule_rebuilt_from_bytes_is_no_code_execution(tmp_path):
    from torchreview.artifacts import scan_files
    from torchreview.findings import Severity

    path = tmp_path / "results.pickle"
    # GLOBAL rdkit.Chem.rdchem.Mol, SHORT_BINBYTES b"mol", TUPLE1, REDUCE, STOP (bytes, never unpickled)
    path.write_bytes(b"\x80\x03crdkit.Chem.rdchem\nMol\nq\x00C\x03molq\x01\x85q\x02Rq\x03.")
    assert [f.severity for f in scan_files([str(path)]).findings] == [Severity.MEDIUM]


def test_tr108_unknown_function_of_a_missing_module_stays_critical(tmp_path):
    # near-miss: a name of the same missing library that is not a known class
    from torchreview.artifacts import scan_files
    from torchreview.findings import Severity

    path = tmp_path / "results.pickle"
    path.write_bytes(b"\x80\x03crdkit.Chem.rdchem\nrun_script\nq\x00C\x03molq\x01\x85q\x02Rq\x03.")
    assert [f.severity for f in scan_files([str(path)]).findings] == [Severity.CRITICAL]


# --- TR513: a DistributedSampler no loader is given ----------------------------------------------------
# (Tacotron2-PyTorch builds `train_sampler = DistributedSampler(ds)` under `if distributed:` but hands that
# branch's DataLoader `shuffle=True` and no sampler; the other branch's loaders take other samplers bound
# to the same name; judged false, blind test 74)

SAMPLERS = '''import torch
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler

from samplers import LengthSampler


def train(model, dataset, lengths, distributed, optimizer, epochs):
    if distributed:
        train_sampler = DistributedSampler(dataset)
        loader = DataLoader(dataset, batch_size=8, shuffle={shuffle}, num_workers=2{given})
    else:
        train_sampler = LengthSampler([n for n in lengths])
        loader = DataLoader(dataset, batch_size=8, sampler=train_sampler, num_workers=2)
    for epoch in range(epochs):
        for x, y in loader:
            optimizer.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()
'''


def test_distributed_sampler_no_loader_is_given_is_silent(tmp_path):
    text = SAMPLERS.replace("{shuffle}", "True").replace("{given}", "")
    assert not _found(_write(tmp_path, {"train.py": text}), ("TR513",))


def test_distributed_sampler_given_to_its_loader_still_reported(tmp_path):
    text = SAMPLERS.replace("{shuffle}", "False").replace("{given}", ", sampler=train_sampler")
    assert [f.code for f in _found(_write(tmp_path, {"train.py": text}), ("TR513",))] == ["TR513"]


# --- merge: one notebook repeating one habit about other names ------------------------------------------
# (ml_mipt_dafe's seminar: the softmax model fed to `loss_fn` in the training cell and again two cells
# later; a course notebook's `criterion(logps, y)` then `loss_func(y_hat, y)` on softmax outputs: the
# second of each judged a repeat, blind test 74)

NLL_CELLS = (
    "import torch\nfrom torch import nn\n",
    "model = nn.Sequential(nn.Linear(784, 64), nn.ReLU(), nn.Linear(64, 10), nn.Softmax(dim=1))\n"
    "criterion = nn.NLLLoss()\noptimizer = torch.optim.SGD(model.parameters(), lr=0.01)\n",
    "for images, labels in trainloader:\n    optimizer.zero_grad()\n    logps = model(images)\n"
    "    loss = criterion(logps, labels)\n    loss.backward()\n    optimizer.step()\n",
    "net = nn.Sequential(nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10), nn.Softmax(dim=1))\n"
    "loss_func = nn.NLLLoss()\nopt = torch.optim.Adam(net.parameters())\n",
    "for x, y in trainloader:\n    opt.zero_grad()\n    y_hat = net(x)\n    loss = loss_func(y_hat, y)\n"
    "    loss.backward()\n    opt.step()\n",
)


def test_one_habit_in_one_notebook_about_other_names_is_one_finding(tmp_path):
    _write(tmp_path, {"lesson.ipynb": _notebook(*NLL_CELLS)})
    report = run_review([str(tmp_path)], Settings(rule_codes=("TR413",), jobs=1, min_confidence="low"))
    assert len(report.findings) == 1 and len(report.findings[0].parts) == 2, [f.message for f in report.findings]


def test_one_habit_in_two_modules_keeps_two_findings(tmp_path):
    # near-miss: modules are not lessons; two scripts keep their own findings
    _write(tmp_path, {"a.py": NLL_CELLS[0] + NLL_CELLS[1] + "\n\ndef train(trainloader):\n" +
                      "".join("    " + line + "\n" for line in NLL_CELLS[2].splitlines()),
                      "b.py": NLL_CELLS[0] + NLL_CELLS[3] + "\n\ndef fit(trainloader):\n" +
                      "".join("    " + line + "\n" for line in NLL_CELLS[4].splitlines())})
    report = run_review([str(tmp_path)], Settings(rule_codes=("TR413",), jobs=1, min_confidence="low"))
    assert sorted(f.path.rsplit("/", 1)[-1] for f in report.findings) == ["a.py", "b.py"]


# --- call paths: a method of a script's class that the script never calls ------------------------------
# (RL-PyT's PPO script: `agent.load_model()` reloads the whole modules `save_model()` pickled, but `main()`
# never calls it; the method check only trusted modules other files import; judged noise, blind test 74)

AGENT = '''import torch
import torch.nn as nn


class Agent:
    def __init__(self):
        self.actor = nn.Linear(3, 1)
        self.optimizer = torch.optim.Adam(self.actor.parameters())

    def load_model(self):
        actor = torch.load("./model/actor.pkl")
        return actor

    def save_model(self):
        torch.save(self.actor, "./model/actor.pkl")


def main():
    agent = Agent()
{extra}    for episode in range(100):
        loss = agent.actor(torch.randn(8, 3)).pow(2).mean()
        agent.optimizer.zero_grad()
        loss.backward()
        agent.optimizer.step()
    agent.save_model()


if __name__ == "__main__":
    main()
'''


def test_load_in_a_method_the_script_never_calls_is_low(tmp_path):
    found = _found(_write(tmp_path, {"ppo.py": AGENT.replace("{extra}", "")}), ("TR520",))
    assert [(f.code, f.confidence) for f in found] == [("TR520", "low")], [f.message for f in found]


def test_load_in_a_method_the_script_calls_keeps_its_confidence(tmp_path):
    text = AGENT.replace("{extra}", "    agent.load_model()\n")
    found = _found(_write(tmp_path, {"ppo.py": text}), ("TR520",))
    assert [(f.code, f.confidence) for f in found] == [("TR520", "high")], [f.message for f in found]


# --- checkpoints: a name rebound to what a load read back still holds the module built before --------------
# (`model = nn.DataParallel(Net())`, then `model = torch.load(...)` in a resume branch, then
# `torch.save(model, ...)`: every binding had to show a module, so the save's object was "a type not known
# here" and TR520 missed the whole-module checkpoint it reads back; found writing examples/train.py)

REBOUND = '''import sys

import torch
import torch.nn as nn

{build}
if "--resume" in sys.argv:
    model = torch.load("last.pt")
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(10):
    loss = model(torch.randn(4, 8)).sum()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    torch.save(model, "last.pt")
'''


def test_a_module_rebound_to_a_load_result_is_still_a_module(tmp_path):
    text = REBOUND.replace("{build}", "model = nn.Linear(8, 2)")
    assert [f.code for f in _found(_write(tmp_path, {"train.py": text}), ("TR520",))] == ["TR520"]


def test_a_name_bound_only_to_load_results_is_no_module(tmp_path):
    # near-miss: nothing shows a module was ever built
    text = REBOUND.replace("{build}", "model = torch.load('init.pt')")
    assert not _found(_write(tmp_path, {"train.py": text}), ("TR520",))


# --- values: a config class's default, and the arguments a launcher hands the function it runs --------------
# (the diffusers training notebook: `Accelerator(gradient_accumulation_steps=config.gradient_accumulation_steps)`
# inside `train_loop(config, ...)`, run by `notebook_launcher(train_loop, args)` with `config =
# TrainingConfig()`, a dataclass whose field says 1: every micro-step syncs, and TR416's clip inside
# `accumulate()` sees whole gradients; judged false, blind test 75)

LAUNCHED = '''from dataclasses import dataclass

import torch
from accelerate import Accelerator, notebook_launcher


@dataclass
class TrainingConfig:
    num_epochs = 2
    gradient_accumulation_steps = {steps}
    learning_rate = 1e-4


config = TrainingConfig()


def train_loop(config, model, optimizer, train_dataloader):
    accelerator = Accelerator(gradient_accumulation_steps=config.gradient_accumulation_steps)
    model, optimizer, train_dataloader = accelerator.prepare(model, optimizer, train_dataloader)
    for epoch in range(config.num_epochs):
        for x, y in train_dataloader:
            with accelerator.accumulate(model):
                loss = torch.nn.functional.mse_loss(model(x), y)
                accelerator.backward(loss)
                accelerator.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
                optimizer.zero_grad()


model = torch.nn.Linear(4, 1)
optimizer = torch.optim.AdamW(model.parameters(), lr=config.learning_rate)
args = (config, model, optimizer, [(torch.randn(2, 4), torch.randn(2, 1))])
notebook_launcher(train_loop, args, num_processes=1)
'''


def test_clip_inside_accumulate_of_one_step_from_a_launched_config_is_silent(tmp_path):
    assert not _found(_write(tmp_path, {"train.py": LAUNCHED.replace("{steps}", "1")}), ("TR416",))


def test_clip_inside_accumulate_of_four_steps_from_a_launched_config_is_reported(tmp_path):
    found = _found(_write(tmp_path, {"train.py": LAUNCHED.replace("{steps}", "4")}), ("TR416",))
    assert [f.code for f in found] == ["TR416"]


# --- advice: a model fed only random numbers trains on noise ----------------------------------------------
# (ArcFace_PyTorch's scratch notebook: `output = tinymodel(input)` with `input = torch.randn(200, 100)` and
# random labels, printing weights and gradients; its softmax-then-cross-entropy judged noise, blind test 75)

SCRATCH = '''import torch
from torch import nn

tinymodel = nn.Sequential(nn.Linear(100, 5), nn.Softmax(dim=1))
optimizer = torch.optim.SGD(tinymodel.parameters(), lr=0.1)
loss_fn = nn.CrossEntropyLoss()
{inputs}
target = torch.empty(200, dtype=torch.long).random_(5)
for i in range(3):
    optimizer.zero_grad()
    output = tinymodel(inputs)
    loss = loss_fn(output, target)
    loss.backward()
    print(tinymodel[0].weight.grad[0, :10])
    optimizer.step()
'''


def test_softmax_loss_of_a_model_fed_random_numbers_is_medium(tmp_path):
    text = SCRATCH.replace("{inputs}", "inputs = torch.randn(200, 100, requires_grad=True)")
    found = _found(_write(tmp_path, {"scratch.py": text}), ("TR411",))
    assert [(f.code, f.confidence) for f in found] == [("TR411", "medium")]


def test_softmax_loss_of_a_model_fed_real_data_stays_high(tmp_path):
    text = SCRATCH.replace("{inputs}", "inputs = torch.load('features.pt')")
    found = _found(_write(tmp_path, {"scratch.py": text}), ("TR411",))
    assert [(f.code, f.confidence) for f in found] == [("TR411", "high")]


# --- TR515: a signal sent and never looked at again -------------------------------------------------------
# (ai8x-training: rank 0 broadcasts a one-element semaphore with `async_op=True`, "notify the other ranks but
# don't wait", and never touches the tensor again; judged false, blind test 75)

SIGNAL = '''import torch
import torch.distributed as dist


def main(rank):
    semaphore = torch.zeros(1)
    if rank > 0:
        dist.broadcast(semaphore, src=0)
    prepare_data()
    if rank == 0:
        dist.broadcast(semaphore, src=0, async_op=True)
{after}
'''


def test_async_signal_whose_buffer_is_never_used_again_is_silent(tmp_path):
    text = SIGNAL.replace("{after}", "    train()")
    assert not _found(_write(tmp_path, {"train.py": text}), ("TR515",))


def test_async_broadcast_whose_buffer_is_read_after_is_reported(tmp_path):
    text = SIGNAL.replace("{after}", "    print(semaphore.item())")
    assert [f.code for f in _found(_write(tmp_path, {"train.py": text}), ("TR515",))] == ["TR515"]


# --- TR207: outputs measured element by element -----------------------------------------------------------
# (virtual-staining's discriminator factories: `with torch.no_grad(): out = D(torch.randn(1, 3, 256, 256))`
# then `print([tuple(o.shape) for o in out])`: a self-check of a multi-scale model's output shapes; judged
# false three times, blind test 75)

from residue_helpers import DROPOUT_NET  # noqa: E402

PROBE = '''import torch
import torch.nn as nn


''' + DROPOUT_NET + '''

def build(device, batch):
    model = Net().to(device)
    with torch.no_grad():
        out = model(batch)
    print({use})
    return model
'''


def test_outputs_measured_element_by_element_are_silent(tmp_path):
    text = PROBE.replace("{use}", "[tuple(o.shape) for o in out]")
    assert not _found(_write(tmp_path, {"factory.py": text}), ("TR207",))


def test_outputs_read_element_by_element_are_reported(tmp_path):
    text = PROBE.replace("{use}", "[o.argmax(-1) for o in out]")
    assert [f.code for f in _found(_write(tmp_path, {"factory.py": text}), ("TR207",))] == ["TR207"]


# --- the model: an old-style autograd Function holding a layer is no nn.Module ------------------------------
# (pytorch_advanced's SSD: `class Detect(Function)` whose `__init__` stores `nn.Softmax` and never calls
# `super().__init__()`, taken for a module built like one; judged false, blind test 76)

DETECT = '''import torch.nn as nn
from torch.autograd import Function
{other}


class Detect({base}):
    def __init__(self, conf_thresh=0.01):
        self.softmax = nn.Softmax(dim=-1)
        self.conf_thresh = conf_thresh

    def forward(self, loc, conf):
        return self.softmax(conf) > self.conf_thresh
'''


def test_autograd_function_holding_a_layer_is_no_module(tmp_path):
    text = DETECT.replace("{other}", "").replace("{base}", "Function")
    assert not _found(_write(tmp_path, {"ssd.py": text}), ("TR510",))


def test_class_of_an_unknown_base_holding_a_layer_is_still_a_module(tmp_path):
    text = DETECT.replace("{other}", "from mylib import Block").replace("{base}", "Block")
    assert [f.code for f in _found(_write(tmp_path, {"ssd.py": text}), ("TR510",))] == ["TR510"]


# --- TR518: a script's resume restoring the optimizer from a file of its own -------------------------------
# (DFDC: `if opt.resume > 0:` loads `model_{n}.pt`, then `optim_{n}.pt` into the optimizer, both paths
# computed; the top-level loads were not seen as one resume; judged false, blind test 76)

SCRIPT_RESUME = '''import argparse
import os

import torch
from torch import nn

parser = argparse.ArgumentParser()
parser.add_argument("--resume", type=int, default=0)
parser.add_argument("--outf", default="checkpoints")
opt = parser.parse_args()

model = nn.Linear(8, 1)
optimizer = torch.optim.Adam(model.parameters())
if opt.resume > 0:
    model.load_state_dict(torch.load(os.path.join(opt.outf, "model_" + str(opt.resume) + ".pt")))
{optim}
for epoch in range(opt.resume, 100):
    loss = model(torch.randn(4, 8)).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    torch.save(model.state_dict(), os.path.join(opt.outf, "model_" + str(epoch) + ".pt"))
    torch.save(optimizer.state_dict(), os.path.join(opt.outf, "optim_" + str(epoch) + ".pt"))
'''


def test_script_resume_restoring_the_optimizer_from_its_own_file_is_silent(tmp_path):
    text = SCRIPT_RESUME.replace("{optim}", '    optimizer.load_state_dict(torch.load(os.path.join(opt.outf, "optim_" '
                                            '+ str(opt.resume) + ".pt")))')
    assert not _found(_write(tmp_path, {"train.py": text}), ("TR518",))


def test_script_resume_without_the_optimizer_is_still_reported(tmp_path):
    assert [f.code for f in _found(_write(tmp_path, {"train.py": SCRIPT_RESUME.replace("{optim}", "")}), ("TR518",))]


# --- torch pins: a Dockerfile's conda install of the CUDA toolkit old torch builds were made for ------------
# (landmark2019: `RUN conda install -y pytorch torchvision cudatoolkit=10.0 -c pytorch` on a CUDA 10.0 image,
# and `torch._six.int_classes` in the code; the pytorch channel built torch for that toolkit up to 1.2, so the
# private import works where the project runs; judged noise, blind test 77)

def _six_import(tmp_path, docker: str) -> list:
    _write(tmp_path, {"docker/Dockerfile": "FROM nvidia/cuda:10.0-cudnn7-devel-ubuntu18.04\n" + docker,
                      "src/utils.py": "import torch\nfrom torch._six import int_classes\n\n\n"
                                      "def is_int(x):\n    return isinstance(x, int_classes)\n"})
    from torchreview.config import detect_target_torch

    # as `torchreview check` sets it up: the run's target torch detected from the reviewed path
    return [(f.code, f.kind) for f in _found(tmp_path, ("TR429",), detect_torch=True,
                                             target_torch=detect_target_torch(str(tmp_path)))]


def test_private_import_under_a_dockerfile_conda_toolkit_cap_is_advice(tmp_path):
    found = _six_import(tmp_path, "RUN conda install -y pytorch torchvision cudatoolkit=10.0 -c pytorch\n")
    assert found == [("TR429", "advice")]  # hidden by default: the import works on that torch


def test_private_import_under_an_unpinned_dockerfile_stays(tmp_path):
    found = _six_import(tmp_path, "RUN conda install -y pytorch torchvision -c pytorch\n")
    assert found == [("TR429", "defect")]


# --- TR108: macOS AppleDouble sidecars --------------------------------------------------------------------
# (a CMU homework's `weights/._mlp_weights_part_b.npy`: 222 bytes of the Finder's `com.apple.quarantine`
# attribute, reported as a file that "could not be fully verified"; judged false, blind test 77)

def _apple_double() -> bytes:
    # magic, version 2, 16 filler bytes, one entry (id 9: Finder info) pointing past the header
    return (b"\x00\x05\x16\x07" + b"\x00\x02\x00\x00" + b"Mac OS X        " + b"\x00\x01" +
            b"\x00\x00\x00\x09" + b"\x00\x00\x00\x32" + b"\x00\x00\x00\x20" + b"\x00" * 32 + b"ATTR")


def test_tr108_apple_double_sidecar_is_no_artifact(tmp_path):
    from torchreview.artifacts import scan_files

    path = tmp_path / "._weights.npy"
    path.write_bytes(_apple_double())
    assert scan_files([str(path)]).findings == []


def test_tr108_unrecognised_bytes_under_a_checkpoint_name_stay_reported(tmp_path):
    from torchreview.artifacts import scan_files

    path = tmp_path / "weights.npy"
    path.write_bytes(b"\x00\x05\x16\x08" + _apple_double()[4:])  # near-miss: not the magic
    assert [f.code for f in scan_files([str(path)]).findings] == ["TR108"]


# --- TR401: an inherited helper a base class of the same file defines is in sight ---------------------------
# (AI4Dementia3th's `TCANetTrainer(DFaSTTrainer)` calls `self.prepare_inputs_kwargs(inputs)`, defined by its base
# in the same file to move tensors; the loop never zeroes gradients but was taken for one whose inherited helper
# might: its twin `TCACNetTrainer(Trainer)` was reported, this one missed; a judge's note, blind test 77)

TRAINERS = '''import torch

from utils import Trainer


class BaseTrainer(Trainer):
    def prepare(self, batch):
        {prepare}
        return batch.to(self.device)


class NetTrainer(BaseTrainer):
    def train_epoch(self):
        for batch in self.loader:
            loss = self.model(self.prepare(batch)).mean()
            loss.backward()
            self.optimizer.step()
'''


def test_loop_calling_a_local_base_helper_that_moves_tensors_is_reported(tmp_path):
    text = TRAINERS.replace("{prepare}", "batch = batch.float()")
    assert [f.code for f in _found(_write(tmp_path, {"trainers.py": text}), ("TR401",))] == ["TR401"]


def test_loop_calling_a_local_base_helper_that_zeroes_gradients_is_silent(tmp_path):
    text = TRAINERS.replace("{prepare}", "self.optimizer.zero_grad()")
    assert not _found(_write(tmp_path, {"trainers.py": text}), ("TR401",))


# --- call paths: a module nothing imports that only sets up a logger and a cache path still does nothing ----
# (Multimodal-Transformers' `models/vilbert_base.py`, imported by nothing that resolves, with `logger =
# logging.getLogger(__name__)` and `CACHE = Path(os.getenv(...))` at module level: its `torch._six` import was
# reported high; judged noise, blind test 77)

LEGACY = '''import logging
import os
from pathlib import Path

from torch._six import inf

CACHE = Path(os.getenv("CACHE", Path.home() / ".cache"))
logger = logging.getLogger(__name__)
{extra}

def clip(x):
    return min(x, inf)
'''


def _legacy(tmp_path, extra: str) -> list:
    _write(tmp_path, {"utils.py": "def helper(x):\n    return x\n",
                      "train.py": "import torch\nfrom utils import helper\n\nprint(helper(torch.ones(1)))\n",
                      "legacy.py": LEGACY.replace("{extra}", extra)})
    return [(f.code, f.confidence) for f in _found(tmp_path, ("TR429",))]


def test_private_import_in_a_module_nothing_imports_is_low(tmp_path):
    assert _legacy(tmp_path, "") == [("TR429", "low")]


def test_private_import_in_a_module_that_runs_code_stays(tmp_path):
    assert _legacy(tmp_path, "print(clip(3.0))\n") == [("TR429", "high")]


# --- TR104: a loading script named by a command-line option whose default is a local path -----------------
# (DAG-KD: `--data_script` defaults to `./librispeech_asr.py`, the repository's own script, handed to
# `load_dataset(args.data_script, ..., trust_remote_code=True)`; judged false, blind test 76)

OPTION_SCRIPT = '''import argparse

from datasets import load_dataset

p = argparse.ArgumentParser()
p.add_argument("--data_script", type=str, default="{default}")
args = p.parse_args()
train_ds = load_dataset(args.data_script, "clean", split="train.100", trust_remote_code=True)
'''


def test_trust_remote_code_for_an_option_defaulting_to_a_local_script_is_advice(tmp_path):
    text = OPTION_SCRIPT.replace("{default}", "./librispeech_asr.py")
    found = _found(_write(tmp_path, {"train.py": text}), ("TR104",))
    assert [(f.code, f.kind, f.confidence) for f in found] == [("TR104", "advice", "medium")]


def test_trust_remote_code_for_an_option_defaulting_to_a_hub_id_stays(tmp_path):
    text = OPTION_SCRIPT.replace("{default}", "openslr/librispeech_asr")
    found = _found(_write(tmp_path, {"train.py": text}), ("TR104",))
    assert [(f.code, f.kind) for f in found] == [("TR104", "defect")]


# --- TR513: a helper of another module that builds a sampler for its own inference pass ---------------------
# (SND's `run_candidate()` and `run_test()` build a `DistributedSampler` over the test data, iterate it once in
# eval mode and return predictions; the epoch loop calling them was told to `set_epoch` them; judged false
# twice, blind test 77)

HELPERS = '''import torch
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def {name}(model, data):
    sampler = DistributedSampler(data)
    loader = DataLoader(data, batch_size=8, sampler=sampler)
{body}
'''
INFERENCE = '''    model.eval()
    scores = []
    with torch.no_grad():
        for x, y in loader:
            scores.append((model(x).argmax(1) == y).float().mean())
    return torch.stack(scores).mean()'''
TRAIN_LOOP = '''import torch

from helpers import {name}


def main(model, train_loader, data, optimizer):
    for epoch in range(10):
        for x, y in train_loader:
            optimizer.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
        {use}
'''


def test_sampler_of_a_helpers_own_inference_pass_is_silent(tmp_path):
    _write(tmp_path, {"helpers.py": HELPERS.replace("{name}", "run_test").replace("{body}", INFERENCE),
                      "train.py": TRAIN_LOOP.replace("{name}", "run_test").replace("{use}", "print(run_test(model, data))")})
    assert not _found(tmp_path, ("TR513",))


def test_sampler_of_a_helper_returning_its_loader_is_reported(tmp_path):
    _write(tmp_path, {"helpers.py": HELPERS.replace("{name}", "make_loader").replace("{body}", "    return loader"),
                      "train.py": TRAIN_LOOP.replace("{name}", "make_loader").replace(
                          "{use}", "train_loader = make_loader(model, data)")})
    assert [f.code for f in _found(tmp_path, ("TR513",))] == ["TR513"]
