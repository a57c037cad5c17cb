"""Fast paths that skip work must give the answers of the slow path they skip
(bench/speed.md, 2026-11-28): each is compared here with the plain definition."""

from __future__ import annotations

import ast
import random

from torchreview.engine import facts as F
from torchreview.engine.context import _LINE_SPLIT, _OTHER_BREAKS
from torchreview.engine.names import kind_from_call_qualname, kind_from_name
from torchreview.engine.semantic import SemanticModel
from torchreview.rules.security import tr107_hardcoded_credentials as T107

PIECES = ["a", "b c", "\n", "\r\n", "\r", "\x0b", "\x0c", "\x1c", "\x85", "\u2028", "hf_", "sk-", "AKIA",
          "ghp_", "gh", "wandb.login(", "WANDB_API_KEY", "import torch", "from torch import nn",
          "DataLoader", "nn.Module", "optimizer.step()", "loss.backward(", "import timm", " x"]


def _texts(seed: int, count: int = 4000) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(PIECES) for _ in range(rng.randint(0, 14))) for _ in range(count)]


def test_marked_lines_are_the_lines_a_per_line_search_finds():
    for text in _texts(1):
        assert T107._marked_lines(text) == [n for n, line in enumerate(text.splitlines(), 1)
                                            if T107._maybe_secret(line)]


def _all_shapes(text: str):
    """``_shapes`` without skipping any shape (its definition before the markers)."""
    for label, pattern in T107._SHAPES:
        for match in pattern.finditer(text):
            secret = match.group(match.lastindex or 0)
            if T107._PRESIGNED_PARAM.search(text, 0, match.start()):
                continue
            if not T107._placeholder(secret):
                yield label, secret, match.start(match.lastindex or 0)


def test_each_credential_shape_is_run_only_where_it_can_match():
    assert len(T107._SHAPE_MARKERS) == len(T107._SHAPES)
    token = "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8S9t0"
    lines = [f"key = 'hf_{token}'", f"k = 'sk-proj-{token}'", f"t = 'ghp_{token}' + 'sk-{token}'",
             "x = 'AKIAQWERTYUIOPASDFGH'", "os.environ['WANDB_API_KEY'] = '9f3a1c7e5b2d4f608a1e3c5b7d9f2a4c6e8b0d1f'",
             "wandb.login(key='fedcba9876543210fedcba9876543210fedcba98')", *_texts(4)]
    for line in lines:
        assert list(T107._shapes(line)) == list(_all_shapes(line))
    assert sum(bool(list(T107._shapes(line))) for line in lines[:6]) == 6


def test_torch_signal_literals_leave_the_answer_unchanged():
    assert len(F._SIGNAL_LITERALS) == len(F.SIGNALS)
    for text in _texts(2):
        slow = any(m in text for m in F._CHEAP_MARKERS) and any(p.search(text) for _, p in F.SIGNALS)
        assert F.has_torch_signal(text) == slow
        for (_, pattern), literals in zip(F.SIGNALS, F._SIGNAL_LITERALS):
            for match in pattern.finditer(text):
                assert any(literal in match.group(0) for literal in literals)


def test_segment_lines_fast_split_matches_the_python_line_split():
    for text in _texts(3):
        lines = _LINE_SPLIT.split(text)
        if lines and lines[-1] == "":
            lines.pop()
        if not _OTHER_BREAKS.search(text):
            assert text.splitlines(keepends=True) == lines


