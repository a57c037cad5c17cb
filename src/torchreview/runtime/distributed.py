"""Distributed runs: rank bookkeeping, merging reports, TR606.

Two launch styles are supported:

* ``torchrun`` (one ``torchreview run`` per rank, or ``watch()`` in each rank):
  before the default process group is destroyed (or at exit if it is still
  alive) every rank puts its findings, as JSON, in the group's key-value
  store; rank 0 collects them and writes the merged report.
* ``torch.multiprocessing.spawn`` from a watched parent: the function given to
  ``spawn`` is wrapped so each child runs under its own watcher and writes its
  findings to a directory the parent reads when it stops.
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import sys
import tempfile
import time
from datetime import timedelta
from typing import TYPE_CHECKING

from torchreview.findings import Finding
from torchreview.runtime._env import Site, plural, short_list
from torchreview.runtime.codes import finding_from_json, runtime_finding

if TYPE_CHECKING:  # pragma: no cover
    from torchreview.runtime.watcher import Watcher

_PREFIX = "torchreview/runtime/v1"


def env_rank() -> tuple[int | None, int]:
    try:
        rank = int(os.environ["RANK"])
        return rank, int(os.environ.get("WORLD_SIZE", "1"))
    except (KeyError, ValueError):
        return None, 1


class SpawnEntry:
    """Picklable wrapper of the function given to ``torch.multiprocessing.spawn``.

    It carries the parent's watcher class (pickled by reference) so each child
    builds its own watcher without this module importing the watcher's."""

    def __init__(self, fn, directory: str, options: dict, watcher_class: type) -> None:
        self.fn = fn
        self.directory = directory
        self.options = options
        self.watcher_class = watcher_class

    def __call__(self, index, *args):
        watcher = self.watcher_class(**self.options, write_report=False, rank_dir=self.directory,
                          rank_hint=index)
        watcher.start()
        try:
            return self.fn(index, *args)
        except BaseException as exc:
            watcher.explain(exc)
            raise
        finally:
            watcher.stop()


