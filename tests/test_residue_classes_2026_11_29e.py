"""Classes of findings judged noise/false on the sweeps of the fifth 2026-11-29
session (and carry-overs of the fourth), each as a near-miss that must stay
silent (or hidden by default) beside a positive that must stay."""
from __future__ import annotations

from pathlib import Path

from torchreview.engine.runner import Settings, run_review


def _found(root: Path, codes: tuple[str, ...], **kw) -> list:
    """Every finding of ``codes``, merged findings flattened to their places (each keeps its own
    confidence and kind)."""
    findings = run_review([str(root)], Settings(rule_codes=codes, jobs=1, min_confidence="low", **kw)).findings
    return [p for f in findings for p in (f.parts or (f,))]


def _confidences(root: Path, codes: tuple[str, ...], **kw) -> dict[int, str]:
    """{line: confidence} of the findings of ``codes`` under ``root``."""
    return {f.line: f.confidence for f in _found(root, codes, **kw)}


HOOK_ON_ANOTHER_CLASS = '''import torch
from torch import nn


class Inner(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 8), nn.ReLU())
        self.net.register_full_backward_hook(lambda m, gi, go: (gi[0] * scale,))

    def forward(self, x):
        return self.net(x)


class Outer(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = Inner(2.0)

    def sample(self, x):
        return self.net.forward(x)


class Hooked(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(8, 8)
        self.net.register_forward_hook(lambda m, i, o: o * 2)

    def sample(self, x):
        return self.net.forward(x)
'''


def test_a_hook_on_the_same_attribute_name_of_another_class_is_not_this_receiver(tmp_path):
    """nvdiffrec: `_MLP.__init__` hooks its own `self.net` (a Sequential); `MLPTexture3D`
    calls `self.net.forward(...)` where its `self.net` is the `_MLP`. The texts match, the
    modules do not: the hook still runs inside `_MLP.forward`, so the direct call is at most
    medium (hooks elsewhere in the file), never high. The same class hooking the very
    attribute it calls `.forward` on stays high."""
    (tmp_path / "mlp.py").write_text(HOOK_ON_ANOTHER_CLASS)
    conf = _confidences(tmp_path, ("TR509",))
    assert conf.get(31) == "high"
    assert conf.get(21) in ("medium", "low")


FROZEN_THROUGH_ATTR = '''import torch
from torch import nn


class FrozenTable(nn.Module):
    def __init__(self, vectors, out_dim):
        super().__init__()
        self.pretrained = [nn.Embedding(vectors.size(0), vectors.size(1))]
        self.pretrained[0].weight.data = vectors
        self.pretrained[0].weight.requires_grad = False
        self.projection = nn.Linear(vectors.size(1), out_dim)

    def forward(self, x):
        return self.projection(self.pretrained[0](x.cpu()).to(x.device))


class TrainedTable(nn.Module):
    def __init__(self, vectors, out_dim):
        super().__init__()
        self.pretrained = [nn.Embedding(vectors.size(0), vectors.size(1))]
        self.pretrained[0].weight.data = vectors
        self.projection = nn.Linear(vectors.size(1), out_dim)

    def forward(self, x):
        return self.projection(self.pretrained[0](x))
'''


def test_a_one_element_list_frozen_through_the_attribute_is_kept_out_on_purpose(tmp_path):
    """decaNLP: `self.pretrained_embeddings = [nn.Embedding(...)]` whose `[0].weight` gets the
    GloVe vectors and `requires_grad = False` in the same constructor, looked up on the CPU in
    `forward`: the one-element list keeps the frozen table out of `.cuda()`, the optimizer
    and the checkpoint on purpose. The same list without the freezing stays a defect."""
    (tmp_path / "emb.py").write_text(FROZEN_THROUGH_ATTR)
    lines = {f.line for f in _found(tmp_path, ("TR508",))}
    assert 20 in lines
    assert 8 not in lines


def _resume_script(lr_body: str) -> str:
    return f'''import argparse
import torch
from torch import nn

parser = argparse.ArgumentParser()
parser.add_argument("--resume", default=None)
parser.add_argument("--lr", type=float, default=1e-3)
parser.add_argument("--warmup_iters", type=int, default=1000)
parser.add_argument("--num_epochs", type=int, default=100)
args = parser.parse_args()


def update_lr(optimizer, itr):
{lr_body}
    for param_group in optimizer.param_groups:
        param_group["lr"] = lr


model = nn.Linear(8, 1)
optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
if args.resume is not None:
    checkpt = torch.load(args.resume)
    model.load_state_dict(checkpt["state_dict"])
    optimizer.load_state_dict(checkpt["optim_state_dict"])
    args.begin_epoch = checkpt["epoch"] + 1
else:
    args.begin_epoch = 1
itr = 0
for epoch in range(args.begin_epoch, args.num_epochs + 1):
    for _ in range(10):
        update_lr(optimizer, itr)
        optimizer.zero_grad()
        loss = model(torch.randn(4, 8)).pow(2).mean()
        loss.backward()
        optimizer.step()
        itr += 1
    torch.save({{"state_dict": model.state_dict(), "optim_state_dict": optimizer.state_dict(), "epoch": epoch}},
               "checkpt.pth")
'''


def test_a_restarted_counter_that_only_drives_a_capped_warm_up_is_hidden_advice(tmp_path):
    """FFJORD: `itr = 0` restarts on resume, but `update_lr` only ramps the LR up to a constant
    (`min((itr + 1) / warmup_iters, 1.0)`): the resumed run warms up again, no decay is undone.
    A step decay driven by the same counter stays a high finding."""
    warm = tmp_path / "warm"
    warm.mkdir()
    (warm / "train.py").write_text(_resume_script(
        "    iter_frac = min(float(itr + 1) / max(args.warmup_iters, 1), 1.0)\n    lr = args.lr * iter_frac"))
    decay = tmp_path / "decay"
    decay.mkdir()
    (decay / "train.py").write_text(_resume_script("    lr = args.lr * (0.1 ** (itr // 3000))"))
    assert [f.confidence for f in _found(warm, ("TR518",)) if "warm-up" in f.message] == ["low"]
    assert "high" in [f.confidence for f in _found(decay, ("TR518",)) if "restarts from its initial" in f.message]