def test_memoised_answers_are_the_computed_ones():
    source = ("import torch\nimport torch.nn as nn\nclass Net(nn.Module):\n    def forward(self, x):\n"
              "        f = lambda y: torch.relu(y)\n        return f(x)\nlen([1])\n")
    model = SemanticModel(ast.parse(source))
    for node in ast.walk(model.tree):
        for _ in range(2):  # the first question computes, the second reads the memo
            assert model.qualname(node) == model.names._qualnames._compute(node)
            assert model.scope_of(node) is model.scopes.__class__.scope_of(model.scopes, node)
            assert model.enclosing_class(node) is model.scopes.__class__.enclosing_class(node)
            assert model.enclosing_function(node) is model.scopes.__class__.enclosing_function(node)
    for name in ("model", "train_loader", "x", "loss", "optimizer", "logits", "net"):
        assert kind_from_name(name) == kind_from_name(name) == next(
            (k for k, p in __import__("torchreview.engine.names", fromlist=["_NAME_HINTS"])._NAME_HINTS
             if p.match(name)), None)
    for q in ("torch.zeros", "torch.nn.Linear", "torch.optim.SGD", "x.y"):
        assert kind_from_call_qualname(q) == kind_from_call_qualname(q)


IMPORT_PIECES = [b"import torch", b"from . import a, b", b"from ..pkg.mod import (x as y,", b"import os.path as p",
                 b"\n", b"\r\n", b"\r", b"  ", b"\t", b"# import z", b"x = 'import'", b"from", b" import ",
                 b"*", b"mod", b".", b"importlib", b"#", b"from x import *"]


def test_import_lines_are_the_regex_matches_over_the_whole_module():
    from torchreview.engine.project_index import _IMPORT_LINE, _import_lines

    rng = random.Random(7)
    for _ in range(6000):
        data = b"".join(rng.choice(IMPORT_PIECES) for _ in range(rng.randint(0, 16)))
        assert [m.span() + m.groups() for m in _import_lines(data)] == \
            [m.span() + m.groups() for m in _IMPORT_LINE.finditer(data)], data


SCOPED = '''
import torch

class A:
    x = [lambda v: v + 1 for _ in range(2)]

    def f(self, a):
        def g(b):
            class B:
                def h(self):
                    return (lambda c: c * a)(b)
            return B
        return g(a) if a else (lambda: self)()

async def k(y):
    async with y as z:
        return [w for w in z]
'''


def test_scope_answers_kept_on_the_way_up_are_the_definitions():
    from torchreview.engine.model.scopes import Scopes, _scope_finder

    for seed in range(20):
        tree = ast.parse(SCOPED)
        model = SemanticModel(tree)
        nodes = [n for bucket in model.nodes_by_type.values() for n in bucket]
        random.Random(seed).shuffle(nodes)
        for node in nodes:
            assert model.scope_of(node) is _scope_finder(tree)(node)
            assert model.enclosing_function(node) is Scopes.enclosing_function(node)
            assert model.enclosing_class(node) is Scopes.enclosing_class(node)