class DistChecks:
    def __init__(self, watcher: "Watcher") -> None:
        self.w = watcher
        self.rank: int | None = watcher.options.rank_hint
        self.world = 1
        self.remote: list[dict] = []
        self.sent = False
        self.merged = False
        self.spawn_dir: str | None = None
        self.unused_error_site: Site | None = None
        self.missing_ranks: list[int] = []

    # -- setup ---------------------------------------------------------------------
    def install(self) -> None:
        torch = self.w.torch
        dist = torch.distributed
        if dist.is_available():
            c10d = sys.modules.get("torch.distributed.distributed_c10d")
            original = dist.destroy_process_group
            checks = self

            def destroy_process_group(group=None, *args, **kwargs):
                if group is None:
                    checks.merge()
                return original(group, *args, **kwargs)

            destroy_process_group.__wrapped__ = original
            self.w.patch(dist, "destroy_process_group", destroy_process_group)
            if c10d is not None and getattr(c10d, "destroy_process_group", None) is original:
                self.w.patch(c10d, "destroy_process_group", destroy_process_group)
        # the module, not the ``spawn`` function that shadows its name
        spawn_module = importlib.import_module("torch.multiprocessing.spawn")
        original_start = spawn_module.start_processes

        def start_processes(fn, *args, **kwargs):
            return original_start(SpawnEntry(fn, self.spawn_directory(), self.w.child_options(),
                                             type(self.w)),
                                  *args, **kwargs)

        start_processes.__wrapped__ = original_start
        self.w.patch(spawn_module, "start_processes", start_processes)
        if getattr(torch.multiprocessing, "start_processes", None) is original_start:
            self.w.patch(torch.multiprocessing, "start_processes", start_processes)

    def spawn_directory(self) -> str:
        if self.spawn_dir is None:
            self.spawn_dir = tempfile.mkdtemp(prefix="torchreview-ranks-")
        return self.spawn_dir

    def note_rank(self) -> None:
        dist = self.w.torch.distributed
        if dist.is_available() and dist.is_initialized():
            self.rank, self.world = dist.get_rank(), dist.get_world_size()
        elif self.rank is None:
            rank, world = env_rank()
            if rank is not None:
                self.rank, self.world = rank, world

    @property
    def is_writer(self) -> bool:
        """Rank 0 (or a non-distributed process) writes the report."""
        if self.w.options.rank_dir:
            return False
        return not self.sent and (self.rank in (None, 0) or self.world <= 1)

    def own_output(self, output: str | None) -> str | None | bool:
        """Where a rank > 0 whose findings never reached rank 0 writes them.

        False when this rank has nothing to write (rank 0 has its findings).
        """
        if self.is_writer or self.sent or self.w.options.rank_dir:
            return False
        if output is None:
            return None
        root, ext = os.path.splitext(output)
        return f"{root}.rank{self.rank}{ext}"

    # -- merging -------------------------------------------------------------------
    def payload(self, findings: list[Finding]) -> dict:
        return {"rank": self.rank if self.rank is not None else 0, "steps": self.w.step,
                "trained": bool(self.w.trackers),
                "findings": [dict(f.to_json(), source_line=f.source_line) for f in findings]}

    def merge(self) -> None:
        """Exchange findings through the process group's store (torchrun style)."""
        if self.merged or self.w.options.rank_dir:
            return
        self.note_rank()
        if self.world <= 1 or self.rank is None:
            return
        self.merged = True
        try:
            from torch.distributed import distributed_c10d

            store = distributed_c10d._get_default_store()
        except Exception as exc:
            self.w.internal_error("rank merge", exc)
            return
        if self.rank != 0:
            try:
                data = json.dumps(self.payload(self.w.collect()))
                store.set(f"{_PREFIX}/rank{self.rank}", data)
                self.sent = True
            except Exception as exc:
                self.w.internal_error("rank merge", exc)
            return
        deadline = time.monotonic() + self.w.options.merge_timeout
        for rank in range(1, self.world):
            key = f"{_PREFIX}/rank{rank}"
            try:
                left = max(0.1, deadline - time.monotonic())
                store.wait([key], timedelta(seconds=left))
                self.remote.append(json.loads(store.get(key)))
            except Exception:
                self.missing_ranks.append(rank)

    def collect_children(self) -> None:
        if not self.spawn_dir:
            return
        try:
            for name in sorted(os.listdir(self.spawn_dir)):
                if name.endswith(".json"):
                    with open(os.path.join(self.spawn_dir, name), encoding="utf-8") as fh:
                        self.remote.append(json.load(fh))
        except (OSError, ValueError) as exc:
            self.w.internal_error("rank merge", exc)
        finally:
            shutil.rmtree(self.spawn_dir, ignore_errors=True)
            self.spawn_dir = None

    def write_child_payload(self, findings: list[Finding]) -> None:
        directory = self.w.options.rank_dir
        self.note_rank()
        data = self.payload(findings)
        path = os.path.join(directory, f"rank{data['rank']}-{os.getpid()}.json")
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(data, fh)
        os.replace(tmp, path)

    def merged_findings(self, own: list[Finding]) -> list[Finding]:
        """Own findings plus other ranks', one entry per (code, place), ranks named."""
        own_rank = self.rank if self.rank is not None else 0
        sources = [(own_rank, own, self.w.step, bool(self.w.trackers))]
        for data in self.remote:
            items = [finding_from_json(d) for d in data.get("findings", [])]
            sources.append((int(data.get("rank", 0)), items, int(data.get("steps", 0)),
                            bool(data.get("trained", True))))
        if len(sources) == 1 and self.world <= 1:
            return own
        groups: dict[tuple, tuple[Finding, list[int]]] = {}
        for rank, items, _, _ in sorted(sources, key=lambda s: s[0]):
            for f in items:
                key = (f.code, f.path, f.line)
                if key in groups:
                    groups[key][1].append(rank)
                else:
                    groups[key] = (f, [rank])
        out = []
        for f, ranks in groups.values():
            label = f"rank {ranks[0]}" if len(ranks) == 1 else f"ranks {', '.join(map(str, ranks))}"
            out.append(_with_message(f, f"{f.message} [{label}]"))
        steps = {rank: n for rank, _, n, trained in sources if trained}
        if len(set(steps.values())) > 1:
            listing = ", ".join(f"rank {r}: {n}" for r, n in sorted(steps.items()))
            out.append(runtime_finding("TR606", (
                f"ranks ran different numbers of optimizer steps ({listing}): with DDP the "
                "ranks wait for each other in every step, so uneven data per rank hangs or "
                "desynchronises training. Shard data evenly (DistributedSampler, "
                "drop_last=True) or use the `join()` context manager."), self.w.step_site()))
        if self.missing_ranks:
            self.w.notes.append(
                f"no runtime report from {plural(len(self.missing_ranks), 'rank')}: "
                f"{', '.join(map(str, self.missing_ranks))}")
        return out

    # -- TR606: DDP parameters without gradients ----------------------------------------
    def explain_unused(self, site: Site) -> None:
        self.unused_error_site = site

    def ddp_findings(self) -> list[Finding]:
        ddp_roots = [info for info in self.w.modes.roots.values() if info.is_ddp]
        if not ddp_roots:
            return []
        ids = frozenset().union(*(info.param_ids for info in ddp_roots))
        out = []
        for tracker in self.w.trackers.values():
            unused = tracker.unused_in_ddp(ids)
            never = [i for i, p in enumerate(tracker.params) if id(p) in ids
                     and p.requires_grad and not tracker.ever_grad[i] and tracker.steps]
            if not unused and not never and self.unused_error_site is None:
                continue
            names = [f"{tracker.names([i])[0]} ({n} of {tracker.usage_steps} steps)"
                     for i, n in unused]
            names += [f"{n} (no gradient)" for n in tracker.names(
                [i for i in never if i not in dict(unused)])]
            flag = ddp_roots[0].find_unused
            site = self.unused_error_site or tracker.site or self.w.step_site()
            out.append(runtime_finding("TR606", (
                f"{plural(len(names), 'parameter')} of the DistributedDataParallel model got "
                f"no gradient in some steps: {short_list(names) or 'see the DDP error'}. "
                f"With find_unused_parameters={flag} "
                + ("the next step fails ('Expected to have finished reduction')"
                   if not flag else "every step pays an extra graph traversal")
                + "; remove the unused sub-modules or use them in `forward`."), site))
        return out


def _with_message(f: Finding, message: str) -> Finding:
    from dataclasses import replace

    return replace(f, message=message)
