"""Classes of findings judged false or noise on the sweeps, fixed in the tenth session
(2026-11-30), each as a near-miss that must stay silent beside a positive that must stay."""
from __future__ import annotations

from residue_helpers import found as _found, write as _write

from torchreview.engine import api_floor


def _one_file(tmp_path, name: str, text: str, code: str, about: str = "") -> list:
    """The findings of ``code`` on a project of the one file ``name`` holding ``text``,
    those whose message names ``about``."""
    root = _write(tmp_path, {name: text})
    return [f for f in _found(root, (code,)) if about in f.message]

# --- A pin older than the APIs a file calls: a repository-wide `torch==1.4` beside a script
# that calls `torch.backends.mps.is_available()` unguarded runs on torch >= 1.12, where
# DataLoader workers seed NumPy (ml-pytorch's mnist_exps.py, TR426 judged false); the same
# call behind a `hasattr` guard keeps the old target ------------------------------------

DATASET = '''import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

torch.manual_seed(0)
device = {device}


class Noisy(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return np.random.choice(10)


loader = DataLoader(Noisy(10), num_workers=4)
'''


def _numpy_findings(tmp_path, device: str, **kw) -> list:
    root = _write(tmp_path, {"requirements.txt": "torch==1.4.0\n", "exp.py": DATASET.format(device=device)})
    return [f for f in _found(root, ("TR426",), **kw) if "numpy.random" in f.message]


def test_an_unguarded_newer_api_raises_a_stale_pin(tmp_path):
    assert _numpy_findings(tmp_path, '"mps" if torch.backends.mps.is_available() else "cpu"',
                           detect_torch=True) == []


def test_a_compile_call_raises_it_too(tmp_path):
    assert _numpy_findings(tmp_path, '"cpu"\nmodel = torch.compile(torch.nn.Linear(2, 2))', detect_torch=True) == []


def test_a_guarded_newer_api_keeps_the_pin(tmp_path):
    guarded = '"mps" if hasattr(torch.backends, "mps") and torch.backends.mps.is_available() else "cpu"'
    assert len(_numpy_findings(tmp_path, guarded, detect_torch=True)) == 1


def test_a_version_branch_keeps_the_pin(tmp_path):
    branch = '"cpu"\nif torch.__version__ >= "2.0":\n    model = torch.compile(torch.nn.Linear(2, 2))'
    assert len(_numpy_findings(tmp_path, branch, detect_torch=True)) == 1


def test_a_try_block_keeps_the_pin(tmp_path):
    attempt = '"cpu"\ntry:\n    model = torch.compile(torch.nn.Linear(2, 2))\nexcept AttributeError:\n    pass'
    assert len(_numpy_findings(tmp_path, attempt, detect_torch=True)) == 1


def test_no_newer_api_keeps_the_pin(tmp_path):
    assert len(_numpy_findings(tmp_path, '"cuda" if torch.cuda.is_available() else "cpu"', detect_torch=True)) == 1


def test_an_explicit_target_is_taken_as_given(tmp_path):
    assert len(_numpy_findings(tmp_path, '"mps" if torch.backends.mps.is_available() else "cpu"',
                               target_torch=(1, 8))) == 1


def test_the_floor_table_reads_as_releases():
    assert api_floor.newest_floor() >= (2, 0)
    assert api_floor._release_of("torch.backends.mps.is_available") == (1, 12)
    assert api_floor._release_of("torch.compile") == (2, 0)
    assert api_floor._release_of("torch.cuda.is_available") is None


# --- TR418: an optimizer handed to the restoring helper as one branch of a conditional
# argument (`None if lr == 0 else optimizer`): first-order-model restores it, with its
# `initial_lr`, whenever the scheduler resumes (judged false in held-out 192); a helper
# that is not handed the optimizer still leaves a fresh one --------------------------------

RESUME = '''import torch
from torch.optim.lr_scheduler import MultiStepLR


def load_cpk(path, model, optimizer=None):
    state = torch.load(path)
    model.load_state_dict(state["model"])
    if optimizer is not None:
        optimizer.load_state_dict(state["optimizer"])
    return state["epoch"]


def train(model, params, checkpoint):
    optimizer = torch.optim.Adam(model.parameters(), lr=params["lr"])
    start_epoch = load_cpk(checkpoint, model, {handed})
    scheduler = MultiStepLR(optimizer, [10, 20], last_epoch=start_epoch - 1)
    return scheduler
'''