TWO_OPTIMIZERS = '''import torch
from torch import nn

critic, actor = nn.Linear(4, 1), nn.Linear(4, 4)
critic_opt = torch.optim.Adam(critic.parameters())
actor_opt = torch.optim.Adam(actor.parameters())
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(8, 4), torch.randn(8, 1)))
auto = True

for state, target in loader:
    critic_loss = (critic(state) - target).pow(2).mean()
    critic_opt.zero_grad()
    critic_loss.backward()
    critic_opt.step()
    actor_loss = -critic(actor(state)).mean()
    actor_opt.zero_grad()
    if auto:
        actor_loss.backward(retain_graph=True)
    else:
        actor_loss.backward()
    actor_opt.step()

for state, target in loader:
    critic_loss = (critic(state) - target).pow(2).mean()
    critic_opt.zero_grad()
    critic_loss.backward()
    critic_opt.step()
    actor_loss = -critic(actor(state)).mean()
    if auto:
        actor_loss.backward()
    actor_opt.zero_grad()
    actor_opt.step()
'''


def test_a_backward_in_both_branches_of_an_if_runs_before_the_step(tmp_path):
    """BEAR: the actor's `backward()` is written in both branches of `if self.mode == 'auto'`
    between `actor_optimizer.zero_grad()` and `.step()`; the critic's earlier backward is
    not the one the actor's step applies. The same loop whose zero_grad does fall between
    the backward and the step stays a finding."""
    (tmp_path / "rl.py").write_text(TWO_OPTIMIZERS)
    lines = {f.line for f in _found(tmp_path, ("TR402",))}
    assert 16 not in lines
    assert 31 in lines


def _guarded_step_loop(zero_grad_line: str) -> str:
    return f'''import math
import torch
from torch import nn

model = nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(8, 4), torch.randn(8, 1)))

for i, (x, y) in enumerate(loader):
    loss = (model(x) - y).pow(2).mean()
{zero_grad_line}
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 10.0)
    if math.isfinite(loss.item()):
        optimizer.step()
        optimizer.zero_grad()
'''


def test_a_step_skipped_on_a_bad_loss_with_gradients_cleared_every_pass_is_no_accumulation(tmp_path):
    """SiamMask: `zero_grad(); backward(); clip; if is_valid_number(loss.item()): step()`: the
    gradients are cleared on every pass, so a skipped step only drops that batch; clipping
    every backward is right. The same guard without the per-pass `zero_grad()` (gradients of
    skipped batches add up) stays a finding."""
    guard = tmp_path / "guard"
    guard.mkdir()
    (guard / "train.py").write_text(_guarded_step_loop("    optimizer.zero_grad()"))
    acc = tmp_path / "acc"
    acc.mkdir()
    (acc / "train.py").write_text(_guarded_step_loop("    pass"))
    assert not _found(guard, ("TR416",))
    assert [f.line for f in _found(acc, ("TR416",))] == [13]


TRAINING_PICKS_RATE = '''import torch
import torch.nn.functional as F
from torch import nn


class Attention(nn.Module):
    def __init__(self, dim, drop_rate=0.0):
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)
        self.drop_rate = drop_rate

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        p = self.drop_rate if self.training else 0.0
        return F.scaled_dot_product_attention(q, k, v, dropout_p=p)


def show(x):
    plain = Attention(16)
    with torch.no_grad():
        return plain(x)


def show_dropped(x):
    dropped = Attention(16, drop_rate=0.1)
    with torch.no_grad():
        return dropped(x)
'''


def test_self_training_read_only_to_pick_a_dropout_rate_is_that_rate(tmp_path):
    """torch-harmonics: `AttentionS2.forward` reads `self.training` only in
    `dropout_p = self.drop_rate if self.training else 0.0`, and `drop_rate` defaults to 0.0;
    a notebook building it without a rate and calling it under no_grad without `.eval()`
    changes nothing. Built with `drop_rate=0.1` the missing `.eval()` stays a finding."""
    (tmp_path / "attn.py").write_text(TRAINING_PICKS_RATE)
    lines = {f.line for f in _found(tmp_path, ("TR207",))}
    assert 27 in lines
    assert 21 not in lines


AVERAGED = '''import argparse
import torch


def average(paths):
    for i, model_path in enumerate(paths):
        model = torch.load(model_path)
        if i == 0:
            avg_model = model
        else:
            for k, _ in avg_model.items():
                avg_model[k].mul_(i).add_(model[k]).div_(i + 1)
    return avg_model


def build(width):
    return torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.ReLU())


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--inputs", nargs="+")
    parser.add_argument("--output_model_path")
    args = parser.parse_args()
    avg_model = average(args.inputs)
    torch.save(avg_model, args.output_model_path)
'''

LOADS = '''import argparse
import torch
from torch import nn

parser = argparse.ArgumentParser()
parser.add_argument("--output_model_path")
args = parser.parse_args()
model = nn.Linear(8, 8)
model.load_state_dict(torch.load(args.output_model_path))
'''


