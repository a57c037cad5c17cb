"""Rule metadata and the registry.

A rule is a class in its own module under ``torchreview.rules.<category>``.
The registry finds them by walking those packages, so adding a rule means
adding a module (and its fixture), never editing a list.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
from functools import lru_cache
from typing import TYPE_CHECKING, ClassVar, Iterable

from torchreview import track_record
from torchreview.findings import CATEGORY_OF_PREFIX, KINDS, Finding, Fix, Severity

if TYPE_CHECKING:  # pragma: no cover
    from torchreview.engine.context import FileContext
    from torchreview.engine.facts import ProjectContext

DOC_HEADINGS = ("What it does", "Why is this bad?", "Example", "Use instead")

# The kind of comment a rule makes when it does not say (findings.KINDS): security
# and bug rules report what will misbehave; performance and architecture rules give
# advice; code-quality rules decide one by one (their default is a likely defect);
# runtime rules report what was observed going wrong.
KIND_OF_PREFIX = {"1": "defect", "2": "advice", "3": "advice", "4": "likely-defect",
                  "5": "defect", "6": "likely-defect"}
# SARIF ``precision`` (as GitHub code scanning reads it) from kind and confidence.
_PRECISION = {("defect", "high"): "very-high", ("defect", "medium"): "high",
              ("likely-defect", "high"): "high", ("likely-defect", "medium"): "medium",
              ("advice", "high"): "high", ("advice", "medium"): "medium"}


class Rule:
    """Base class of every rule.

    Subclasses set the class attributes below and implement any of:

    * ``check(node, ctx)`` -- called for every node whose type is in
      ``node_types``, during the one traversal shared by all rules; a rule
      that cares about some calls only says which (``call_qualnames``,
      ``call_prefixes``, ``call_attrs``, ``call_losses``) and is given those calls only,
      and one that cares about some attribute names only (``attribute_names``) is
      given those ``ast.Attribute`` nodes only;
    * ``check_file(ctx)`` -- called once per file after the traversal, for
      rules that reason over the semantic model (training loops, classes);
    * ``check_project(project)`` -- project rules; they see file facts only.

    Findings are reported with ``ctx.report(...)`` / ``project.report(...)``.
    """

    code: ClassVar[str] = ""
    name: ClassVar[str] = ""
    severity: ClassVar[Severity] = Severity.MEDIUM
    # Review modes beyond the category's own (e.g. TR207 is PR and BR).
    extra_review: ClassVar[tuple[str, ...]] = ()
    scope: ClassVar[tuple[str, ...]] = ("file",)
    # "safe" / "unsafe" when the rule can fix what it finds.
    fixable: ClassVar[str | None] = None
    node_types: ClassVar[tuple[type[ast.AST], ...]] = ()
    # Calls by callee (with ``ast.Call`` in ``node_types``): when any of these is
    # set, ``check`` is given only the calls whose qualified name
    # (``ctx.qualname(call.func)``) is in ``call_qualnames`` or starts with one of
    # ``call_prefixes``, or whose callee is an attribute named in ``call_attrs``
    # (``x.numpy()``: "numpy"), or that compute one of the losses in ``call_losses``
    # (``ctx.flow.loss_call(call)[0]``: "cross_entropy" for ``F.cross_entropy(...)``
    # and for ``criterion(...)`` of an ``nn.CrossEntropyLoss``); the engine sorts each
    # call to the rules that asked for it in its one pass. Unset: every call.
    call_qualnames: ClassVar[frozenset[str]] = frozenset()
    call_prefixes: ClassVar[tuple[str, ...]] = ()
    call_attrs: ClassVar[frozenset[str]] = frozenset()
    call_losses: ClassVar[frozenset[str]] = frozenset()
    # Attributes by name (with ``ast.Attribute`` in ``node_types``): when set, ``check``
    # is given only the ``ast.Attribute`` nodes whose ``.attr`` is one of these (``x.data``:
    # "data"), in walk order; other node types are given as usual. Unset: every attribute.
    attribute_names: ClassVar[frozenset[str]] = frozenset()
    # False for rules that apply to any Python file (secrets, pickle loads).
    needs_torch: ClassVar[bool] = True
    summary: ClassVar[str] = ""
    # The second axis, next to severity. ``kind``: "defect", "likely-defect" or
    # "advice" (None: from the category, KIND_OF_PREFIX). ``confidence``: how sure
    # we are the code does what the message says, "high"/"medium"/"low" (None:
    # high, medium for likely defects and for project rules, which judge from
    # the absence of something). Findings can override both (``ctx.report``).
    kind: ClassVar[str | None] = None
    confidence: ClassVar[str | None] = None
    # Why the default severity is what it is, on the scale: code execution and
    # data loss > crashes on the targeted torch > silently wrong training or
    # results > measurable waste on the hot path > style and structure.
    severity_reason: ClassVar[str] = ""
    # True when the rule's findings claim that the flagged line raises when it
    # runs (`.numpy()` on a tensor that requires grad, a device mismatch). In a
    # notebook cell the stored notebook shows ran to the end without error
    # (engine/source.py ``ran_cells``) such a finding drops to low confidence:
    # the author's run refutes the claim there (engine/runner.py).
    claims_raise: ClassVar[bool] = False
    # One problem, one finding (engine/merge.py). Rules naming the same
    # ``root_cause`` that report on the same place merge into one finding.
    root_cause: ClassVar[str] = ""
    # Codes of rules this rule makes redundant: where both report the same node
    # (the superseded finding lies within this rule's span), the engine drops the
    # superseded finding before suppression comments and --fix see it (engine/merge.py).
    supersedes: ClassVar[tuple[str, ...]] = ()
    # "project": every finding of this rule in one project whose
    # ``repeat_key`` is equal becomes one finding with a count and related
    # locations (legacy/deprecation nits, one unpinned repository).
    # "review": the same across the whole review, sub-projects included (one
    # leaked key pasted into the notebooks of two sub-projects is one secret).
    # "scope": findings of this rule about the same root value (``subject``,
    # given to ``ctx.report``) in one function or notebook cell, with equal
    # ``repeat_key``, become one (twelve `.numpy()` lines on one `output`).
    summarize: ClassVar[str] = ""

    # -- derived metadata -------------------------------------------------
    @classmethod
    def category(cls) -> str:
        return CATEGORY_OF_PREFIX[cls.code[2]][0]

    @classmethod
    def review(cls) -> tuple[str, ...]:
        modes = [CATEGORY_OF_PREFIX[cls.code[2]][1]]
        if cls.code.startswith("TR6"):
            modes = []
        for mode in cls.extra_review:
            if mode not in modes:
                modes.append(mode)
        return tuple(modes)

    @classmethod
    def default_kind(cls) -> str:
        if cls.kind in KINDS:
            return cls.kind
        return KIND_OF_PREFIX.get(cls.code[2:3], "advice")

    @classmethod
    def default_confidence(cls) -> str:
        if cls.confidence:
            return cls.confidence
        if cls.default_kind() == "likely-defect" or cls.scope[0] == "project":
            return "medium"
        return "high"

    @classmethod
    def precision(cls) -> str:
        """SARIF ``properties.precision`` of the rule (very-high/high/medium/low)."""
        if cls.default_confidence() == "low":
            return "low"
        confidence = cls.default_confidence()
        if track_record.ceiling(cls.code) == "medium":  # its judged record on real code caps it
            confidence = "medium"
        return _PRECISION.get((cls.default_kind(), confidence), "medium")

    @classmethod
    def shown_by_default(cls) -> bool:
        """The default report holds defects and likely defects (advice when asked for)."""
        return cls.default_kind() != "advice"

    @classmethod
    def explain_severity(cls) -> str:
        """The rule's ``severity_reason``, or what its category's default means."""
        if cls.severity_reason:
            return cls.severity_reason
        return {"defect": "Default for a rule that reports code that will misbehave.",
                "likely-defect": "Default for a rule that reports code that probably misbehaves.",
                "advice": "Default for advice: the code works; a change would make it better.",
                }[cls.default_kind()]

    @classmethod
    def docs(cls) -> dict[str, str]:
        return parse_doc_sections(cls.__doc__ or "")

    @classmethod
    def is_project_rule(cls) -> bool:
        return "project" in cls.scope

    @classmethod
    def to_json(cls) -> dict:
        return {
            "code": cls.code,
            "name": cls.name,
            "severity": cls.severity.label,
            "severity_reason": cls.severity_reason,
            "kind": cls.default_kind(),
            "confidence": cls.default_confidence(),
            "precision": cls.precision(),
            "category": cls.category(),
            "review": list(cls.review()),
            "scope": list(cls.scope),
            "fix": cls.fixable,
            "summary": cls.summary,
            "docs": cls.docs(),
            "measured": _measured(cls.code),
        }

    @classmethod
    def make_finding(
        cls,
        *,
        path: str,
        line: int,
        message: str,
        column: int = 1,
        end_line: int | None = None,
        end_column: int | None = None,
        severity: Severity | None = None,
        detection: str = "static",
        cell: int | None = None,
        fix: "Fix | None" = None,
        scope: str | None = None,
        source_line: str = "",
        context: str = "",
        kind: str | None = None,
        confidence: str | None = None,
        subject: str = "",
    ) -> Finding:
        """Build a finding of this rule (used by the engine, the scanner, the runtime)."""
        return Finding(
            code=cls.code,
            name=cls.name,
            severity=severity or cls.severity,
            category=cls.category(),
            review=cls.review(),
            path=path,
            line=line,
            column=column,
            end_line=end_line if end_line is not None else line,
            end_column=end_column if end_column is not None else column,
            message=message,
            detection=detection,
            cell=cell,
            fix=fix,
            scope=scope or cls.scope[0],
            source_line=source_line,
            context=context,
            kind=kind or cls.default_kind(),
            confidence=confidence or cls.default_confidence(),
            subject=subject,
        )

    @classmethod
    def repeat_key(cls, finding: Finding) -> str:
        """What makes two findings of a ``summarize`` rule the same root cause
        (by default: the rule at one severity, so a removed API that crashes is
        never folded into a deprecation nit)."""
        return f"{cls.code}:{finding.severity.label}"

    # -- hooks ------------------------------------------------------------
    @classmethod
    def subscribes_to_calls(cls) -> bool:
        """The rule asks for some calls only (``call_qualnames``/``call_prefixes``/``call_attrs``/
        ``call_losses``)."""
        return bool(cls.call_qualnames or cls.call_prefixes or cls.call_attrs or cls.call_losses)

    def wants_calls(self, ctx: "FileContext") -> bool:
        """Whether any call of the file can matter to ``check`` (a rule with ``ast.Call`` in
        ``node_types`` given every call: no subscription), asked once per file before the
        calls are handed out; False: it is given none of them (its other node types as
        usual). Answer from the module's one-pass sets (``ctx.model.called_qualnames``,
        ``called_methods``, ``calls_by_name``, ``keyword_names``), never by a pass of its
        own, and only False where ``check`` acts on none of the file's calls."""
        return True

    def check(self, node: ast.AST, ctx: "FileContext") -> None:  # pragma: no cover
        return None

    def check_file(self, ctx: "FileContext") -> None:  # pragma: no cover
        return None

    def check_project(self, project: "ProjectContext") -> None:  # pragma: no cover
        return None