def _tr418(tmp_path, handed: str) -> list:
    return _one_file(tmp_path, "train.py", RESUME.format(handed=handed), "TR418", "initial_lr")


def test_tr418_optimizer_handed_in_a_conditional_is_restored(tmp_path):
    assert _tr418(tmp_path, 'None if params["lr"] == 0 else optimizer') == []
    assert _tr418(tmp_path, 'optimizer if params["lr"] else None') == []


def test_tr418_helper_not_handed_the_optimizer_still_reports(tmp_path):
    assert len(_tr418(tmp_path, "None")) == 1


# --- TR209: a synchronize in a step that reads `loss.item()` in every branch of an
# if/elif/else chain (SlowFast's detection / multi-label / classification logging,
# judged false in nr54): the step waits there anyway; a read in a branch without an
# else does not make every step wait ------------------------------------------------------

SYNC = '''import torch
import torch.nn.functional as F


def train_epoch(model, loader, optimizer, meter, cfg):
    for x, y in loader:
        x, y = x.cuda(), y.cuda()
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if cfg.detection:
            meter.update(loss.item())
{other}
        torch.cuda.synchronize()
'''


def _tr209(tmp_path, other: str) -> list:
    root = _write(tmp_path, {"train.py": SYNC.format(other=other)})
    return [(f.kind, f.confidence) for f in _found(root, ("TR209",)) if "synchronize" in f.message]


def test_tr209_a_read_in_every_branch_makes_the_sync_advice(tmp_path):
    other = "        elif cfg.multi_label:\n            meter.update(loss.item(), 1)\n" \
            "        else:\n            with torch.no_grad():\n                meter.update(float(loss))\n"
    assert _tr209(tmp_path, other) == [("advice", "low")]


def test_tr209_a_read_in_one_branch_leaves_the_stall(tmp_path):
    assert _tr209(tmp_path, "        elif cfg.multi_label:\n            meter.update(loss.item(), 1)\n") == \
        [("likely-defect", "high")]


# --- TR519: the element a caller unpacks from a local evaluation function's tuple return
# is traced in that return: GCNII's `test()` returns the validation loss computed before
# its test-mask loop, and early stopping on it is the right protocol (judged false in
# nr54); an element accumulated in the test loop still reports -------------------------

SELECT = '''import torch
import torch.nn.functional as F


def evaluate(model, data, test_loader):
    model.eval()
    logits = model(data.x)
    loss_val = F.nll_loss(logits[data.val_mask], data.y[data.val_mask]).item()
    correct, total, test_loss = 0, 0, 0.0
    for x, y in test_loader:
        out = model(x)
        test_loss += F.nll_loss(out, y).item()
        correct += (out.argmax(1) == y).sum().item()
        total += y.numel()
    return loss_val, test_loss / total, correct / total


def fit(model, data, test_loader, optimizer):
    best = float("inf")
    for epoch in range(100):
        optimizer.zero_grad()
        F.nll_loss(model(data.x)[data.train_mask], data.y[data.train_mask]).backward()
        optimizer.step()
        loss_val, loss_test, acc = evaluate(model, data, test_loader)
        if {metric} < best:
            best = {metric}
            torch.save(model.state_dict(), "best.pt")
'''


def _tr519(tmp_path, metric: str) -> list:
    return _one_file(tmp_path, "train.py", SELECT.format(metric=metric), "TR519")


def test_tr519_the_unpacked_validation_element_is_not_the_test_split(tmp_path):
    assert _tr519(tmp_path, "loss_val") == []


def test_tr519_an_element_accumulated_in_the_test_loop_still_reports(tmp_path):
    assert len(_tr519(tmp_path, "loss_test")) == 1


# --- TR108: one comment per kind of file in a project. PathomicFusion commits sixty pickled
# pandas frames of one results folder and three graphs of one dataset script: 63 findings
# for two root causes (nr56); files whose scans name the same globals with the same verdict
# are one finding listing the places, a file with other globals is its own. pandas' own
# rebuild helpers (`_new_Index`) only rebuild data: medium (needs trust), not code execution