def test_a_function_returning_a_loaded_state_dict_builds_no_module(tmp_path):
    """UER-py: `average()` returns `avg_model`, a `torch.load` result averaged key by key, and
    the script saves it; the name says "model" but nothing built a module, so a load elsewhere
    is not told the checkpoint holds a whole `nn.Module`. A function returning an
    `nn.Sequential` it builds still makes its save a whole module."""
    (tmp_path / "average.py").write_text(AVERAGED)
    (tmp_path / "use.py").write_text(LOADS)
    assert not [f for f in _found(tmp_path, ("TR520",)) if "nn.Module" in f.message]
    (tmp_path / "average.py").write_text(AVERAGED.replace("average(args.inputs)", "build(8)"))
    assert [f for f in _found(tmp_path, ("TR520",)) if "nn.Module" in f.message]


def test_a_text_list_whose_lines_read_as_pickle_globals_is_no_pickle(tmp_path):
    """LVM-Med / Endo-FM: `file_list.txt` / `train.txt` list file names starting with `c`
    (`ct_train_1005_label.nii`), which a protocol-0 reader takes as GLOBAL opcodes two lines
    at a time; nothing else follows, so no pickle wrote it. A real protocol-0 pickle whose
    global is called (`cos\\nsystem\\n(S'...'\\ntR.`) stays critical."""
    listing = "".join(f"ct_train_10{i:02d}_{kind}.nii\n" for i in range(40) for kind in ("image", "label"))
    (tmp_path / "file_list.txt").write_text(listing)
    (tmp_path / "cases.txt").write_text("case0001\ncase0002\ncase0003\ncase0004\ncase0005\n")
    assert not _found(tmp_path, ("TR108",))
    (tmp_path / "evil.txt").write_bytes(b"cos\nsystem\n(S'echo pwned'\ntR.")
    assert [f.path.endswith("evil.txt") for f in _found(tmp_path, ("TR108",))] == [True]


PARAMETERS_BY_HAND = '''import torch
from torch import nn


class Heads(nn.Module):
    def __init__(self, hidden, n):
        super().__init__()
        self.head_fcs = [nn.Linear(hidden, 3) for _ in range(n)]
        for i, fc in enumerate(self.head_fcs):
            self.register_parameter(f"weight_head_{i}", fc.weight)
            self.register_parameter(f"bias_head_{i}", fc.bias)
        self.tail_fcs = [nn.Linear(hidden, 3) for _ in range(n)]

    def forward(self, x):
        return [fc(x) for fc in self.head_fcs] + [fc(x) for fc in self.tail_fcs]
'''


def test_elements_whose_parameters_are_registered_one_by_one_are_registered(tmp_path):
    """TPLinker: `self.head_rel_fc_list = [nn.Linear(...) ...]`, then a loop registers each
    element's `weight` and `bias` with `self.register_parameter`: trained, saved and moved
    with the module. A sibling list nobody registers stays a finding."""
    (tmp_path / "heads.py").write_text(PARAMETERS_BY_HAND)
    lines = {f.line for f in _found(tmp_path, ("TR508",))}
    assert lines == {12}


def _event_timed_loop(read: str) -> str:
    return f'''import torch
from torch import nn

model = nn.Linear(4, 1).cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(8, 4), torch.randn(8, 1)))
start_run = torch.cuda.Event(enable_timing=True)
end_run = torch.cuda.Event(enable_timing=True)
log = {{}}
for x, y in loader:
    start_run.record()
    x, y = x.cuda(), y.cuda()
    loss = (model(x) - y).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    end_run.record()
    torch.cuda.synchronize()
{read}
'''


def test_a_synchronize_that_makes_cuda_event_timings_readable_is_hidden_advice(tmp_path):
    """FixMatch: `end_run.record(); torch.cuda.synchronize()` each step, then
    `start_run.elapsed_time(end_run)` logged: the synchronize is how the event timing is read,
    not a stray stall. The same synchronize with nothing timed stays medium."""
    timed = tmp_path / "timed"
    timed.mkdir()
    (timed / "train.py").write_text(_event_timed_loop("    log['run_time'] = start_run.elapsed_time(end_run) / 1000."))
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "train.py").write_text(_event_timed_loop("    pass"))
    assert [f.confidence for f in _found(timed, ("TR209",))] == ["low"]
    assert [f.confidence for f in _found(plain, ("TR209",))] == ["high"]


PRODUCT_AS_ONE_DIM = '''import torch


def local_attention(attn, values, n, heads, k, h, w, c):
    attn = attn.view(n, heads, k, h * w)
    out = (attn.unsqueeze(2) * values).sum(dim=3).permute(3, 0, 1, 2).view(h * w, n, c)
    return out


def merged_wrongly(x, n, h, w, c):
    return x.permute(0, 3, 1, 2).view(n, h * w, c)
'''


def test_a_product_the_function_uses_as_one_dimension_is_not_a_merge(tmp_path):
    """AOT: `attn.view(n, heads, k, h * w)`, then `(...).sum(dim=3).permute(3, 0, 1, 2)
    .view(h * w, n, c)`: `h * w` is the size of one dimension there, so the view only merges
    heads and channels, still adjacent and in order. A product nothing gives as one
    dimension, merging reordered dimensions, stays a finding."""
    (tmp_path / "attn.py").write_text(PRODUCT_AS_ONE_DIM)
    lines = {f.line for f in _found(tmp_path, ("TR421",))}
    assert lines == {11}


def _amp_script(call_amp: str) -> str:
    return f'''import torch
from torch import nn


def train(net, loader, epochs, amp=True):
    optimizer = torch.optim.Adam(net.parameters())
    grad_scaler = torch.cuda.amp.GradScaler(enabled=amp)
    for _ in range(epochs):
        for x, y in loader:
            with torch.cuda.amp.autocast(enabled=amp):
                loss = (net(x) - y).pow(2).mean()
            optimizer.zero_grad()
            grad_scaler.scale(loss).backward()
            torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
            grad_scaler.step(optimizer)
            grad_scaler.update()


if __name__ == "__main__":
    data = [(torch.randn(4, 8), torch.randn(4, 1))]
    train(nn.Linear(8, 1), data, 3{call_amp})
    train(nn.Linear(8, 1), data, 5, amp=False)
'''


