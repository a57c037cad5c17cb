"""Build runtime findings with the catalog's metadata for each code.

Runtime findings reuse the codes of the static rules (TR201, TR401, ...) with
``detection="runtime"``.  The metadata (slug, severity, category, review
modes) comes from the one rule registry (runtime-only checks are the
``rules/runtime/tr6xx_*.py`` rules); there is no second table.
"""

from __future__ import annotations

from functools import lru_cache

from torchreview.findings import CATEGORY_OF_PREFIX, Finding, Severity
from torchreview.runtime._env import Site


@lru_cache(maxsize=None)
def _rule_for(code: str):
    """The registered Rule class for ``code`` (the one catalog), or None (never raises)."""
    try:
        from torchreview.catalog import rule_by_code

        return rule_by_code().get(code)
    except Exception:  # a rule module being edited must not break a training run
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
    category, mode = CATEGORY_OF_PREFIX[code[2]]  # no rule registered: a plain finding
    review = () if code.startswith("TR6") else (mode,)
    return Finding(
        code=code, name=code.lower(), severity=severity or Severity.MEDIUM, category=category,
        review=review, path=site.path, line=site.line, column=1,
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