def _class_pickle(module: str, name: str) -> bytes:
    """A protocol-2 pickle of an instance of ``module.name`` (EMPTY_TUPLE, NEWOBJ, BUILD)."""
    return (b"\x80\x02c" + module.encode() + b"\n" + name.encode() + b"\nq\x00)\x81q\x01}q\x02X\x01\x00\x00\x00a"
            b"q\x03K\x01sb.")


def test_tr108_files_with_the_same_globals_are_one_finding(tmp_path):
    files = {f"results/run{i}.pkl": "" for i in range(3)}
    root = _write(tmp_path, {"load.py": "import pickle\nimport torch\n"})
    for name in files:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(_class_pickle("mylib.frames", "Frame"))
    (root / "graphs").mkdir()
    (root / "graphs" / "g.pkl").write_bytes(_class_pickle("mylib.graphs", "Graph"))
    from torchreview.engine.runner import Settings, run_review

    findings = run_review([str(root)], Settings(rule_codes=("TR108",), jobs=1, min_confidence="low")).findings
    assert sorted((f.path.rsplit("/", 2)[-2], len(f.related)) for f in findings) == [("graphs", 0), ("results", 2)]


def test_tr108_pandas_index_rebuild_is_not_code_execution(tmp_path):
    from torchreview.artifacts import scan_files
    from torchreview.findings import Severity

    path = tmp_path / "frame.pkl"
    path.write_bytes(b"\x80\x02cpandas.core.indexes.base\n_new_Index\nq\x00cpandas.core.indexes.base\nIndex\nq\x01"
                     b"}q\x02\x86q\x03Rq\x04.")
    report = scan_files([str(path)])
    assert [f.severity for f in report.findings] == [Severity.MEDIUM]
    assert "code-executing" not in report.findings[0].message


# --- TR502: `.sample()` of the distribution a policy network returned is drawn without
# a graph (torch.distributions samples under no_grad); pfrl's REINFORCE converts the action
# to NumPy (judged false in held-out 205). `.rsample()` keeps the graph ---------------------

POLICY = '''import torch
from torch import nn


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return torch.distributions.Categorical(logits=self.fc(x))


def act(model: Policy, obs):
    distrib = model(obs)
    action = distrib.{draw}()
    return action.cpu().numpy()[0]
'''


def _tr502(tmp_path, draw: str) -> list:
    return _one_file(tmp_path, "agent.py", POLICY.format(draw=draw), "TR502", "grad")


def test_tr502_a_distribution_sample_carries_no_graph(tmp_path):
    assert _tr502(tmp_path, "sample") == []


def test_tr502_rsample_keeps_the_graph(tmp_path):
    assert len(_tr502(tmp_path, "rsample")) == 1


# --- TR417: a float16 autocast under no_grad in the training function (nanoVLM's
# validation pass after model.eval(), judged false in held-out 203) runs no backward;
# the training step's autocast in the same function still reports ------------------------

FP16 = '''import torch
import torch.nn.functional as F


def train(model, loader, val_loader, optimizer):
    for epoch in range(3):
        model.train()
        for x, y in loader:
            x, y = x.cuda(), y.cuda()
            with {train_ctx}:
                loss = F.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
        model.eval()
        with torch.no_grad():
            for x, y in val_loader:
                with torch.autocast(device_type="cuda", dtype=torch.float16):
                    val = F.cross_entropy(model(x.cuda()), y.cuda())
'''


def _tr417(tmp_path, train_ctx: str) -> list:
    root = _write(tmp_path, {"train.py": FP16.format(train_ctx=train_ctx)})
    return [f.line for f in _found(root, ("TR417",))]


def test_tr417_validation_autocast_under_no_grad_is_silent(tmp_path):
    assert _tr417(tmp_path, 'torch.autocast(device_type="cuda", dtype=torch.bfloat16)') == []


def test_tr417_training_autocast_still_reports(tmp_path):
    assert _tr417(tmp_path, 'torch.autocast(device_type="cuda", dtype=torch.float16)') == [10]


# --- TR511: `nn.Parameter(torch.zeros_like(self.v)).to(self.device)` where `self.v` was
# moved to `self.device` earlier in the same method: the data is there, `.to` returns the
# Parameter itself (LGM's mesh fitting, judged false in held-out 204); a `self.v` built on
# the CPU still makes `.to` return a copy ----------------------------------------------