def test_a_scaler_enabled_by_a_flag_every_call_passes_false_is_disabled(tmp_path):
    """LVM-Med: `GradScaler(enabled=amp)` in `train_net(..., amp=True)`, but both calls of the
    script pass `amp=False`: the scaler does nothing and the clip sees true gradients. A call
    that leaves the default (True) keeps the finding."""
    off = tmp_path / "off"
    off.mkdir()
    (off / "train.py").write_text(_amp_script(", amp=False"))
    on = tmp_path / "on"
    on.mkdir()
    (on / "train.py").write_text(_amp_script(""))
    assert not _found(off, ("TR416",))
    assert [f.line for f in _found(on, ("TR416",))] == [14]


UTILS = '''import torch


def fit(model, loader, optimizer):
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()


def old_fit(model, loader, optimizer):
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
'''

MAIN = '''import torch
from utils import fit

if __name__ == "__main__":
    model = torch.nn.Linear(4, 1)
    data = [(torch.randn(2, 4), torch.randn(2, 1))]
    fit(model, data, torch.optim.SGD(model.parameters(), lr=0.1))
'''


def test_a_defect_in_a_function_nothing_in_the_project_calls_is_hidden(tmp_path):
    """PPLM's `paper_code`, PSMNet's `scale_random_crop`: the defect sits in a module-level
    function of an imported module that no file calls (an abandoned experiment): it never
    runs, so it is low confidence. The same defect in the function the script calls stays."""
    (tmp_path / "utils.py").write_text(UTILS)
    (tmp_path / "main.py").write_text(MAIN)
    assert _confidences(tmp_path, ("TR401",)) == {5: "high", 12: "low"}
    # a file nothing imports is not judged (a stray copy may be run by hand)
    (tmp_path / "main.py").write_text(MAIN.replace("from utils import fit", "fit = None"))
    assert set(_confidences(tmp_path, ("TR401",)).values()) == {"high"}


STRAY_UTILS = '''import torch
from torch._six import inf


def grad_norm(parameters):
    return max(p.grad.abs().max() for p in parameters) if parameters else inf
'''


def test_a_module_nothing_imports_in_a_project_that_imports_itself_is_hidden(tmp_path):
    """SwissArmyTransformer's `examples/mae/util/misc.py`, frozen-in-time's
    `utils/custom_transforms.py`: a utility module no file imports, that does nothing when
    run, in a project whose other modules import each other: its removed import never
    fails, its defects never run: low. Once a file imports it, the finding is high again."""
    (tmp_path / "helpers.py").write_text("def double(x):\n    return 2 * x\n")
    (tmp_path / "train.py").write_text("from helpers import double\n\nprint(double(3))\n")
    (tmp_path / "misc.py").write_text(STRAY_UTILS)
    assert set(_confidences(tmp_path, ("TR429",)).values()) == {"low"}
    (tmp_path / "train.py").write_text("from helpers import double\nimport misc\n\nprint(double(3))\n")
    assert set(_confidences(tmp_path, ("TR429",)).values()) == {"high"}


RESUME_AND_EVALUATE = '''import argparse
import torch
from torch import nn

parser = argparse.ArgumentParser()
parser.add_argument("--resume")
parser.add_argument("--load_model_path")
parser.add_argument("--mode", default="train")
args = parser.parse_args()


def build():
    return nn.Linear(8, 2)


def train(args):
    model = build()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 10)
    start = 0
    if args.resume:
        checkpoint = torch.load(args.resume, map_location="cpu")
        start = checkpoint["epoch"] + 1
        model.load_state_dict(checkpoint["model"])
        optimizer.load_state_dict(checkpoint["optimizer"])
    if args.load_model_path:
        checkpoint = torch.load(args.load_model_path, map_location="cpu")
        model.load_state_dict(checkpoint["model"], strict=False)
    if args.resume:
        scheduler.load_state_dict(checkpoint["scheduler"])
    for epoch in range(start, 100):
        for x, y in [(torch.randn(4, 8), torch.randint(0, 2, (4,)))]:
            loss = nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        scheduler.step()
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                    "scheduler": scheduler.state_dict(), "epoch": epoch}, "last.pt")


def evaluate(args):
    checkpoint = torch.load(args.load_model_path, map_location="cpu")
    print("epoch", checkpoint["epoch"])
    model = build()
    model.load_state_dict(checkpoint["model"])
    model.eval()


if args.mode == "train":
    train(args)
else:
    evaluate(args)
'''


def test_resume_restored_under_the_same_condition_and_an_evaluation_function_are_no_resume_gaps(tmp_path):
    """DRAGON: `train()` restores the scheduler under a second `if resume:` after an `if
    args.load_model_path:` reload rebound `checkpoint`; `evaluate()` reads the epoch of a
    checkpoint in a file whose `train()` trains. Neither resume misses state. Without the
    scheduler restore the resume in `train()` is reported."""
    (tmp_path / "dragon.py").write_text(RESUME_AND_EVALUATE)
    assert not _found(tmp_path, ("TR518",))
    (tmp_path / "dragon.py").write_text(RESUME_AND_EVALUATE.replace(
        '    if args.resume:\n        scheduler.load_state_dict(checkpoint["scheduler"])\n', ''))
    assert [f.line for f in _found(tmp_path, ("TR518",))] == [22]