def test_read_capped_reads_what_one_read_of_cap_plus_one_reads(tmp_path):
    from torchreview.engine.regular_files import read_capped

    path = tmp_path / "m.py"
    for size in (0, 1, 9, 10, 11, 4096):
        path.write_bytes(bytes(range(256)) * (size // 256) + b"x" * (size % 256))
        for cap in (0, 5, 10, 11, 5000):
            with open(path, "rb") as one, open(path, "rb") as capped:
                assert read_capped(capped, cap) == one.read(cap + 1)
    # a file that grew after it was opened: its size now, cut at cap + 1
    path.write_bytes(b"a" * 10)
    with open(path, "rb") as handle:
        with open(path, "ab") as more:
            more.write(b"b" * 10)
        assert read_capped(handle, 15) == b"a" * 10 + b"b" * 6


def test_discovery_excludes_match_as_fnmatch_does():
    # engine/discovery.py ``_matches_any``: one compiled alternation instead of a
    # ``fnmatchcase`` per pattern, the same answers
    import fnmatch
    import itertools
    import os

    from torchreview.engine.discovery import DEFAULT_EXCLUDES, _matches_any

    def plain(path, name, patterns):
        posix = path.replace(os.sep, "/")
        for pattern in patterns:
            if fnmatch.fnmatchcase(name, pattern) or fnmatch.fnmatchcase(posix, pattern):
                return True
            if "/" in pattern and (posix.endswith("/" + pattern.strip("/")) or
                                   fnmatch.fnmatchcase(posix, "*/" + pattern.strip("/"))):
                return True
        return False

    sets = [(), DEFAULT_EXCLUDES, DEFAULT_EXCLUDES + ("a/b", "/x/", "*/c*", "[ab]*", "data/*.py", "/")]
    names = ["a", "b", "x", "build", "foo.egg-info", "c1", "abc", "node_modules", ".git", "data", "m.py"]
    for patterns in sets:
        for size in (1, 2, 3):
            for parts in itertools.product(names, repeat=size):
                path = "/" + "/".join(parts)
                assert _matches_any(path, parts[-1], patterns) == plain(path, parts[-1], patterns), (path, patterns)


def test_word_mentions_as_the_identifier_sets_give(tmp_path):
    # engine/call_paths.py: a word is looked for in a file's identifiers only when its
    # bytes hold it; past a few words of a batch the module names are indexed at once
    import re

    from torchreview.engine import call_paths as C, project_index as P

    texts = {
        "a.py": "import b\nx3abc = 1\nabc = b.run(2d_model)\n",
        "b.py": "def run(m):\n    return m  # runs abc_ and 3abc\n",
        "pkg/__init__.py": "from .core import *\n",
        "pkg/core.py": "CORE = 'b.run'\nclass Net: pass\n",
        "c.py": "\u00e9abc = 'abc\u00e9'\n",
    }
    for name, text in texts.items():
        path = tmp_path / name
        path.parent.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
    (tmp_path / "setup.py").write_text("")
    root = str(tmp_path)
    files = C.project_files(root)
    ident = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")

    def plain(word):
        return [f for f in files if word in set(ident.findall(open(f, "rb").read()))]

    words = [b"abc", b"x3abc", b"3abc", b"run", b"runs", b"b", b"core", b"pkg", b"Net", b"2d_model",
             b"d_model", b"model", b"CORE", b"setup", b"a", b"c", b"", b"my-mod", b"\xc3\xa9abc"]
    with P.files_held():
        for word in words + words[:5]:
            assert C.mentioning(root, word) == plain(word), word
    for word in words[:6]:
        assert C.mentioning(root, word) == plain(word), word


def test_accelerator_words_match_the_case_insensitive_pattern():
    from torchreview.rules.performance import tr209_host_sync_every_step as T209

    pieces = ["a", " ", "\n", "CUDA", "Device", "gpU", "Accelerator", "mps", "XLA", "xpu", "npu", "hpu", "dev",
              "devıce", "DEVİCE", "ſ", "é", "cud", "ice"]
    rng = random.Random(5)
    for _ in range(4000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 8)))
        assert T209._names_accelerator(text) == (T209._ACCELERATOR_WORDS.search(text) is not None), text


def test_other_framework_lines_match_the_multiline_pattern():
    from torchreview.engine import facts as F

    pieces = ["import ", "from ", "jax", "keras", "tensorflow", "paddle", " ", "\t", "\n", "#", "x", ".", "_",
              "flax", "import numpy as jax", "jaxx", "mxnet"]
    rng = random.Random(7)
    for _ in range(4000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 9)))
        assert F._imports_other_framework(text) == (F._OTHER_FRAMEWORK.search(text) is not None), text


def test_credential_markers_hold_a_marker_literal():
    for text in _texts(3):
        for match in T107._MARKERS.finditer(text):
            assert any(literal in match.group(0) for literal in T107._MARKER_LITERALS)