MESH = '''import torch
from torch import nn


class Mesh(nn.Module):
    def __init__(self, device):
        super().__init__()
        self.device = device

    def fit(self, vertices):
        self.v = torch.from_numpy(vertices).float(){placed}
        self.deform = nn.Parameter(torch.zeros_like(self.v)).to(self.device)
        return torch.optim.Adam([self.deform], lr=1e-3)
'''


def _tr511(tmp_path, placed: str) -> list:
    return _one_file(tmp_path, "mesh.py", MESH.format(placed=placed), "TR511", "not a Parameter")


def test_tr511_data_derived_from_an_attribute_already_placed_there(tmp_path):
    assert _tr511(tmp_path, ".to(self.device)") == []


def test_tr511_data_derived_from_a_cpu_attribute_still_reports(tmp_path):
    assert len(_tr511(tmp_path, "")) == 1


# --- TR207: `model = Net(); model.eval(); self.model = model` in a constructor: the module
# handed on was switched to eval first (DiffPure's Diffusion wrapper, judged false in
# held-out 204); without the switch the helper's inference still reports ---------------

WRAPPER = '''import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.1), nn.BatchNorm1d(4))

    def forward(self, x):
        return self.body(x)


def denoise(model, x):
    return model(x)


class Runner(nn.Module):
    def __init__(self):
        super().__init__()
        model = Net()
        model.load_state_dict(torch.load("net.pt", weights_only=True))
{switch}
        self.model = model

    def forward(self, x):
        with torch.no_grad():
            return denoise(self.model, x)
'''


def _tr207(tmp_path, switch: str) -> list:
    root = _write(tmp_path, {"runner.py": WRAPPER.format(switch=switch)})
    return [f for f in _found(root, ("TR207",)) if "denoise" in f.message or f.line == 15]


def test_tr207_a_module_switched_to_eval_before_it_is_handed_on(tmp_path):
    assert _tr207(tmp_path, "        model.eval()") == []


def test_tr207_the_same_module_left_in_training_mode_still_reports(tmp_path):
    assert len(_tr207(tmp_path, "        pass")) == 1


# --- TR507: per-timestep lists reset by a tuple assignment at the top of every minibatch
# (`probs_now, values_now = [], []`, MAPPO: stacked and backpropagated in that same
# minibatch, judged false twice in nr56); a list reset only once, before the loop, keeps
# every minibatch's graph ---------------------------------------------------------------

UNROLL = '''import torch


def update(batches, steps):
    actor = torch.nn.Linear(4, 2)
    optimizer = torch.optim.Adam(actor.parameters())
{outer}
    for obs in batches:
{inner}
        for t in range(steps):
            probs.append(actor(obs[:, t]))
        loss = -torch.stack(probs, dim=1).log().mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
'''


def _tr507(tmp_path, outer: str, inner: str) -> list:
    return _one_file(tmp_path, "ppo.py", UNROLL.format(outer=outer, inner=inner), "TR507")


def test_tr507_lists_reset_by_a_tuple_assignment_each_minibatch(tmp_path):
    assert _tr507(tmp_path, "    probs = []", "        probs, values = [], []") == []


def test_tr507_a_list_reset_once_before_the_loop_still_reports(tmp_path):
    assert len(_tr507(tmp_path, "    probs = []", "        pass")) == 1


# --- TR511: a 1-D constant built through NumPy (`torch.from_numpy(np.array([...]).astype(...))`)
# read only element by element (`self.std[0]`): 0-dim CPU tensors mix with CUDA tensors
# (RetinaNet/EfficientDet BBoxTransform, judged false in held-out 190 and nr57); the same
# constant read whole still follows no `.to()` ---------------------------------------------

BOXES = '''import numpy as np
import torch
from torch import nn


class BBoxTransform(nn.Module):
    def __init__(self):
        super().__init__()
        self.std = torch.from_numpy(np.array([0.1, 0.1, 0.2, 0.2]).astype(np.float32))

    def forward(self, deltas):
        return {read}
'''


def _tr511_elements(tmp_path, read: str) -> list:
    return _one_file(tmp_path, "boxes.py", BOXES.format(read=read), "TR511", "device mismatch")