EMA_RESUME = '''import torch
from torch import nn


class ModelEMA:
    def __init__(self, model, decay=0.9999, updates=0):
        self.ema = nn.Linear(8, 2)
        self.updates = updates

    def update(self, model):
        self.updates += 1


def train(path, nb=100):
    model = nn.Linear(8, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    ckpt = torch.load(path)
    model.load_state_dict(ckpt["model"])
    optimizer.load_state_dict(ckpt["optimizer"])
    start_epoch = ckpt["epoch"] + 1
    ema = ModelEMA(model)
    ema.updates = start_epoch * nb
    for epoch in range(start_epoch, 300):
        for x, y in [(torch.randn(4, 8), torch.randn(4, 2))]:
            loss = (model(x) - y).pow(2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            ema.update(model)
'''


def test_an_ema_counter_set_after_its_construction_is_restored(tmp_path):
    """YOLOR / YOLOv5: `ema = ModelEMA(model)` after the resume, then `ema.updates =
    start_epoch * nb // accumulate`: the warm-up counter is restored. Without that line the
    rebuilt EMA is reported."""
    (tmp_path / "train.py").write_text(EMA_RESUME)
    assert not [f for f in _found(tmp_path, ("TR518",)) if "ModelEMA" in f.message]
    (tmp_path / "train.py").write_text(EMA_RESUME.replace("    ema.updates = start_epoch * nb\n", ""))
    assert [f.line for f in _found(tmp_path, ("TR518",)) if "ModelEMA" in f.message] == [21]


EVAL_SCRIPT = '''import argparse
import torch
from config import ConfigParser
from model import Net


def main(config):
    model = Net()
    checkpoint = torch.load(config.resume)
    model.load_state_dict(checkpoint["state_dict"])
    model.eval()
    print("evaluated at epoch", checkpoint["epoch"])


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("-r", "--resume")
    main(ConfigParser.from_args(parser))
'''


def test_an_evaluation_script_that_parses_arguments_through_a_project_helper_resumes_nothing(tmp_path):
    """RIDE's `test.py`: loads `config.resume` and evaluates; it parses its arguments through
    the project's `ConfigParser.from_args` (no `parse_args()` call of its own) but runs under a
    `__main__` guard: an entry script that trains nothing, so there is no training to resume."""
    (tmp_path / "config.py").write_text("class ConfigParser:\n    @classmethod\n    def from_args(cls, p):\n"
                                        "        return p.parse_args()\n")
    (tmp_path / "model.py").write_text("from torch import nn\n\n\nclass Net(nn.Linear):\n"
                                       "    def __init__(self):\n        super().__init__(8, 2)\n")
    (tmp_path / "train.py").write_text(
        "import torch\nfrom model import Net\n\nnet = Net()\nopt = torch.optim.Adam(net.parameters())\n"
        "for epoch in range(3):\n    for x in [torch.randn(2, 8)]:\n        loss = net(x).sum()\n"
        "        opt.zero_grad()\n        loss.backward()\n        opt.step()\n"
        "    torch.save({'state_dict': net.state_dict(), 'optimizer': opt.state_dict(), 'epoch': epoch}, 'c.pt')\n")
    (tmp_path / "test.py").write_text(EVAL_SCRIPT)
    assert not [f for f in _found(tmp_path, ("TR518",)) if f.path.endswith("test.py")]


WRAPPED_AND_MOVED = '''import torch
from torch import nn


def train():
    model = nn.DataParallel(nn.Linear(8, 2)).cuda()
    torch.save({"state_dict": model.state_dict()}, "ckpt.pth")


def test(path):
    model = nn.Linear(8, 2)
    model = torch.nn.DataParallel(model).cuda()
    checkpoint = torch.load(path)
    model.load_state_dict(checkpoint["state_dict"])


def test_plain(path):
    model = nn.Linear(8, 2).cuda()
    checkpoint = torch.load(path)
    model.load_state_dict(checkpoint["state_dict"])
'''


def test_a_wrapper_moved_in_the_same_statement_still_wraps(tmp_path):
    """TransBTS: `model = torch.nn.DataParallel(model).cuda()` before the load: the model the
    `module.` keys go into is wrapped too. The unwrapped model of `test_plain` stays a
    finding."""
    (tmp_path / "run.py").write_text(WRAPPED_AND_MOVED)
    assert [f.line for f in _found(tmp_path, ("TR517",))] == [20]


ARCH_WEIGHTS = '''import torch
from torch import nn
from torch.autograd import Variable


class Network(nn.Module):
    def __init__(self, k, ops):
        super().__init__()
        self.stem = nn.Linear(8, 8)
        self.alphas_normal = Variable(1e-3 * torch.randn(k, ops), requires_grad=True)
        self._arch_parameters = [self.alphas_normal]

    def arch_parameters(self):
        return self._arch_parameters

    def forward(self, x):
        return self.stem(x) * torch.softmax(self.alphas_normal, dim=-1).sum()


class Forgotten(nn.Module):
    def __init__(self, k, ops):
        super().__init__()
        self.stem = nn.Linear(8, 8)
        self.alphas_normal = Variable(1e-3 * torch.randn(k, ops), requires_grad=True)

    def forward(self, x):
        return self.stem(x) * torch.softmax(self.alphas_normal, dim=-1).sum()
'''


def test_requires_grad_tensors_a_method_hands_out_are_kept_out_on_purpose(tmp_path):
    """DARTS: `alphas_normal` is a `requires_grad` tensor, not a Parameter, listed in
    `self._arch_parameters` that `arch_parameters()` returns to a second optimizer: kept out of
    `parameters()` on purpose. A class that never hands it out stays a finding."""
    (tmp_path / "model_search.py").write_text(ARCH_WEIGHTS)
    assert [f.line for f in _found(tmp_path, ("TR511",))] == [24]