class _EveryKeyword:
    """The file's ``CallNames``, but as if every keyword were given somewhere: each gate
    that asks for keywords lets the collector make its full pass."""

    def __init__(self, calls) -> None:
        self.calls = calls
        self.names, self.attrs = calls.names, calls.attrs

    def any_of(self, exact=frozenset(), prefixes=()):
        return self.calls.any_of(exact, prefixes)

    def any_method(self, attrs):
        return self.calls.any_method(attrs)

    def any_keyword(self, names):
        return True


def _seed_helper_per_call(ctx) -> bool:
    """``seed_helper`` as one pass over every call (its definition before the called-name index)."""
    from torchreview.engine.collectors import randomness as R

    m = ctx.model
    for call in m.calls:
        name = R._called_name(call)
        if "seed" not in name.lower() or name in R._NOT_SEEDING or name == "manual_seed":
            continue
        if (m.qualname(call.func) or "") not in R._TORCH_ONLY_SEEDS | {"numpy.random.seed", "random.seed"}:
            return True
    return False


def test_collectors_skip_passes_only_where_they_find_nothing():
    """A collector that asks ``CallNames`` before its pass over the calls answers as the
    full pass does, on every fixture file."""
    from pathlib import Path

    from model_snippets import ctx_of
    from torchreview.engine.collectors import COLLECTORS
    from torchreview.engine.collectors import downloads as DL
    from torchreview.engine.collectors.registry import CallNames
    from torchreview.engine.facts_devices import devices_built

    root = Path(__file__).parent
    checked = 0
    for path in sorted([*root.glob("fixtures/**/*.py"), *root.parent.glob("examples/**/*.py")]):
        text = path.read_text(encoding="utf-8", errors="replace")
        try:
            ctx = ctx_of(text, str(path))
        except SyntaxError:
            continue
        calls = CallNames(ctx)
        every = _EveryKeyword(calls)
        for name in ("uses_cuda", "places_on_accelerator", "mixed_precision"):
            assert COLLECTORS[name](ctx, calls) == COLLECTORS[name](ctx, every), (name, path)
        assert devices_built(ctx, calls) == devices_built(ctx, every) == devices_built(ctx), path
        fetches = [c for c in ctx.model.calls if DL._download_call(ctx, c, ctx.qualname(c.func) or "")]
        assert bool(fetches) == bool(COLLECTORS["downloads"](ctx, calls)), path
        assert COLLECTORS["seed_helper"](ctx, calls) == _seed_helper_per_call(ctx), path
        checked += 1
    assert checked > 400


class _AllNames:
    def __contains__(self, name) -> bool:
        return True


class _PassAlways(_EveryKeyword):
    """As ``_EveryKeyword``, and every callee name, every method and every prefix present:
    the gates of ``train_loaders_without_drop_last``, ``builds_batchnorm`` and ``compiles``
    let the collector make its pass (their own first answers are asked of the file)."""

    def __init__(self, calls) -> None:
        super().__init__(calls)
        self.names = _AllNames()

    def any_of(self, exact=frozenset(), prefixes=()):
        return True if not exact else self.calls.any_of(exact, prefixes)

    def any_method(self, attrs):
        return True


def test_called_qualnames_gates_skip_only_passes_that_find_nothing():
    from pathlib import Path

    from model_snippets import ctx_of
    from torchreview.engine.collectors import COLLECTORS
    from torchreview.engine.collectors.registry import CallNames

    root = Path(__file__).parent
    for path in sorted([*root.glob("fixtures/**/*.py"), *root.parent.glob("examples/**/*.py")]):
        try:
            ctx = ctx_of(path.read_text(encoding="utf-8", errors="replace"), str(path))
        except SyntaxError:
            continue
        m = ctx.model
        assert m.called_qualnames == {q for q in (m.qualname(c.func) for c in m.calls) if q}, path
        calls = CallNames(ctx)
        always = _PassAlways(calls)
        for name in ("train_loaders_without_drop_last", "builds_batchnorm", "compiles"):
            assert COLLECTORS[name](ctx, calls) == COLLECTORS[name](ctx, always), (name, path)


