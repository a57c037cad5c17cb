from __future__ import annotations

import ast
import re

from torchreview.catalog import Rule
from torchreview.findings import Severity

_SET = ("torch.autograd.set_detect_anomaly", "torch.autograd.anomaly_mode.set_detect_anomaly")
_WITH = ("torch.autograd.detect_anomaly", "torch.autograd.anomaly_mode.detect_anomaly")
_TRAINERS = ("lightning.pytorch.Trainer", "lightning.Trainer")
# Words that make an `if` test (or the enclosing function) a debugging switch.
_DEBUG_WORD = re.compile(r"debug|anomal|detect|sanity|diagnos|check_nan|verbose", re.I)


class AnomalyDetectionEnabled(Rule):
    """
    ## What it does
    Flags autograd anomaly detection switched on for good:
    `torch.autograd.set_detect_anomaly(True)`,
    `with torch.autograd.detect_anomaly():` and Lightning's
    `Trainer(detect_anomaly=True)`.

    ## Why is this bad?
    Anomaly mode records a Python stack trace for every operation of the
    forward pass and checks every backward output for NaNs. It is a debugging
    aid: it makes training several times slower and uses extra memory. Left
    on in a training script, every run pays for it.

    ## Example
    ```python
    import torch

    torch.autograd.set_detect_anomaly(True)
    ```

    ## Use instead
    ```python
    import argparse

    import torch

    parser = argparse.ArgumentParser()
    parser.add_argument("--debug", action="store_true")
    args = parser.parse_args()
    if args.debug:
        torch.autograd.set_detect_anomaly(True)
    ```

    ## Heuristics
    Calls under an `if` whose test mentions a debugging switch (a name such as
    `debug`, `detect_anomaly`, `sanity_check`, an environment variable), calls
    in functions whose name says debug, calls whose argument is not a literal
    `True` (e.g. `set_detect_anomaly(args.anomaly)`), and test files are not
    reported.
    """

    code = "TR214"
    name = "anomaly-detection-enabled"
    severity = Severity.MEDIUM
    severity_reason = (
        "Waste on every step: anomaly mode checks every operation (often several times slower); "
        "results are unchanged (catalog: high)."
    )
    summary = "Autograd anomaly detection left on: a debugging mode that slows every step"
    node_types = (ast.Call,)
    call_qualnames = frozenset({*_SET, *_WITH, *_TRAINERS})

    def check(self, node: ast.Call, ctx) -> None:
        if ctx.is_test_file:
            return
        q = ctx.qualname(node.func)
        if q in _SET:
            if not _literal_true(ctx.arg(node, "mode", 0)):
                return
            message = ("`torch.autograd.set_detect_anomaly(True)` keeps anomaly detection on for the "
                       "whole run, which slows every forward and backward pass; enable it only "
                       "behind a debug flag while hunting a NaN")
        elif q in _WITH:
            if not _in_with_header(node):
                return
            message = ("`with torch.autograd.detect_anomaly():` records a stack trace for every "
                       "operation in the block; remove it once the NaN is found, or guard it with "
                       "a debug flag")
        elif q in _TRAINERS:
            flag = ctx.arg(node, "detect_anomaly")
            if not _literal_true(flag):
                return
            node = flag
            message = ("`Trainer(detect_anomaly=True)` runs every training step under autograd "
                       "anomaly detection; drive it from a debug option instead")
        else:
            return
        if _under_debug_guard(node, ctx):
            return
        ctx.report(node, message)


def _literal_true(node) -> bool:
    return isinstance(node, ast.Constant) and node.value is True


def _in_with_header(node: ast.Call) -> bool:
    from torchreview.engine.context import parent

    item = parent(node)
    return isinstance(item, ast.withitem) and item.context_expr is node


def _under_debug_guard(node: ast.AST, ctx) -> bool:
    child = node
    for anc in ctx.ancestors(node):
        if isinstance(anc, (ast.If, ast.IfExp, ast.While)) and child is not anc.test and _mentions_debug(anc.test):
            return True
        if isinstance(anc, (ast.FunctionDef, ast.AsyncFunctionDef)) and _DEBUG_WORD.search(anc.name):
            return True
        child = anc
    return False


def _mentions_debug(test: ast.AST) -> bool:
    for sub in ast.walk(test):
        word = sub.id if isinstance(sub, ast.Name) else sub.attr if isinstance(sub, ast.Attribute) else \
            sub.value if isinstance(sub, ast.Constant) and isinstance(sub.value, str) else \
            sub.arg if isinstance(sub, ast.keyword) else ""
        if word and (_DEBUG_WORD.search(word) or word in ("environ", "getenv")):
            return True
    return False