GPU_BRANCHES = '''import torch
from torch import nn


class Baseline:
    def __init__(self, use_gpu):
        self.use_gpu = use_gpu
        self.model = nn.Linear(8, 1)
        if use_gpu:
            self.model.cuda()

    def predict(self, feats):
        with torch.no_grad():
            if self.use_gpu:
                x = torch.from_numpy(feats).float().cuda()
                prediction = self.model(x).cpu().data.numpy().ravel()
            else:
                x = torch.from_numpy(feats).float()
                prediction = self.model(x).data.numpy().ravel()
        return prediction

    def predict_both(self, feats):
        with torch.no_grad():
            if self.use_gpu:
                x = torch.from_numpy(feats).float().cuda()
            else:
                x = torch.from_numpy(feats).float()
            return self.model(x).data.numpy().ravel()
'''


def test_the_branch_without_the_gpu_moves_of_its_twin_is_the_cpu_one(tmp_path):
    """mjrl: `if self.use_gpu:` moves the input with `.cuda()` and the output with `.cpu()`
    before `.numpy()`; the `else` branch is the same code without them: the CPU path. A
    `.numpy()` after both branches stays a finding."""
    (tmp_path / "baseline.py").write_text(GPU_BRANCHES)
    assert [f.line for f in _found(tmp_path, ("TR502",))] == [28]


CONDA_SPEC = """# This file may be used to create an environment using:
# $ conda create --name <env> --file <this file>
# platform: linux-64
boost=1.68.0=py36h8619c78_1001
python=3.6.8=h0371630_0
pytorch=1.1.0=py3.6_cuda9.0.176_cudnn7.5.1_0
tqdm=4.32.1=py_0
"""


def test_a_conda_spec_file_named_requirements_pins_torch(tmp_path):
    """GROVER: `requirements.txt` is a `conda create --file` spec (`pytorch=1.1.0=<build>`,
    `python=3.6.8=<build>`): the project runs torch 1.1, where `torch.load` unpickles
    everything, so a load of its own Namespace-holding checkpoint does not crash. A pip
    requirements file with a bare `torch` leaves the newest torch."""
    from torchreview.config import detect_target_torch

    (tmp_path / "requirements.txt").write_text(CONDA_SPEC)
    assert detect_target_torch(str(tmp_path)) == (1, 1)
    (tmp_path / "requirements.txt").write_text("numpy\ntorch\ntqdm\n")
    assert detect_target_torch(str(tmp_path)) is None


def test_text_whose_opcodes_underflow_the_stack_is_no_pickle(tmp_path):
    """FocalNet's `requirements.txt` (`cython`, `submitit`, `scipy`, ...) reads as GLOBAL, then
    SETITEM on a one-item stack, INST without a MARK ...: no pickler writes that. A partial
    protocol-0 pickle that calls `os.system` before it runs out stays critical."""
    (tmp_path / "requirements.txt").write_text("cython\nsubmitit\nscipy\ntermcolor\naddict\nyapf\n"
                                               "timm==0.4.12\nalbumentations\n")
    assert not _found(tmp_path, ("TR108",))
    (tmp_path / "partial.txt").write_bytes(b"cos\nsystem\n(S'echo pwned'\ntR")
    assert [f.path.endswith("partial.txt") for f in _found(tmp_path, ("TR108",))] == [True]


CONVERTED_ARGS = '''import os
import torch


def checkpoint(model, rundir, epoch, args=None):
    if args is not None:
        if not isinstance(args, dict):
            args = vars(args)
    torch.save({"epoch": epoch, "state_dict": model.state_dict(), "hyperparameters": args},
               os.path.join(rundir, "checkpoint.pt"))


def load_weights(model, rundir):
    state = torch.load(os.path.join(rundir, "checkpoint.pt"), map_location="cpu")
    model.load_state_dict(state["state_dict"])
    return state["hyperparameters"]
'''


def test_an_args_name_converted_before_the_save_is_no_namespace():
    """DeepEthogram: `checkpoint(..., args)` converts `args = vars(args)` (or
    `OmegaConf.to_container(args)`) before `torch.save`: the checkpoint holds a dict, not a
    Namespace (its weights-only load works; TR520 judged false). Saved unconverted, the
    `args` parameter is still taken for a Namespace by its name."""
    import ast as _ast

    from torchreview.engine.context import FileContext
    from torchreview.engine.facts_checkpoints import checkpoint_facts
    from torchreview.engine.source import SourceFile

    def kinds(text):
        ctx = FileContext(SourceFile(path="utils.py", text=text), _ast.parse(text), target_torch=None,
                          has_torch=True)
        return {e.key: e.kind for save in checkpoint_facts(ctx).saves for e in save.entries}

    assert kinds(CONVERTED_ARGS)["hyperparameters"] != "namespace"
    assert kinds(CONVERTED_ARGS.replace("            args = vars(args)\n", "            pass\n"))[
        "hyperparameters"] == "namespace"


def _bn_script(norm: str) -> str:
    return (
        "import torch\nfrom torch import nn\nfrom torch.utils.data import DataLoader, TensorDataset\n\n"
        f"model = nn.Sequential(nn.Conv2d(3, 8, 3), {norm}, nn.ReLU())\n"
        "data = TensorDataset(torch.randn(16, 3, 32, 32))\n"
        "loader = DataLoader(data, batch_size=1, shuffle=True)\n"
        "optimizer = torch.optim.Adam(model.parameters())\n"
        "for (x,) in loader:\n"
        "    loss = model(x).mean()\n"
        "    optimizer.zero_grad()\n"
        "    loss.backward()\n"
        "    optimizer.step()\n")


