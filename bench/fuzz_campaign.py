"""A longer fuzz campaign of the static reviewer and the checkpoint scanner.

    python bench/fuzz_campaign.py [--minutes 5] [--seed 1000] [--hang-seconds 10] [--out bench/fuzz_crashes]

Targets, in turn, in batches of hypothesis examples with a fresh seed per batch:

* ``torch``    generated PyTorch-flavoured programs -> review_source
* ``grammar``  hypothesmith grammar-generated Python -> review_source (if installed)
* ``mutated``  byte-mutated example and fixture files -> review_source
* ``scanner``  raw, mutated and opcode-generated streams (some inside a zip) -> scan_file

A crash is an exception escaping the reviewer/scanner, or an "internal error"
entry (the engine caught a bug in a rule or the scanner). A hang is an input
that takes longer than ``--hang-seconds`` (SIGALRM). Every crash or hang input
is saved under ``--out`` with its traceback, and a summary is printed (inputs
tried, crashes, hangs, per target). Nothing generated is executed or unpickled.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
import time
import traceback
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [os.path.join(ROOT, "src"), os.path.join(ROOT, "tests"), os.path.join(ROOT, "tests", "artifacts")]


class Hang(Exception):
    pass


class StopCampaign(Exception):
    pass


def _alarm(_signum, _frame):
    raise Hang()


class Campaign:
    def __init__(self, out: str, hang_seconds: float, deadline: float) -> None:
        self.out = out
        self.hang_seconds = hang_seconds
        self.deadline = deadline
        self.tried: Counter = Counter()
        self.crashes: Counter = Counter()
        self.hangs: Counter = Counter()
        self.signatures: dict[str, str] = {}  # first input file per distinct crash
        self.slowest: dict[str, float] = {}
        self.tmp = tempfile.mkdtemp(prefix="fuzz_")

    def save(self, target: str, kind: str, data: bytes, detail: str) -> None:
        os.makedirs(self.out, exist_ok=True)
        signature = f"{target}:{kind}:{detail.strip().splitlines()[-1][:160] if detail.strip() else ''}"
        if signature in self.signatures:
            return
        name = os.path.join(self.out, f"{target}_{kind}_{len(self.signatures):03d}")
        with open(name + ".input", "wb") as fh:
            fh.write(data)
        with open(name + ".txt", "w", encoding="utf-8") as fh:
            fh.write(detail)
        self.signatures[signature] = name

    def run_one(self, target: str, data: bytes, fn) -> None:
        if time.monotonic() > self.deadline:
            raise StopCampaign()
        self.tried[target] += 1
        started = time.perf_counter()
        signal.setitimer(signal.ITIMER_REAL, self.hang_seconds)
        try:
            problem = fn()
        except Hang:
            self.hangs[target] += 1
            self.save(target, "hang", data, f"took more than {self.hang_seconds}s")
            return
        except RecursionError as exc:
            problem = f"uncaught RecursionError: {exc}"
        except Exception:
            problem = "uncaught exception:\n" + traceback.format_exc()
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        took = time.perf_counter() - started
        self.slowest[target] = max(self.slowest.get(target, 0.0), took)
        if problem:
            self.crashes[target] += 1
            self.save(target, "crash", data, problem)


def review_check(text: str):
    from torchreview.catalog import all_rules
    from torchreview.engine.runner import Settings, review_source
    from torchreview.engine.source import SourceFile

    settings = getattr(review_check, "settings", None)
    if settings is None:
        settings = review_check.settings = Settings(rule_codes=tuple(r.code for r in all_rules()))
    result = review_source(SourceFile(path="gen.py", text=text), settings)
    internal = [e.message for e in result.errors if "internal error" in e.message]
    if internal:
        return "\n".join(internal)
    last = text.count("\n") + 2
    bad = [f"{f.code} at {f.line}-{f.end_line}" for f in result.findings if not 1 <= f.line <= f.end_line <= last]
    return f"finding outside the file: {bad}" if bad else None


def scan_check(path: str, display: str):
    from torchreview.artifacts import scan_file

    findings, errors = scan_file(path, display)
    internal = [e.message for e in errors if "internal error" in e.message or "scan failed" in e.message]
    if internal:
        return "\n".join(internal)
    if any(f.code != "TR108" for f in findings):
        return "a finding that is not TR108"
    return None


def _guard_unpickling() -> None:
    """Any attempt to unpickle during the campaign is a crash, not a silent load."""
    import pickle

    import _pickle

    def trap(*_args, **_kwargs):
        raise AssertionError("the scanner tried to unpickle")

    for module in (pickle, _pickle):
        for attr in ("load", "loads", "Unpickler"):
            setattr(module, attr, trap)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--minutes", type=float, default=5.0)
    parser.add_argument("--hang-seconds", type=float, default=10.0)
    parser.add_argument("--batch", type=int, default=200, help="hypothesis examples per batch")
    parser.add_argument("--out", default=os.path.join(HERE, "fuzz_crashes"))
    parser.add_argument("--targets", default="torch,grammar,mutated,scanner")
    parser.add_argument("--seed", type=int, default=1000,
                        help="batch n uses hypothesis seed SEED+n (runs with the same seed repeat inputs)")
    args = parser.parse_args()

    import warnings

    from hypothesis import HealthCheck, given, seed, settings
    from hypothesis import strategies as st

    import fuzz_strategies as fz

    warnings.simplefilter("ignore")
    signal.signal(signal.SIGALRM, _alarm)
    started = time.monotonic()
    camp = Campaign(args.out, args.hang_seconds, started + args.minutes * 60)
    _guard_unpickling()
    sources = fz.real_sources()
    seeds = fz.artifact_seeds()
    base = settings(database=None, deadline=None, max_examples=args.batch, phases=[__import__("hypothesis").Phase.generate],
                    suppress_health_check=list(HealthCheck))

    def source_target(name, strategy, prefix=""):
        @base
        @given(strategy)
        def body(text):
            data = (prefix + text).encode("utf-8", "surrogatepass")
            camp.run_one(name, data, lambda: review_check(prefix + text))

        return body

    def scanner_target():
        @base
        @given(fz.artifact_streams(seeds), st.sampled_from(fz.ARTIFACT_SUFFIXES))
        def body(data, suffix):
            path = os.path.join(camp.tmp, "input" + suffix)
            with open(path, "wb") as fh:
                fh.write(data)
            camp.run_one("scanner", data, lambda: scan_check(path, "input" + suffix))

        return body

    targets = {
        "torch": lambda: source_target("torch", fz.torch_programs()),
        "grammar": lambda: source_target("grammar", fz.grammar_programs(), fz.PRELUDE),
        "mutated": lambda: source_target("mutated", fz.mutated_sources(sources)),
        "scanner": scanner_target,
    }
    chosen = [t for t in args.targets.split(",") if t in targets]
    if "grammar" in chosen:
        try:
            import hypothesmith  # noqa: F401
        except ImportError:
            chosen.remove("grammar")
            print("hypothesmith not installed: grammar target skipped")
    batch = 0
    try:
        while True:
            name = chosen[batch % len(chosen)]
            test = targets[name]()
            seed(args.seed + batch)(test)()
            batch += 1
    except StopCampaign:
        pass
    except Exception as exc:  # hypothesis itself failing (health checks...) ends the campaign, reported
        print(f"campaign stopped: {type(exc).__name__}: {exc}")
    elapsed = time.monotonic() - started
    print(f"fuzz campaign: {elapsed / 60:.1f} min, {batch} batches of {args.batch}, seeds from {args.seed}, "
          f"hang limit {args.hang_seconds}s")
    print(f"{'target':<10} {'inputs':>8} {'crashes':>8} {'hangs':>6} {'slowest s':>10}")
    for name in chosen:
        print(f"{name:<10} {camp.tried[name]:>8} {camp.crashes[name]:>8} {camp.hangs[name]:>6} "
              f"{camp.slowest.get(name, 0.0):>10.2f}")
    print(f"{'total':<10} {sum(camp.tried.values()):>8} {sum(camp.crashes.values()):>8} "
          f"{sum(camp.hangs.values()):>6}")
    for signature, name in camp.signatures.items():
        print(f"  {signature}  -> {os.path.relpath(name, ROOT)}.input")
    return 1 if camp.signatures else 0


if __name__ == "__main__":
    raise SystemExit(main())