def _devices_by_definition(ctx) -> tuple[str, ...]:
    """``devices_built`` with every pass made: each short string constant, f-string, call and assignment."""
    from torchreview.engine import facts_devices as FD

    m, tokens = ctx.model, set()
    for node in m.nodes_by_type.get(ast.Constant, ()):
        if isinstance(node.value, str) and len(node.value) < 16:
            token = FD._literal_token(node.value)
            tokens |= {token} if token else {FD.UNKNOWN} if node.value in FD._RANK_NAMES else set()
    for node in m.nodes_by_type.get(ast.JoinedStr, ()):
        first = node.values[0] if node.values else None
        if isinstance(first, ast.Constant) and isinstance(first.value, str) and FD._COMPUTED_PREFIX.match(first.value):
            tokens.add(FD.UNKNOWN)
    for node in m.nodes_by_type.get(ast.Call, ()):
        tokens |= FD._call_tokens(node, m)
    for node in m.nodes_by_type.get(ast.Assign, ()):
        tokens |= FD._assigned_tokens(node, m)
    return tuple(sorted(tokens))


def test_device_tokens_and_seed_guards_skip_nothing():
    from pathlib import Path

    from model_snippets import ctx_of
    from torchreview.engine.collectors import COLLECTORS
    from torchreview.engine.collectors import randomness as R
    from torchreview.engine.collectors.registry import CallNames
    from torchreview.engine.facts_devices import devices_built

    root = Path(__file__).parent
    snippets = ["gpu_id = args.gpu\nx = 1\n", "self.devıce = cfg['d']\n", "DEVICE = opts.device\n"]
    files = sorted([*root.glob("fixtures/**/*.py"), *root.parent.glob("examples/**/*.py")])
    for text in [*snippets, *(p.read_text(encoding="utf-8", errors="replace") for p in files)]:
        try:
            ctx = ctx_of(text)
        except SyntaxError:
            continue
        calls = CallNames(ctx)
        assert devices_built(ctx, calls) == _devices_by_definition(ctx), text[:80]
        first = COLLECTORS["seed_truthiness_guards"](ctx, calls)
        assert R._seed_truthiness_tests(ctx) is R._seed_truthiness_tests(ctx)
        assert first == tuple(_anchor_of(ctx, t) for t in R._find_seed_truthiness_tests(ctx))
        with_scaler = _EveryKeyword(calls)
        with_scaler.names = calls.names | {"GradScaler"}  # the gate lets the pass run
        scaler = COLLECTORS["state_dicts_without_scaler"]
        assert scaler(ctx, calls) == scaler(ctx, with_scaler)


def _anchor_of(ctx, node):
    from torchreview.engine.facts import _anchor

    return _anchor(ctx, node)


def test_module_files_found_as_the_looks_at_each_candidate_find(tmp_path):
    """``_found_in`` skips the candidates of a module name whose first part its folder's
    listing lacks (``_absent``): the same files the looks at every candidate find."""
    import os

    from torchreview.engine import project_index as P

    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "sub" / "mod.py").write_text("")
    (tmp_path / "single.py").write_text("")
    (tmp_path / "Mixed.py").write_text("")
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "x.py").write_text("")
    (tmp_path / "notadir.py").write_text("")
    names = [("pkg",), ("pkg", "sub"), ("pkg", "sub", "mod"), ("single",), ("Mixed",), ("mixed",), ("plain",),
             ("plain", "x"), ("missing",), ("missing", "deep"), ("notadir", "x"), ("pkg", "missing"), ("ünï",)]
    bases = [str(tmp_path), str(tmp_path / "pkg"), str(tmp_path / "nothere"), str(tmp_path / "single.py")]

    def looks(base, parts):
        stem = os.path.join(base, *parts)
        return tuple((c, os.path.abspath(c)) for c in (stem + ".py", os.path.join(stem, "__init__.py"))
                     if os.path.isfile(c))

    P.forget_files(force=True)
    try:
        for base in bases:
            for parts in names:
                assert P._found_in(base, parts) == looks(base, parts), (base, parts)
    finally:
        P.forget_files(force=True)


