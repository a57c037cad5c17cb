"""Train/eval mode and batch-norm checks: TR504, TR207, TR512, TR503.

Everything here runs inside the global module forward pre-hook, so the common
path is a dictionary lookup and an attribute read; frames are walked only when
something suspicious happens, once per call site.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from torchreview.findings import Finding
from torchreview.runtime._env import Site, caller_is_torch, current_site, plural
from torchreview.runtime.codes import runtime_finding

if TYPE_CHECKING:  # pragma: no cover
    from torchreview.runtime.watcher import Watcher

OTHER, DROPOUT, BATCHNORM = 0, 1, 2


@dataclass
class RootInfo:
    """What we need to know about a module called at the outermost level."""

    ref: Any  # weakref to the module
    cls: str
    has_params: bool
    param_ids: frozenset[int]
    dropouts: list[tuple[str, Any]]  # (qualified name, module) with p > 0
    batchnorms: list[tuple[str, Any]]
    is_ddp: bool = False
    find_unused: bool | None = None  # DDP's find_unused_parameters
    eval_site: Site | None = None  # where it was called in eval mode with grad on

    @property
    def stochastic(self) -> bool:
        return bool(self.dropouts or self.batchnorms)

    def any_stochastic_training(self) -> bool:
        return any(m.training for _, m in self.dropouts + self.batchnorms)


@dataclass
class _Event:
    """A problem seen at a call site, counted until the report is written."""

    site: Site
    detail: str
    count: int = 1
    first_step: int = 0
    extra: dict = field(default_factory=dict)


class ModeChecks:
    def __init__(self, watcher: "Watcher") -> None:
        self.w = watcher
        torch = watcher.torch
        self._bn_base = torch.nn.modules.batchnorm._BatchNorm
        self._dropout_base = torch.nn.modules.dropout._DropoutNd
        self._ddp = getattr(torch.nn.parallel, "DistributedDataParallel", None)
        self.kinds: dict[type, int] = {}
        self.roots: dict[int, RootInfo] = {}
        self.names: dict[int, str] = {}  # id(submodule) -> qualified name in its root
        self.eval_with_grad: dict[int, RootInfo] = {}
        self.tr504: dict[int, _Event] = {}
        self.tr207: dict[Site, _Event] = {}
        self.bn_pending: list[tuple[str, _Event, Any]] = []  # confirmed at the next step
        self.tr512: _Event | None = None
        self.tr503: _Event | None = None

    # -- classification ------------------------------------------------------
    def classify(self, cls: type) -> int:
        kind = BATCHNORM if issubclass(cls, self._bn_base) else (
            DROPOUT if issubclass(cls, self._dropout_base) else OTHER)
        self.kinds[cls] = kind
        return kind

    def root_info(self, module) -> RootInfo:
        info = self.roots.get(id(module))
        if info is not None and info.ref() is module:
            return info
        dropouts, batchnorms = [], []
        inner = module.module if self._ddp and isinstance(module, self._ddp) else module
        for name, sub in inner.named_modules():
            kind = self.kinds.get(type(sub))
            if kind is None:
                kind = self.classify(type(sub))
            if kind == DROPOUT and getattr(sub, "p", 0) > 0:
                dropouts.append((name or type(sub).__name__, sub))
            elif kind == BATCHNORM:
                batchnorms.append((name or type(sub).__name__, sub))
            if name and id(sub) not in self.names:
                self.names[id(sub)] = name
        param_ids = frozenset(id(p) for p in module.parameters())
        info = RootInfo(
            ref=weakref.ref(module), cls=type(module).__name__, has_params=bool(param_ids),
            param_ids=param_ids, dropouts=dropouts, batchnorms=batchnorms,
            is_ddp=bool(self._ddp and isinstance(module, self._ddp)),
            find_unused=getattr(module, "find_unused_parameters", None),
        )
        self.roots[id(module)] = info
        if info.has_params:
            self.w.note_root(module)
        return info

    def module_name(self, module) -> str:
        return self.names.get(id(module)) or type(module).__name__

    # -- called from the forward pre-hook --------------------------------------
    def root_pre(self, module, info: RootInfo) -> None:
        """An outermost forward call: compare the module's mode with grad mode."""
        if not info.stochastic:
            return
        grad = self.w.torch.is_grad_enabled()
        if grad and not module.training:
            self.eval_with_grad[id(module)] = info
            if info.eval_site is None:
                info.eval_site = current_site()
        elif not grad and module.training:
            self._inference_in_train_mode(module, info)

    def _inference_in_train_mode(self, module, info: RootInfo) -> None:
        active_dropout = [n for n, m in info.dropouts if m.training]
        trained = self.w.is_trained(info)
        if not active_dropout and not (trained and info.batchnorms):
            return  # BN-only model not being trained: BN recalibration, EMA teachers
        if caller_is_torch():
            return  # torch's own helpers (swa_utils.update_bn) do this on purpose
        site = current_site()
        event = self.tr207.get(site)
        if event is not None:
            event.count += 1
            return
        parts = []
        if active_dropout:
            parts.append(f"dropout active in {', '.join(active_dropout[:3])}")
        if info.batchnorms and any(m.training for _, m in info.batchnorms):
            parts.append("batch-norm updating its running statistics")
        detail = " and ".join(parts) or "dropout/batch-norm in train mode"
        self.tr207[site] = _Event(site, detail, first_step=self.w.step,
                                  extra={"label": self.w.module_label(module, info.cls)})
        self.w.warn("TR207", f"{info.cls} called under no_grad/inference_mode in train mode "
                             f"({detail})", site)

    def bn_pre(self, module, args) -> None:
        if not module.training or not args or not self.w.torch.is_grad_enabled():
            return
        x = args[0]
        shape = getattr(x, "shape", None)
        if not shape:
            return
        n = shape[0]
        short = self.w.pipeline.short_batch
        if short is not None:
            code, known, extra = "TR503", self.tr503, {"n": n, "loader": short}
        elif n == 1:
            code, known, extra = "TR512", self.tr512, {}
        else:
            return
        if len(self.bn_pending) > 16:
            return
        # Walk the stack only the first time; later events reuse the site.  A
        # short last batch is fixed on the DataLoader: point at its loop.
        if known is not None:
            site = known.site
        elif short is not None and short.site is not None:
            site = short.site
        else:
            site = current_site()
        event = _Event(site, self.module_name(module), first_step=self.w.step + 1, extra=extra)
        self.bn_pending.append((code, event, module))

    # -- called from the optimizer step pre-hook ---------------------------------
    def on_step(self, tracker) -> None:
        if self.eval_with_grad:
            for key, info in list(self.eval_with_grad.items()):
                module = info.ref()
                if module is None or module.training or info.any_stochastic_training():
                    continue
                if not tracker.has_grads_for(info.param_ids):
                    continue  # frozen feature extractor in eval mode: fine
                event = self.tr504.get(key)
                if event is None:
                    self.tr504[key] = _Event(info.eval_site or tracker.site,
                                             self.w.module_label(module, info.cls),
                                             first_step=self.w.step + 1)
                    self.w.warn("TR504", f"training step on {info.cls} while it is in eval "
                                         "mode (dropout/batch-norm disabled)",
                                info.eval_site or tracker.site)
                else:
                    event.count += 1
            self.eval_with_grad.clear()
        if self.bn_pending:
            for code, event, _ in self.bn_pending:
                self._confirm_bn(code, event)
            self.bn_pending.clear()

    def _confirm_bn(self, code: str, event: _Event) -> None:
        current = self.tr503 if code == "TR503" else self.tr512
        if current is not None:
            if current.first_step != event.first_step:
                current.count += 1
            return
        if code == "TR503":
            self.tr503 = event
            self.w.warn("TR503", f"{event.detail} trained on a short last batch of "
                                 f"{event.extra['n']}", event.site)
        else:
            self.tr512 = event
            self.w.warn("TR512", f"{event.detail} in train mode got a batch of 1", event.site)

    def explain_batch_of_one(self) -> None:
        """BatchNorm raised 'Expected more than 1 value per channel': confirm now."""
        for code, event, _ in self.bn_pending:
            self._confirm_bn(code, event)
        self.bn_pending.clear()

    # -- report ------------------------------------------------------------------
    def findings(self) -> list[Finding]:
        out: list[Finding] = []
        for event in self.tr504.values():
            out.append(runtime_finding("TR504", (
                f"{plural(event.count, 'optimizer step')} (first: step {event.first_step}) "
                f"trained {event.detail} while it was in eval mode: dropout is off and "
                "batch-norm uses frozen running statistics during training. Call "
                "`model.train()` after validation, before the next training step."),
                event.site))
        for event in self.tr207.values():
            out.append(runtime_finding("TR207", (
                f"{event.extra['label']} called under no_grad/inference_mode in train mode "
                f"({event.detail}), {plural(event.count, 'time')}: inference results are "
                "random (dropout) or corrupt the batch-norm statistics. Call `model.eval()` "
                "before evaluating and `model.train()` after."), event.site))
        if self.tr512 is not None:
            e = self.tr512
            out.append(runtime_finding("TR512", (
                f"BatchNorm `{e.detail}` in train mode was fed a batch of 1 sample "
                f"({plural(e.count, 'step')}, first at step {e.first_step}): its batch "
                "statistics come from a single sample. Use a batch size > 1, GroupNorm/"
                "LayerNorm, or keep batch-norm in eval mode."), e.site))
        if self.tr503 is not None:
            e = self.tr503
            loader = e.extra["loader"]
            out.append(runtime_finding("TR503", (
                f"BatchNorm `{e.detail}` trained on a short last batch of {e.extra['n']} "
                f"sample(s) (full batches: {loader.batch_size}) at step {e.first_step}"
                f"{'' if e.count == 1 else f' and {e.count - 1} more epoch(s)'}: "
                f"{loader.describe()} has drop_last=False. Its statistics are noisy and "
                "the gradient of that step is unreliable; pass `drop_last=True` to the "
                "training DataLoader."), e.site))
        return out