def test_tr511_numpy_built_constant_read_by_elements(tmp_path):
    assert _tr511_elements(tmp_path, "deltas[:, 0] * self.std[0] + deltas[:, 1] * self.std[1]") == []


def test_tr511_numpy_built_constant_read_whole_still_reports(tmp_path):
    assert len(_tr511_elements(tmp_path, "deltas * self.std")) == 1


# --- TR107: `sk-` inside a hyphenated file name or URL path is no OpenAI key (a product
# image URL `..._Data_free-sk-5108-mudrika-original-imaf4fz626pegq9f.jpeg` in a notebook's
# output, judged false in held-out 214); a key assigned on its own still reports ----------

def _tr107(tmp_path, text: str) -> list:
    root = _write(tmp_path, {"client.py": f"import torch\n\nURL = {text!r}\n"})
    return [f for f in _found(root, ("TR107",)) if "OpenAI" in f.message]


def test_tr107_sk_inside_a_file_name_is_no_key(tmp_path):
    assert _tr107(tmp_path, "https://img.example.com/image/x/y/Data_free-sk-5108-mudrika-original-"
                            "imaf4fz626pegq9f.jpeg") == []


def test_tr107_a_key_on_its_own_still_reports(tmp_path):
    assert len(_tr107(tmp_path, "sk-9fQ2rT7vLm3Xc8Zb1Nw4Yd6Hs0Kp5Ja2Ue7Ri")) == 1


# --- TR518: `--restore_ckpt` in a project that only ever saves weights starts a new training
# stage from them (RAFT-style FlowFormer/IGEV stages chairs -> things -> sintel, judged false
# in nr56 and nr58): nothing else was saved to restore. A `--resume` of the same project, or
# a restore where the project does save the optimizer, still reports -----------------------

STAGES = '''import argparse

import torch
from torch import nn


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--{flag}")
    args = parser.parse_args()
    model = nn.Linear(4, 2)
    if args.{flag} is not None:
        model.load_state_dict(torch.load(args.{flag}))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, 1e-3, total_steps=1000)
    for step in range(1000):
        loss = model(torch.randn(8, 4)).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        if step % 100 == 0:
            torch.save({saved}, "ckpt.pth")
'''


def _tr518(tmp_path, flag: str, saved: str) -> list:
    root = _write(tmp_path, {"train.py": STAGES.format(flag=flag, saved=saved)})
    return [f for f in _found(root, ("TR518",)) if f.kind != "advice"]


def test_tr518_restore_ckpt_of_a_weights_only_project_starts_a_stage(tmp_path):
    assert _tr518(tmp_path, "restore_ckpt", "model.state_dict()") == []


def test_tr518_resume_of_the_same_project_still_reports(tmp_path):
    assert len(_tr518(tmp_path, "resume", "model.state_dict()")) == 1


def test_tr518_restore_where_the_optimizer_is_saved_still_reports(tmp_path):
    assert len(_tr518(tmp_path, "restore_ckpt",
                      '{"model": model.state_dict(), "optimizer": optimizer.state_dict()}')) == 1


APPENDED = '''import numpy as np
import torch


class Solver:
    def vali(self, loader):
        self.model.eval()
        loss_1, loss_2 = [], []
        for x, y in loader:
            out = self.model(x)
            loss_1.append(((out - y) ** 2).mean().item())
            loss_2.append((out - y).abs().mean().item())
        return np.average(loss_1), np.average(loss_2)

    def train(self, early_stopping):
        for epoch in range(10):
            self.step()
            vali_loss1, vali_loss2 = self.vali({handed})
            early_stopping(vali_loss1, vali_loss2, self.model)
            if early_stopping.early_stop:
                break
'''


def test_tr519_unpacked_elements_of_a_call_given_the_test_loader_report(tmp_path):
    """Anomaly Transformer validates on `self.test_loader` (judged true in held-out 197):
    each element is collected with `.append` in the loop over the loader handed in, so the
    loader's split is the element's (the element tracing lost it before)."""
    root = _write(tmp_path, {"solver.py": APPENDED.format(handed="self.test_loader")})
    assert len(_found(root, ("TR519",))) == 1
    root = _write(tmp_path / "val", {"solver.py": APPENDED.format(handed="self.vali_loader")})
    assert _found(root, ("TR519",)) == []