def test_torch_through_project_is_the_breadth_first_search_it_stops_early(tmp_path):
    """``uses_torch_through_project`` checks a level's modules before resolving their
    imports, resolves the file's own imports one at a time and none after the last
    level: the answer of the plain breadth-first search over whole import lists."""
    from torchreview.engine import project_index as P
    from torchreview.engine.facts import has_torch_signal

    def plain(path, data, hops=P.REEXPORT_HOPS):
        seen = {path}
        frontier = P._targets(path, data)
        for _ in range(hops):
            following = []
            for target in frontier:
                if target in seen:
                    continue
                seen.add(target)
                if P._has_signal(target, has_torch_signal):
                    return True
                following.extend(P._targets(target, None))
            frontier = following
        return False

    rng = random.Random(7)
    (tmp_path / "setup.py").write_text("")
    names = [f"m{i}" for i in range(12)]
    for round_ in range(40):
        for name in names:
            imports = rng.sample(names, rng.randint(0, 3))
            lines = [f"from {m} import x" if rng.random() < 0.5 else f"import {m}" for m in imports]
            if rng.random() < 0.15:
                lines.append("import torch")
            lines.append("import numpy, os")
            (tmp_path / f"{name}.py").write_text("\n".join(lines) + "\nx = 1\n")
        P.forget_files(force=True)
        for name in names:
            path = str(tmp_path / f"{name}.py")
            data = (tmp_path / f"{name}.py").read_bytes()
            for hops in (1, 2, 3):
                assert P.uses_torch_through_project(path, data, has_torch_signal, hops) == \
                    plain(path, data, hops), (round_, name, hops)
    P.forget_files(force=True)


def test_identifier_sets_are_the_regex_matches():
    """``call_paths._words_of`` splits a file's identifier runs in C: the set of
    ``_IDENTIFIER.findall`` (leading digits stripped, all-digit runs dropped, any
    non-ASCII byte a separator)."""
    from torchreview.engine import call_paths as C

    rng = random.Random(3)
    pieces = [b"a", b"Z", b"_", b"0", b"9", b"3d", b" ", b"\n", b".", b"(", b"\xc3\xa9", b"\xff", b"x1", b"__init__",
              b"\t", b"-", b"'", b"12", b"\x00", b"\x85"]
    for i in range(3000):
        data = b"".join(rng.choice(pieces) for _ in range(rng.randint(0, 20)))
        assert C._words_of(f"t{i}", data) == frozenset(C._IDENTIFIER.findall(data)), data
    C._tokens.clear()


def test_returned_modes_skip_the_scan_only_without_an_eval_loader(monkeypatch):
    """``project_index._value_mode`` looks for an eval mode only in a module that calls
    something named ``eval`` or an eval-mode loader (``_may_evaluate``), and scans a
    returned value for a loader only where it calls one (``_calls_eval_loader``): the
    summaries of every fixture module are those the full questions give."""
    import warnings
    from pathlib import Path

    from torchreview.engine import project_index as P

    fixtures = Path(__file__).parent / "fixtures"
    paths = sorted(fixtures.rglob("*.py"))
    assert paths
    summaries = {}
    for gated in (True, False):
        if not gated:
            monkeypatch.setattr(P, "_calls_eval_loader", lambda model: True)
            monkeypatch.setattr(P, "_may_evaluate", lambda model: True)
        for path in paths:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
            except (SyntaxError, ValueError):
                continue
            summary = P.summarize(tree)
            if gated:
                summaries[path] = summary
            else:
                assert summary == summaries[path], path
    assert any(f.returns_mode == "eval" for s in summaries.values() for f in s.functions.values())
