"""Build runtime findings with the catalog's metadata for each code.

Runtime findings reuse the codes of the static rules (TR201, TR401, ...) with
``detection="runtime"``.  The metadata (slug, severity, category, review
modes) comes from the rule registry when the rule module exists; a local table
keeps the runtime reviewer working while a static rule is not written yet.
"""

from __future__ import annotations

from functools import lru_cache

from torchreview.findings import CATEGORY_OF_PREFIX, Finding, Severity
from torchreview.runtime._env import Site

# code -> (slug, severity, extra review modes); used only when the rule
# registry has no rule for the code.
_FALLBACK: dict[str, tuple[str, Severity, tuple[str, ...]]] = {
    "TR201": ("no-accelerator-used", Severity.CRITICAL, ()),
    "TR202": ("dataloader-without-workers", Severity.HIGH, ()),
    "TR204": ("small-batch-without-accumulation", Severity.HIGH, ()),
    "TR207": ("inference-without-eval", Severity.MEDIUM, ("BR",)),
    "TR209": ("host-sync-every-step", Severity.LOW, ()),
    "TR401": ("gradients-not-reset", Severity.HIGH, ()),
    "TR403": ("device-mismatch", Severity.HIGH, ()),
    "TR407": ("no-gradient-clipping", Severity.LOW, ()),
    "TR503": ("short-last-batch-with-batchnorm", Severity.MEDIUM, ()),
    "TR504": ("train-eval-mode-mixup", Severity.MEDIUM, ()),
    "TR507": ("autograd-graph-kept-alive", Severity.HIGH, ()),
    "TR512": ("batchnorm-batch-of-one", Severity.MEDIUM, ()),
    "TR513": ("distributed-sampler-without-set-epoch", Severity.MEDIUM, ()),
    "TR601": ("nan-or-inf", Severity.HIGH, ("BR",)),
    "TR602": ("exploding-gradient-norm", Severity.MEDIUM, ("BR",)),
    "TR603": ("parameter-without-gradient", Severity.MEDIUM, ("BR",)),
    "TR604": ("memory-growth", Severity.HIGH, ("BR", "PR")),
    "TR605": ("input-pipeline-bound", Severity.HIGH, ("PR",)),
    "TR606": ("distributed-problem", Severity.MEDIUM, ("BR",)),
}


_RUNTIME_MODULES = {
    "TR601": "tr601_nan_or_inf",
    "TR602": "tr602_exploding_gradient_norm",
    "TR603": "tr603_parameter_without_gradient",
    "TR604": "tr604_memory_growth",
    "TR605": "tr605_input_pipeline_bound",
    "TR606": "tr606_distributed_problem",
}


@lru_cache(maxsize=None)
def _rule_for(code: str):
    """The registered Rule class for ``code``, or None (never raises)."""
    try:
        from torchreview.catalog import rule_by_code

        rule = rule_by_code().get(code)
        if rule is not None:
            return rule
    except Exception:  # a rule module being edited must not break a training run
        pass
    module = _RUNTIME_MODULES.get(code)
    if module is not None:
        try:
            import importlib

            mod = importlib.import_module(f"torchreview.rules.runtime.{module}")
            return next(v for v in vars(mod).values()
                        if isinstance(v, type) and getattr(v, "code", None) == code)
        except Exception:
            return None
    return None


def runtime_finding(code: str, message: str, site: Site,
                    severity: Severity | None = None) -> Finding:
    """A finding of ``code`` detected at runtime, pointing at ``site``."""
    rule = _rule_for(code)
    if rule is not None:
        return rule.make_finding(
            path=site.path, line=site.line, message=message, severity=severity,
            detection="runtime", scope="runtime", source_line=site.text,
        )
    slug, default, extra = _FALLBACK.get(code, (code.lower(), Severity.MEDIUM, ()))
    category, mode = CATEGORY_OF_PREFIX[code[2]]
    review = [] if code.startswith("TR6") else [mode]
    review += [m for m in extra if m not in review]
    return Finding(
        code=code, name=slug, severity=severity or default, category=category,
        review=tuple(review), path=site.path, line=site.line, column=1,
        end_line=site.line, end_column=1, message=message, detection="runtime",
        scope="runtime", source_line=site.text,
    )


def finding_from_json(data: dict) -> Finding:
    """Rebuild a finding sent by another rank (JSON, never pickle)."""
    return Finding(
        code=data["code"], name=data["name"], severity=Severity.parse(data["severity"]),
        category=data["category"], review=tuple(data.get("review", ())),
        path=data["path"], line=int(data["line"]), column=int(data.get("column", 1)),
        end_line=int(data.get("end_line", data["line"])),
        end_column=int(data.get("end_column", 1)), message=data["message"],
        detection=data.get("detection", "runtime"), cell=data.get("cell"),
        scope="runtime",
    )