# --- TR508: linear layers appended to plain lists and also handed to a module-class wrapper
# stored as an attribute (SAMed's LoRA: `blk.attn.qkv = _LoRA_qkv(qkv, w_a, w_b)`, judged
# false ten times in held-out 213): the wrapper registers them, the lists are handles; layers
# appended and used nowhere else still report ------------------------------------------------

LORA = '''import torch
from torch import nn


class _LoRA(nn.Module):
    def __init__(self, base, a, b):
        super().__init__()
        self.base, self.a, self.b = base, a, b

    def forward(self, x):
        return self.base(x) + self.b(self.a(x))


class LoRAEncoder(nn.Module):
    def __init__(self, encoder, r=4):
        super().__init__()
        self.w_As = []
        self.w_Bs = []
        for blk in encoder.blocks:
            w_a = nn.Linear(blk.dim, r, bias=False)
            w_b = nn.Linear(r, blk.dim, bias=False)
            self.w_As.append(w_a)
            self.w_Bs.append(w_b)
{wrap}
        self.encoder = encoder

    def reset_lora(self):
        for w_a in self.w_As:
            nn.init.kaiming_uniform_(w_a.weight)
        for w_b in self.w_Bs:
            nn.init.zeros_(w_b.weight)

    def forward(self, x):
        return self.encoder(x)
'''


def _tr508(tmp_path, wrap: str) -> list:
    return _one_file(tmp_path, "lora.py", LORA.format(wrap=wrap), "TR508")


def test_tr508_layers_registered_through_a_stored_wrapper(tmp_path):
    assert _tr508(tmp_path, "            blk.qkv = _LoRA(blk.qkv, w_a, w_b)") == []


def test_tr508_layers_kept_only_in_plain_lists_still_report(tmp_path):
    assert len(_tr508(tmp_path, "            pass")) == 2


# --- TR502: a module whose only weights are nn.Parameters built with `requires_grad=(not fix)`
# and a `fix=True` default the call keeps (PHASEN's fixed STFT kernels, judged false in
# held-out 210): its output on NumPy-born input needs no `.detach()`; built with
# `fix=False` it does --------------------------------------------------------------------

STFT = '''import numpy as np
import torch
import torch.nn.functional as F
from torch import nn


class ConvSTFT(nn.Module):
    def __init__(self, win_len, fix=True):
        super().__init__()
        kernel = torch.hann_window(win_len)[None, None, :]
        self.weight = nn.Parameter(kernel, requires_grad=(not fix))

    def forward(self, x):
        return F.conv1d(x, self.weight)


def main(data):
    stft = ConvSTFT(400{fix})
    out = stft(torch.from_numpy(data.astype(np.float32)))
    return out.numpy()
'''


def _stft(tmp_path, fix: str) -> list:
    return _one_file(tmp_path, "stft.py", STFT.format(fix=fix), "TR502", "grad")


def test_tr502_output_of_a_module_with_fixed_parameters(tmp_path):
    assert _stft(tmp_path, "") == []


def test_tr502_the_same_module_built_trainable_still_reports(tmp_path):
    assert len(_stft(tmp_path, ", fix=False")) == 1


# --- TR511: a helper that moves every tensor attribute of the object it is given
# (`for attr in dir(obj): ... setattr(obj, attr, value.cuda())`), called on the instance
# (probtorch's notebooks, judged false twice in held-out 215); without the call the plain
# tensor attribute still stays on the CPU ------------------------------------------------

REFLECT = '''import torch
from torch import nn


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.prior = torch.zeros(4)

    def forward(self, z):
        return self.fc(z) + self.prior


def cuda_tensors(obj):
    for attr in dir(obj):
        value = getattr(obj, attr)
        if isinstance(value, torch.Tensor):
            setattr(obj, attr, value.cuda())


dec = Decoder()
dec.cuda()
{call}
'''


def test_tr511_attributes_moved_by_a_reflective_helper(tmp_path):
    assert _one_file(tmp_path, "vae.py", REFLECT.format(call="cuda_tensors(dec)"), "TR511", "device") == []


def test_tr511_the_helper_never_called_on_it_still_reports(tmp_path):
    assert len(_one_file(tmp_path, "vae.py", REFLECT.format(call=""), "TR511", "device")) == 1
