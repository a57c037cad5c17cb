"""Command-line options of a script, and what they hold when the script runs with its defaults.

Research scripts switch whole code paths with options: ``--gradient_accumulation_steps``
(default 1), ``--flip_on`` (default False), ``--amp``. A defect on such a path shows only
when someone turns the option on, and a reviewer writes "when ``--x`` is set", or nothing
at all when the shipped scripts never set it. Rules ask this module what an option
expression evaluates to at the defaults, and lower their confidence when the defect needs
a non-default value.

``default_of(expr)`` answers for ``args.name`` -- an attribute read of a value the inputs
model traces to ``parse_args()`` / ``parse_known_args()`` in this file (through names,
parameters of same-file functions and ``self`` attributes) -- when this file declares
``name`` with ``add_argument``: ``dest=``, or the first long flag with dashes made
underscores, or a positional's name. The default is the constant ``default=``; ``None``
when there is none; ``False``/``True`` for ``store_true``/``store_false``; the constant of a
``set_defaults(name=...)`` when one is given. Anything else answers ``NOT_KNOWN``: a name
declared twice with different defaults, a computed default, an option declared in another
file (a shared ``options.py``), a receiver that is not the command line (a YAML config).
Static: nothing is imported or run.
"""

from __future__ import annotations

import ast
from functools import cached_property

from torchreview.engine.semantic_common import COMPARE_OPS, ancestors

class _NotKnown:
    """The answer when an option's default is not known here."""

    def __repr__(self) -> str:
        return "NOT_KNOWN"


NOT_KNOWN = _NotKnown()
_PARSE = ("command-line arguments",)


class Options:
    """The options this file declares, and their defaults (``ctx.options``)."""

    def __init__(self, model, inputs) -> None:
        self.m = model
        self._inputs = inputs

    @cached_property
    def declared(self) -> dict[str, object]:
        """Option name -> its default (a Python constant) or ``NOT_KNOWN``."""
        out: dict[str, object] = {}
        for call in self.m.calls_by_name.get("add_argument", ()):
            name = _dest(call)
            if name is None:
                continue
            value = _default(call)
            if name in out and out[name] is not value and out[name] != value:
                value = NOT_KNOWN  # declared twice (two parsers of one file) with different defaults
            out[name] = value
        for call in self.m.calls_by_name.get("set_defaults", ()):
            for kw in call.keywords:
                if kw.arg is None:
                    continue
                out[kw.arg] = _literal(kw.value)
        return out

    def default_of(self, expr: ast.AST | None):
        """What ``expr`` (``args.name``) holds at the script's defaults, or ``NOT_KNOWN``."""
        if not isinstance(expr, ast.Attribute) or expr.attr not in self.declared:
            return NOT_KNOWN
        source = self._inputs.source_of(expr.value)
        if source is None or not source.kind.startswith(_PARSE):
            return NOT_KNOWN
        return self.declared[expr.attr]

    def test_at_defaults(self, test: ast.AST):
        """What ``test`` evaluates to at the script's option defaults: True/False, or None when
        not known. The test reads one option, directly, negated, or compared with a literal
        (``args.local_rank == -1``; literals are read, never run)."""
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            inner = self.test_at_defaults(test.operand)
            return None if inner is None else not inner
        option = self.option_of(test)
        if option is not None:
            default = self.default_of(option)
            return None if default is NOT_KNOWN else bool(default)
        if isinstance(test, ast.Compare) and len(test.ops) == 1:
            option = self.option_of(test.left)
            compare = COMPARE_OPS.get(type(test.ops[0]))
            right = _literal(test.comparators[0])
            default = self.default_of(option) if option is not None else NOT_KNOWN
            if compare is None or right is NOT_KNOWN or default is NOT_KNOWN:
                return None
            try:
                return bool(compare(default, right))
            except TypeError:
                return None
        return None

    def ruling_test(self, node: ast.AST) -> ast.AST | None:
        """The test of an enclosing ``if`` or conditional expression (in ``node``'s own
        function) that rules ``node`` out at the script's defaults: ``node`` in the body of a
        test that is false there, or in the ``else`` of one that is true (``DistributedSampler(ds)``
        in ``... if args.local_rank == -1 else ...``); None when none is known to."""
        child = node
        for anc in ancestors(node):
            if isinstance(anc, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                return None
            if isinstance(anc, (ast.If, ast.IfExp)) and child is not anc.test:
                value = self.test_at_defaults(anc.test)
                body = anc.body if isinstance(anc.body, list) else [anc.body]
                orelse = anc.orelse if isinstance(anc.orelse, list) else [anc.orelse]
                if value is not None and ((any(child is b for b in body) and not value) or
                                          (any(child is b for b in orelse) and value)):
                    return anc.test
            child = anc
        return None

    def option_of(self, expr: ast.AST | None, depth: int = 2) -> ast.Attribute | None:
        """The option read ``expr`` holds: ``expr`` itself, or a local name bound only to one
        (``accum = args.accum_steps``), followed ``depth`` assignments."""
        if isinstance(expr, ast.Attribute) and self.default_of(expr) is not NOT_KNOWN:
            return expr
        if isinstance(expr, ast.Name) and depth > 0:
            values, func = self.m.assignments(expr)
            if len(values) == 1 and func is None:
                return self.option_of(values[0], depth - 1)
        return None


def _literal(node: ast.AST):
    """A constant written as a literal (``-1``, ``1e-3``, ``"adam"``, ``(1, 2)``: read, never
    run), else ``NOT_KNOWN``."""
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return NOT_KNOWN


def _dest(call: ast.Call) -> str | None:
    for kw in call.keywords:
        if kw.arg == "dest":
            return kw.value.value if isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, str) \
                else None
    flags = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    if not flags or len(flags) != len(call.args):
        return None
    long = next((f for f in flags if f.startswith("--")), None)
    if long is not None:
        return long[2:].replace("-", "_") or None
    if flags[0].startswith("-"):
        return flags[0].lstrip("-").replace("-", "_") or None
    return flags[0]


def _default(call: ast.Call):
    action = next((kw.value for kw in call.keywords if kw.arg == "action"), None)
    default = next((kw.value for kw in call.keywords if kw.arg == "default"), None)
    if default is not None:
        return _literal(default)
    if isinstance(action, ast.Constant):
        if action.value == "store_true":
            return False
        if action.value == "store_false":
            return True
    if action is not None and not isinstance(action, ast.Constant):
        return NOT_KNOWN  # a custom action class may set anything
    return None