_HEADING = re.compile(r"^## (.+?)\s*$", re.M)


def _measured(code: str) -> dict | None:
    """The rule's judged records on real code and the confidence ceiling they set (track_record.py)."""
    recs = track_record.records(code)
    if not recs:
        return None
    out: dict = {kind: {"true": r.true, "noise": r.noise, "false": r.false} for kind, r in recs.items()}
    out["ceiling"] = track_record.ceiling(code)
    return out


def parse_doc_sections(doc: str) -> dict[str, str]:
    """Split a rule docstring into its ``## Heading`` sections."""
    import inspect

    text = inspect.cleandoc(doc)
    parts = _HEADING.split(text)
    sections: dict[str, str] = {}
    for i in range(1, len(parts) - 1, 2):
        sections[parts[i]] = parts[i + 1].strip("\n")
    return sections


RULE_PACKAGES = (
    "torchreview.rules.security",
    "torchreview.rules.performance",
    "torchreview.rules.architecture",
    "torchreview.rules.quality",
    "torchreview.rules.bugs",
    "torchreview.rules.runtime",
)


def _iter_rule_classes() -> Iterable[type[Rule]]:
    for package_name in RULE_PACKAGES:
        package = importlib.import_module(package_name)
        for info in pkgutil.iter_modules(package.__path__):
            if not info.name.startswith("tr"):
                continue
            module = importlib.import_module(f"{package_name}.{info.name}")
            for value in vars(module).values():
                if (
                    isinstance(value, type)
                    and issubclass(value, Rule)
                    and value is not Rule
                    and value.code
                    and value.__module__ == module.__name__
                ):
                    yield value


@lru_cache(maxsize=1)
def all_rules() -> tuple[type[Rule], ...]:
    rules = sorted(_iter_rule_classes(), key=lambda r: r.code)
    seen: dict[str, str] = {}
    for rule in rules:
        for key in (rule.code, rule.name):
            if key in seen:
                raise RuntimeError(f"duplicate rule code or name {key!r} ({rule.__module__})")
            seen[key] = rule.__module__
    return tuple(rules)


def rule_by_code() -> dict[str, type[Rule]]:
    return {r.code: r for r in all_rules()}


def find_rule(key: str) -> type[Rule] | None:
    key = key.strip()
    for rule in all_rules():
        if rule.code == key.upper() or rule.name == key.lower():
            return rule
    return None


def matches_selector(rule: type[Rule], selector: str) -> bool:
    """A selector is a code, a code prefix (``TR1``, ``TR40``), a slug or ``ALL``."""
    sel = selector.strip()
    if sel.upper() == "ALL":
        return True
    if sel.upper().startswith("TR"):
        return rule.code.startswith(sel.upper())
    return rule.name == sel.lower()


def is_valid_selector(selector: str) -> bool:
    return any(matches_selector(r, selector) for r in all_rules())
