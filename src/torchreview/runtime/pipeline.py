"""Input-pipeline checks: TR605/TR202 (waiting for data), TR513, short batches.

DataLoader iteration has no hook, so ``_BaseDataLoaderIter.__next__`` is
wrapped (and restored on exit) to time how long each batch takes to arrive.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from torchreview.findings import Finding
from torchreview.runtime._env import Site, current_site, plural
from torchreview.runtime.codes import runtime_finding

if TYPE_CHECKING:  # pragma: no cover
    from torchreview.runtime.watcher import Watcher

_WARMUP = 2  # batches per epoch not timed (worker start-up, first transforms)


class LoaderStats:
    """One DataLoader (identified by its index sampler) across its epochs."""

    def __init__(self, it) -> None:
        self.index_sampler = getattr(it, "_index_sampler", None)
        self.sampler = getattr(self.index_sampler, "sampler", self.index_sampler)
        self.num_workers = getattr(it, "_num_workers", 0)
        self.batch_size = getattr(self.index_sampler, "batch_size", None)
        self.drop_last = getattr(it, "_drop_last", False)
        self.pin_memory = getattr(it, "_pin_memory", False)
        self.persistent = getattr(it, "_persistent_workers", False)
        self.prefetch = getattr(it, "_prefetch_factor", None)
        self.dataset = type(getattr(it, "_dataset", None)).__name__
        self.site: Site | None = None
        self.epochs = 0
        self.wait = 0.0
        self.cycle = 0.0
        self.timed = 0
        self.train_cycles = 0
        self.last_return = 0.0
        self.last_step = -1
        self.n_batches = None
        self.short = False
        self.sampler_epoch = None
        self.stale_epochs = 0
        self.reported = False
        self.second_epoch_step: int | None = None

    def describe(self) -> str:
        parts = [f"num_workers={self.num_workers}", f"batch_size={self.batch_size}",
                 f"pin_memory={self.pin_memory}"]
        if self.num_workers:
            parts += [f"persistent_workers={self.persistent}",
                      f"prefetch_factor={self.prefetch}"]
        return f"DataLoader({self.dataset}, {', '.join(parts)})"

    def new_epoch(self, it) -> None:
        self.epochs += 1
        self.short = False
        self.n_batches = None
        if self.batch_size and not self.drop_last and self.sampler is not None:
            try:
                samples = len(self.sampler)
                self.n_batches = len(self.index_sampler)
                self.short = samples % self.batch_size != 0
            except TypeError:
                pass


class PipelineChecks:
    def __init__(self, watcher: "Watcher") -> None:
        self.w = watcher
        self.loaders: dict[int, LoaderStats] = {}
        self.short_batch: LoaderStats | None = None
        torch = watcher.torch
        self._dist_sampler = torch.utils.data.distributed.DistributedSampler
        self._tr513: list[tuple[LoaderStats, int]] = []

    def install(self) -> None:
        from torch.utils.data import dataloader

        cls = dataloader._BaseDataLoaderIter
        original = cls.__next__
        checks = self

        def __next__(it):
            start = time.perf_counter()
            batch = original(it)
            checks.on_batch(it, start, time.perf_counter())
            return batch

        __next__.__wrapped__ = original
        self.w.patch(cls, "__next__", __next__)

    def on_batch(self, it, start: float, end: float) -> None:
        try:
            self._on_batch(it, start, end)
        except Exception as exc:
            self.w.internal_error("DataLoader timing", exc)

    def _on_batch(self, it, start: float, end: float) -> None:
        self.w.series.on_data(start, end)
        key = id(getattr(it, "_index_sampler", it))
        stats = self.loaders.get(key)
        if stats is None or stats.index_sampler is not getattr(it, "_index_sampler", None):
            stats = self.loaders[key] = LoaderStats(it)
        number = getattr(it, "_num_yielded", 0)
        step = self.w.step
        if number <= 1:
            stats.new_epoch(it)
            if stats.epochs == 2 and stats.second_epoch_step is None:
                stats.second_epoch_step = step
            if stats.site is None:
                stats.site = current_site()
            self._sampler_epoch(stats)
            self.w.reset_stack()
        elif number > _WARMUP + 1:
            stats.wait += end - start
            stats.cycle += end - stats.last_return
            stats.timed += 1
            if step != stats.last_step:
                stats.train_cycles += 1
            if stats.timed % 50 == 0:
                self._judge(stats, live=True)
        stats.last_return = end
        stats.last_step = step
        self.short_batch = stats if (stats.short and number == stats.n_batches) else None

    def warm_until(self) -> int | None:
        """Step at which the training loaders' first epoch ended; -1 while one is
        still in its first epoch; None when no DataLoader feeds training.

        Memory may grow during a first epoch on purpose (datasets caching items).
        """
        training = [s for s in self.loaders.values() if s.train_cycles]
        if not training:
            return None
        if any(s.second_epoch_step is None for s in training):
            return -1
        return max(s.second_epoch_step for s in training)

    def _sampler_epoch(self, stats: LoaderStats) -> None:
        sampler = stats.sampler
        if not isinstance(sampler, self._dist_sampler) or not getattr(sampler, "shuffle", False):
            return
        epoch = getattr(sampler, "epoch", None)
        if stats.sampler_epoch is not None and epoch == stats.sampler_epoch:
            stats.stale_epochs += 1
            if stats.stale_epochs == 1:
                self.w.warn("TR513", f"DistributedSampler epoch still {epoch} at epoch "
                                     f"{stats.epochs}: same shuffle as the last epoch",
                            stats.site)
        stats.sampler_epoch = epoch

    def _judge(self, stats: LoaderStats, live: bool = False) -> str | None:
        """The code to report for this loader, or None when it is not the bottleneck."""
        o = self.w.options
        if stats.timed < 10 or stats.cycle <= 0 or stats.train_cycles * 8 < stats.timed:
            return None
        share = stats.wait / stats.cycle
        mean_wait = stats.wait / stats.timed
        if share < o.data_wait_share or stats.wait < o.min_data_wait or mean_wait < 0.001:
            return None
        code = "TR202" if stats.num_workers == 0 else "TR605"
        if live and not stats.reported:
            stats.reported = True
            self.w.warn(code, f"{share:.0%} of step time spent waiting for the next batch "
                              f"({stats.describe()})", stats.site)
        return code

    def findings(self) -> list[Finding]:
        out: list[Finding] = []
        for stats in self.loaders.values():
            site = stats.site or self.w.step_site()
            code = self._judge(stats)
            if code is not None:
                share = stats.wait / stats.cycle
                per = stats.cycle / stats.timed * 1000
                wait = stats.wait / stats.timed * 1000
                fix = ("load batches in worker processes: `num_workers=` a few per core, "
                       "with `persistent_workers=True`" if code == "TR202" else
                       "add workers, raise `prefetch_factor`, set `persistent_workers=True`, "
                       "or make `__getitem__`/transforms cheaper (pre-process once)")
                out.append(runtime_finding(code, (
                    f"the training loop waited for the next batch {share:.0%} of the time "
                    f"({wait:.1f} ms of {per:.1f} ms per step over {stats.timed} steps) "
                    f"with {stats.describe()}: {fix}."), site))
            if stats.stale_epochs:
                out.append(runtime_finding("TR513", (
                    f"DistributedSampler.set_epoch() was not called between epochs "
                    f"(epoch stayed {stats.sampler_epoch} for "
                    f"{plural(stats.stale_epochs + 1, 'epoch')}): every epoch replays the same "
                    "shuffle. Call `sampler.set_epoch(epoch)` before iterating each epoch."),
                    site))
        return out