def test_one_sample_batches_with_spatial_batchnorm_are_hidden_advice(tmp_path):
    """PyTorch_Guide / pytorch_for_neural_networks: `batch_size=1` UNets with BatchNorm2d on
    256x256 maps: the statistics come from the image's pixels, nothing fails (pix2pix trains so
    on purpose): low advice. A BatchNorm1d model on (N, C) features stays a finding."""
    spatial = tmp_path / "spatial"
    spatial.mkdir()
    (spatial / "train.py").write_text(_bn_script("nn.BatchNorm2d(8)"))
    flat = tmp_path / "flat"
    flat.mkdir()
    (flat / "train.py").write_text(_bn_script("nn.Flatten(), nn.BatchNorm1d(8 * 30 * 30)"))
    assert [f.confidence for f in _found(spatial, ("TR512",))] == ["low"]
    assert [f.confidence for f in _found(flat, ("TR512",))] == ["high"]


def _exercise_notebook(layer: str) -> str:
    import json

    cells = [
        "import torch\nimport torch.nn.functional as F",
        "class MyNet(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        f"        self.linear_1 = torch.nn.Linear(8, 4)\n        self.extra = {layer}\n"
        "    def forward(self, x):\n        return self.extra(F.relu(self.linear_1(x)))",
        "model = MyNet()\noptimizer = torch.optim.Adam(model.parameters())\n"
        "for x, y in [(torch.randn(2, 8), torch.randint(0, 4, (2,)))]:\n"
        "    loss = F.cross_entropy(model(x), y)\n    optimizer.zero_grad()\n    loss.backward()\n"
        "    optimizer.step()",
        "def accuracy(model, x):\n    with torch.no_grad():\n        return model(x).argmax(1)",
        "accuracy(model, torch.randn(2, 8))",
    ]
    return json.dumps({"cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                                  "source": c} for c in cells],
                       "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


def test_inference_without_eval_is_high_only_when_the_model_shows_mode_dependent_layers(tmp_path):
    """dl4sci-webinar (an exercise cell `self.linear_2 = # <YOUR CODE>` that does not parse),
    DeepLearningCrashCourse, dlschl: a missing `.eval()` was reported at high confidence for
    models that show no dropout, BatchNorm or `self.training` read -- judged false every time.
    Without them in sight: medium (hidden by default); a class with Dropout stays high."""
    unknown = tmp_path / "unknown"
    unknown.mkdir()
    (unknown / "lesson.ipynb").write_text(_exercise_notebook("# <YOUR CODE>"))
    known = tmp_path / "known"
    known.mkdir()
    (known / "lesson.ipynb").write_text(_exercise_notebook("torch.nn.Dropout(0.5)"))
    assert [f.confidence for f in _found(unknown, ("TR207",))] == ["medium"]
    assert [f.confidence for f in _found(known, ("TR207",))] == ["high"]


KEY_PAIRS = '''import boto3

SAT_ACCESS_KEY = "eb4d69e273848089c7f9b9599cdcd983"
SAT_SECRET_KEY = "367e9b586f1bd2a7eb1b5e1a7a3a8a5bb74b6c47e5e7d45b1b8b4b7a3f1e9c2d4"


def client_with_placeholder():
    access_key = "Le9tEXAMPLEKEYID0123"
    secret_key = "PUT_SECRET_HERE"
    return boto3.client("s3", aws_access_key_id=access_key, aws_secret_access_key=secret_key)


def client_with_a_lone_key():
    access_key = "9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c"
    return {"key": access_key}
'''


def test_an_access_key_id_beside_its_secret_is_the_pairs_public_half(tmp_path):
    """SwissArmyTransformer: `SAT_ACCESS_KEY` and `SAT_SECRET_KEY` on adjacent lines: one leak,
    reported at the secret; dl-hse-2021: `access_key = '…'` beside `secret_key =
    'PUT_SECRET_HERE'`: the id alone is no secret. An access key written with no secret
    beside it (an API whose single key is the secret) stays a finding."""
    (tmp_path / "download.py").write_text(KEY_PAIRS)
    assert sorted(f.line for f in _found(tmp_path, ("TR107",))) == [4, 14]


HUB_BERT = '''import torch

MODEL = None


def get_bert():
    global MODEL
    if MODEL is None:
        MODEL = torch.hub.load("huggingface/pytorch-transformers", "model", "bert-base-cased")
    return MODEL


@torch.no_grad()
def bert_embed(token_ids):
    model = get_bert()
    return model(token_ids)
'''


def test_a_transformers_hub_entry_comes_back_in_eval_mode(tmp_path):
    """RETRO-pytorch: `torch.hub.load('huggingface/pytorch-transformers', 'model', ...)` calls
    `AutoModel.from_pretrained`, which returns the model in eval mode (library data,
    `library_models.json`); its no-grad use needs no `.eval()`. A generic hub entry of unknown
    mode is still reported."""
    (tmp_path / "retrieval.py").write_text(HUB_BERT)
    assert not _found(tmp_path, ("TR207",))
    (tmp_path / "retrieval.py").write_text(HUB_BERT.replace('"huggingface/pytorch-transformers", "model", '
                                                            '"bert-base-cased"', '"someone/nets", "resnet"'))
    assert [f.line for f in _found(tmp_path, ("TR207",))] == [16]


LAZY_PREDICTOR = '''import torch


class Predictor:
    def __init__(self):
        self._model = None

    def _ensure_model(self):
        if self._model is None:
            model = torch.hub.load("someone/mos", "utmos22")
            model.eval()
            self._model = model

    @torch.inference_mode()
    def score(self, wave):
        self._ensure_model()
        return self._model(wave)
'''


def test_a_lazy_loader_that_switches_to_eval_before_storing_holds_the_model_in_eval(tmp_path):
    """piper's MosPredictor: `self._model = None` in `__init__`, then `_ensure_model()` loads,
    calls `model.eval()` and stores it: the `None` placeholder does not stand for a module in
    training mode. Without that `.eval()` the call is reported."""
    (tmp_path / "mos.py").write_text(LAZY_PREDICTOR)
    assert not _found(tmp_path, ("TR207",))
    (tmp_path / "mos.py").write_text(LAZY_PREDICTOR.replace("            model.eval()\n", ""))
    assert [f.line for f in _found(tmp_path, ("TR207",))] == [16]


CHANNELS_LAST = '''import torch


def flatten_nhwc(images):
    assert images.is_contiguous(memory_format=torch.channels_last)
    return images.permute(0, 2, 3, 1).view(-1)


def flatten_any(images):
    return images.permute(0, 2, 3, 1).view(-1)
'''


def test_a_channels_last_tensor_permuted_to_nhwc_views_fine(tmp_path):
    """ffcv: `assert images.is_contiguous(memory_format=ch.channels_last)` two lines above
    `images.permute(0, 2, 3, 1).view(-1)`: in channels-last memory NHWC is the contiguous
    order, so the view cannot raise. Without that knowledge the view stays a finding."""
    (tmp_path / "normalize.py").write_text(CHANNELS_LAST)
    assert [f.line for f in _found(tmp_path, ("TR421",))] == [10]


ONE_STEP = '''import torch
from torch import nn

model = nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
batches = iter([(torch.randn(2, 4), torch.randn(2, 1))] * 100)


def train_step(accumulation_steps):
    optimizer.zero_grad()
    count = 0
    while True:
        x, y = next(batches)
        loss = (model(x) - y).pow(2).mean() / accumulation_steps
        loss.backward()
        count += 1
        if count == accumulation_steps:
            optimizer.step()
            break


def train_forever():
    optimizer.zero_grad()
    while True:
        x, y = next(batches)
        loss = (model(x) - y).pow(2).mean()
        loss.backward()
        optimizer.step()
        if loss.item() < 1e-3:
            break
'''


def test_a_while_true_micro_step_loop_after_zero_grad_is_one_optimizer_step(tmp_path):
    """GLM's `train_step`: `optimizer.zero_grad()`, then `while True:` micro-steps that call
    `step()` once the accumulation count is reached and `break`: each call of the function is
    one step from cleared gradients. A `while True` that steps on every pass after one
    `zero_grad()` before it still accumulates: reported."""
    (tmp_path / "train.py").write_text(ONE_STEP)
    assert [f.line for f in _found(tmp_path, ("TR401",))] == [24]


GE2E_MODEL = '''import torch
from torch import nn


class SpeakerEncoder(nn.Module):
    def __init__(self, device, loss_device):
        super().__init__()
        self.loss_device = loss_device
        self.lstm = nn.LSTM(40, 256, 3, batch_first=True).to(device)
        self.similarity_weight = nn.Parameter(torch.tensor([10.0])).to(loss_device)

    def forward(self, x):
        return self.lstm(x)[0] * self.similarity_weight.to(x.device)
'''

GE2E_TRAIN = '''import torch
from model import SpeakerEncoder

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
loss_device = torch.device("cpu")
model = SpeakerEncoder(device, loss_device)
'''


def test_a_parameter_moved_to_a_device_every_construction_gives_as_cpu_stays_a_parameter(tmp_path):
    """GE2E speaker encoder (GenerSpeech, ppg-vc): `nn.Parameter(...).to(loss_device)` in
    `__init__`, and every construction passes the CPU (`torch.device("cpu")`, directly or
    through a name bound only to it): `.to` returns the Parameter itself. A construction that
    passes the GPU device keeps the finding."""
    (tmp_path / "model.py").write_text(GE2E_MODEL)
    (tmp_path / "train.py").write_text(GE2E_TRAIN)
    assert not _found(tmp_path, ("TR511",))
    (tmp_path / "train.py").write_text(GE2E_TRAIN.replace("SpeakerEncoder(device, loss_device)",
                                                          "SpeakerEncoder(device, device)"))
    assert [f.line for f in _found(tmp_path, ("TR511",))] == [10]


MODEL_WITH_LOSS = '''import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, encoder):
        super().__init__()
        self.encoder = encoder
        self.classifier = nn.Linear(16, 2)

    def forward(self, input_ids=None, labels=None):
        logits = self.classifier(self.encoder(input_ids))
        prob = torch.softmax(logits, -1)
        if labels is not None:
            loss = nn.functional.cross_entropy(logits, labels)
            return loss, prob
        return prob


class PairDistance(nn.Module):
    def forward(self, a, b):
        loss = (a - b).pow(2).mean()
        return loss


def evaluate(model, batches):
    model.eval()
    with torch.no_grad():
        return [model(x) for x, _ in batches]


def train(model, batches, optimizer, epochs):
    for epoch in range(epochs):
        for step, (x, y) in enumerate(batches):
            model.train()
            loss, _ = model(x, y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if step % 100 == 0:
                evaluate(model, batches)


if __name__ == "__main__":
    net = Model(nn.Linear(8, 16))
    train(net, [(torch.randn(2, 8), torch.tensor([0, 1]))], torch.optim.Adam(net.parameters()), 3)
'''


def test_a_model_whose_forward_also_returns_its_loss_is_a_model(tmp_path):
    """CodeXGLUE: `Model.forward` returns `loss, prob` when labels are given and `prob`
    otherwise; the class was taken for a loss module, so `model.train()` at the top of each
    step was no mode switch and TR504 said nothing restores train mode after `evaluate()`.
    A class whose forward returns a loss on every path stays a loss."""
    import ast as _ast

    from torchreview.engine.semantic import SemanticModel

    (tmp_path / "run.py").write_text(MODEL_WITH_LOSS)
    assert not _found(tmp_path, ("TR504",))
    model = SemanticModel(_ast.parse(MODEL_WITH_LOSS))
    assert not model.hierarchy.is_loss_class("Model") and model.hierarchy.is_loss_class("PairDistance")
