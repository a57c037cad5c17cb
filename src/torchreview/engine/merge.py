"""One problem, one finding: merging findings that share a root cause.

General mechanisms, declared by rules and applied by the runner after
every file and project rule has run (and after ignores/severity filters); no
rule knows about another:

* ``Rule.root_cause``: findings of rules naming the same root cause at the
  same place (path, cell, line, column) become one finding. A defect leads
  advice, then the most severe one, then the lowest code (the finding takes
  the highest severity of the group); the others' messages are appended, their
  locations become ``related`` (SARIF ``relatedLocations``) and their fixes
  are combined when the edits do not overlap. ``--select`` of one rule runs
  that rule alone, so it is still reported on its own.
* One rule reporting twice on one line (``loss(a, y) + loss(b, y)``, both inputs
  softmax probabilities) with the same kind and confidence: one finding, the
  other place kept as a related location (a line carries one comment per rule).
* ``Rule.summarize = "project"``: findings of one rule in one project with the
  same ``Rule.repeat_key`` become one finding at the first occurrence, with a
  count, the other places listed and kept as ``related`` locations.
  ``Rule.summarize = "review"``: the same across the whole review, sub-projects
  included (a leaked key pasted into two sub-projects' notebooks).
  ``Rule.summarize = "scope"``: the same, for findings of one rule about one
  root value (``Finding.subject``) in one function or notebook cell (twelve
  `.numpy()` lines reading one model ``output``).
* For every rule: findings of one rule in one file (a notebook: in any cell,
  or in any notebook of the same folder -- a course chapter's lessons copying
  one training cell) whose messages are word for word the same
  (``self.prior`` is a plain tensor attribute, in two classes of one module)
  are one comment: the first leads, the others become related locations; in one
  notebook, so are findings of one rule whose messages differ only in the code they
  quote (the same habit about other names, lesson after lesson). So
  are findings of one rule with one message on the same line of code in files
  of the same name (a file copied into another folder of the project), and
  findings of one rule on the same line of code in sibling copies of one
  script (``CIFAR/baseline.py``, ``SVHN/oe_scratch.py``: files that share most of
  their lines, engine/file_copies.py), whatever their messages say, and
  findings of one rule with one message (line numbers aside) in such copies
  whose flagged line was edited in the copy (``if acc > best:`` in ``main.py``,
  ``if acc > best and main_process():`` in ``main_ddp.py``), a copy's own path in its
  message counting as the original's (``saved at <this notebook> cell 22``). Then, anywhere in one
  project, findings of one rule on the same line of code whose messages are the same
  but for line numbers (the same code pattern, so the same mistake: each copied model class of a vendored library
  evaluating mid-epoch) are one comment. The same line of code
  flagged by one rule in two functions that are copies of each other (one
  ``train_step`` pasted into two otherwise different scripts) is one comment too.

``--fix`` works on the per-file findings before any merge, so merging never
drops an edit.

And for every rule: a notebook finding on a line that is, code for code, the
flagged line of the same rule's finding in a module of the same project (a
notebook walking through the package's code) becomes a related location of
the module's finding (``fold_notebook_copies``).

A third, ``Rule.supersedes``, is applied per file as soon as the file rules
have run (``drop_superseded``): a finding of a superseded rule at the place
where the superseding rule reports is dropped, fix included (the rule naming
where an untrusted path comes from supersedes the one reporting a plain missing
``weights_only``).
"""

from __future__ import annotations

import io
import os
import re
import tokenize
from dataclasses import replace
from typing import Callable

from torchreview.engine.file_copies import CopyDetector
from torchreview.findings import Finding, Fix, Related

SHOWN_PLACES = 4


def _related(f: Finding) -> Related:
    return Related(code=f.code, path=f.path, line=f.line, column=f.column, end_line=f.end_line,
                   end_column=f.end_column, message=f.message, cell=f.cell)


def _parts(group: list[Finding]) -> tuple[Finding, ...]:
    """The unmerged findings a merged group stands for (``Finding.parts``)."""
    return tuple(p for f in group for p in (f.parts or (f,)))


def _own_message(f: Finding) -> str:
    """The message a finding was reported with, before a merge added its places."""
    return f.parts[0].message if f.parts else f.message


def _where(f: Finding) -> str:
    cell = f"cell {f.cell}:" if f.cell is not None else ""
    return f"{f.path}:{cell}{f.line}"


def _combine_fixes(fixes: list[Fix]) -> Fix | None:
    """The edits of every fix when none overlaps another (insertions at one
    point are concatenated in order); else only the first fix."""
    if not fixes:
        return None
    first = fixes[0]
    edits = list(first.edits)
    titles = [first.title] if first.title else []
    for fix in fixes[1:]:
        merged = list(edits)
        ok = True
        for e in fix.edits:
            start, end = (e.line, e.column), (e.end_line, e.end_column)
            for i, o in enumerate(merged):
                o_start, o_end = (o.line, o.column), (o.end_line, o.end_column)
                if start == end == o_start == o_end:  # two insertions at one point
                    merged[i] = replace(o, content=o.content + e.content)
                    break
                if start < o_end and o_start < end or (start == end and o_start < start < o_end) \
                        or (o_start == o_end and start < o_start < end):
                    ok = False
                    break
            else:
                merged.append(e)
            if not ok:
                break
        if ok:
            edits = merged
            if fix.title and fix.title not in titles:  # two rules giving the same advice: once
                titles.append(fix.title)
    applicability = "unsafe" if any(f.applicability == "unsafe" for f in fixes) else first.applicability
    if len(titles) == 1 and len(edits) == len(first.edits):
        return first
    return Fix(applicability, tuple(edits), "; ".join(titles))


_KIND_RANK = {"defect": 2, "likely-defect": 1, "advice": 0}
_CONFIDENCE_RANK = {"low": 0, "medium": 1, "high": 2}


def _merge_place(group: list[Finding]) -> Finding:
    # a defect leads advice (so the default report, which hides advice, keeps it),
    # then the most severe, then the lowest code
    lead = max(group, key=lambda f: (_KIND_RANK.get(getattr(f, "kind", "defect"), 2), f.severity,
                                     [-ord(c) for c in f.code]))
    others = [f for f in group if f is not lead]
    message = lead.message + "".join(f". Also {o.code}: {o.message}" for o in others)
    fixes = [f.fix for f in [lead, *others] if f.fix is not None]
    return replace(lead, message=message, fix=_combine_fixes(fixes), severity=max(f.severity for f in group),
                   related=lead.related + tuple(_related(o) for o in others)
                   + tuple(r for o in others for r in o.related),  # the places already merged into them
                   parts=_parts([lead, *others]))


def _merge_repeats(group: list[Finding]) -> Finding:
    # the first place of the strongest kind, then of the highest confidence, leads:
    # a defect in shipped code is not summarised under the advice (or the hidden
    # medium-confidence finding) of a script that happens to come first
    group = sorted(group, key=lambda f: (-_KIND_RANK.get(getattr(f, "kind", "defect"), 2),
                                         -_CONFIDENCE_RANK.get(getattr(f, "confidence", "high"), 2)))
    lead = group[0]
    others = group[1:]
    # every place the group stands for, merged ones included, each named once: a repeat of
    # findings that were already merged reads "same in 3 more places", not two suffixes
    here = _where(lead)
    wheres: list[str] = []
    for part in _parts(group):
        where = _where(part)
        if where != here and where not in wheres:
            wheres.append(where)
    places = ", ".join(wheres[:SHOWN_PLACES]) + (", …" if len(wheres) > SHOWN_PLACES else "")
    count = len(wheres)
    message = f"{_own_message(lead)} (same in {count} more place{'s' if count != 1 else ''}: {places})" \
        if count else lead.message
    return replace(lead, message=message, severity=max(f.severity for f in group),
                   related=lead.related + tuple(r for o in others for r in (_related(o), *o.related)),
                   parts=_parts(group))


_LISTED_COLUMNS = 6


def _merge_line(group: list[Finding]) -> Finding:
    lead, others = group[0], group[1:]
    if all(o.column == lead.column for o in others):
        # one place many times over (the members of an archive, all reported at its start):
        # a count, not a list of the same column
        message = f"{lead.message} ({len(others)} more like it here)"
    else:
        shown = [str(o.column) for o in others[:_LISTED_COLUMNS]]
        if len(others) > _LISTED_COLUMNS:
            shown.append(f"... ({len(others)} in all)")
        columns = ", ".join(shown)
        message = f"{lead.message} (same again on this line, column{'s' if len(others) != 1 else ''} {columns})"
    return replace(lead, message=message, related=lead.related + tuple(_related(o) for o in others),
                   parts=_parts(group))


def _grouped(findings: list[Finding], key_of: Callable[[Finding], tuple | None],
             merge: Callable[[list[Finding]], Finding]) -> list[Finding]:
    """Findings with a key are grouped (in first-occurrence order) and each group
    with more than one member merged; the others pass through."""
    groups: dict[tuple, list[Finding]] = {}
    stage: list[Finding | tuple] = []
    for f in findings:
        key = key_of(f)
        if key is None:
            stage.append(f)
            continue
        if key not in groups:
            groups[key] = []
            stage.append(key)
        groups[key].append(f)
    return [s if isinstance(s, Finding) else
            (groups[s][0] if len(groups[s]) == 1 else merge(groups[s])) for s in stage]


def _grouped_across_files(findings: list[Finding], key_of: Callable[[Finding], tuple | None]) -> list[Finding]:
    """Like ``_grouped`` with ``_merge_repeats``, across files only: of the findings
    sharing a key, the first of each file joins the group (the first file's leads);
    further ones in a file already represented pass through (two places of one file
    whose messages differ by a number may cite different evidence)."""
    groups: dict[tuple, list[Finding]] = {}
    seen: dict[tuple, set[str]] = {}
    for f in findings:
        key = key_of(f)
        if key is None:
            continue
        paths = seen.setdefault(key, set())
        if f.path in paths:
            continue
        paths.add(f.path)
        groups.setdefault(key, []).append(f)
    merged = {id(g[0]): _merge_repeats(g) for g in groups.values() if len(g) > 1}
    dropped = {id(f) for g in groups.values() if len(g) > 1 for f in g[1:]}
    return [merged.get(id(f), f) for f in findings if id(f) not in dropped]


def keep_places(findings: list[Finding], keep: Callable[[Finding], bool]) -> list[Finding]:
    """``findings`` filtered place by place (a baseline, ``--since``): a merged
    finding all of whose places are kept stays as it is; one with only some
    places kept becomes those places, merged among themselves; one with none
    kept is dropped."""
    out: list[Finding] = []
    for f in findings:
        places = f.parts or (f,)
        kept = [p for p in places if keep(p)]
        if len(kept) == len(places):
            out.append(f)
        elif kept:
            out.extend(merge_findings(kept))
    return out


def drop_superseded(findings: list[Finding]) -> list[Finding]:
    """``findings`` without those superseded (``Rule.supersedes``) by another
    finding on the same node: the superseded finding lies within its span."""
    from torchreview.catalog import rule_by_code

    rules = rule_by_code()
    winners = [f for f in findings if f.code in rules and rules[f.code].supersedes]
    if not winners:
        return findings

    def beaten(f: Finding) -> bool:
        return any(f.code in rules[g.code].supersedes and f.path == g.path and f.cell == g.cell
                   and (g.line, g.column) <= (f.line, f.column)
                   and (f.end_line, f.end_column) <= (g.end_line, g.end_column) for g in winners)

    return [f for f in findings if not beaten(f)]


def merge_findings(findings: list[Finding], root_of: Callable[[str], str] = lambda path: "",
                   copies: CopyDetector | None = None) -> list[Finding]:
    """Findings with one finding per root cause (order: first occurrence)."""
    copies = copies or CopyDetector()
    from torchreview.catalog import rule_by_code

    rules = rule_by_code()

    def repeat(f: Finding) -> tuple | None:
        rule = rules.get(f.code)
        if rule is None:
            return None
        # a finding already standing for other places is not summarised again -- except, across a
        # project, one whose related places are all its own file's (the second pickle of one archive)
        if f.related and (rule.summarize not in ("project", "review") or any(r.path != f.path for r in f.related)):
            return None
        if rule.summarize == "scope":  # one root value in one function or notebook cell
            return (f.code, f.path, f.cell, f.context, f.subject, rule.repeat_key(f)) if f.subject else None
        if rule.summarize == "review":  # one root cause wherever it is, sub-projects included
            return (f.code, "", rule.repeat_key(f))
        if rule.summarize != "project":
            return None
        return (f.code, root_of(f.path), rule.repeat_key(f))

    def place(f: Finding) -> tuple | None:
        rule = rules.get(f.code)
        if rule is None or not rule.root_cause:
            return None
        return (rule.root_cause, f.path, f.cell, f.line, f.column)

    def line(f: Finding) -> tuple:
        return (f.code, f.path, f.cell, f.line, getattr(f, "kind", None), getattr(f, "confidence", None))

    # 0. one rule twice on one line (two calls of one statement); 1. the same root
    # cause in several places of one project; 2. a notebook's copy of a module's line;
    # 3. one message repeated in one file, then in copies of one file; 4. several aspects
    # of one problem at one place
    def same_words(f: Finding) -> tuple | None:
        # notebooks of one folder (a course chapter's lessons) share the copied cell
        where = os.path.dirname(f.path) + "/*.ipynb" if f.path.endswith(".ipynb") else f.path
        # spacing is not wording: code quoted as written (`-0.1 * x` and `-0.1*x`) says the same
        return (f.code, where, _SPACES.sub("", _own_message(f)), getattr(f, "kind", None),
                getattr(f, "confidence", None))

    def copied_file(f: Finding) -> tuple | None:
        # a file copied into another folder of the project (`part1/gans/x.py`, `part2/gans/x.py`):
        # the same rule, message and flagged line in a file of the same name
        text = _normalized(f.source_line)
        return None if not text else (f.code, root_of(f.path), os.path.basename(f.path), _own_message(f), text,
                                      f.severity, getattr(f, "kind", None), getattr(f, "confidence", None))

    def copied_line(f: Finding) -> tuple | None:
        # the same rule on the same line of code in sibling copies of one script (the
        # messages may differ: they name lines that moved in the copies)
        text = _normalized(f.source_line)
        return None if not text else (f.code, root_of(f.path), text, f.severity, getattr(f, "kind", None),
                                      getattr(f, "confidence", None))

    def copied_message(f: Finding) -> tuple:
        # the same rule saying the same thing (line numbers aside) in sibling copies of one
        # script whose flagged line was edited in the copy (`if acc > best:` became
        # `if acc > best and main_process():` in the DDP copy of a training script); a copy
        # naming itself (`saved at <this notebook> cell 22`) says what the original says
        # of itself (a tutorial's U-Net notebook copied once per loss function)
        return (f.code, root_of(f.path), _LINE_NUMBERS.sub("#", _own_message(f).replace(f.path, "\0")), f.severity,
                getattr(f, "kind", None), getattr(f, "confidence", None))

    def project_message(f: Finding) -> tuple | None:
        text = _normalized(f.source_line)
        return (f.code, root_of(f.path), text, _LINE_NUMBERS.sub("#", _own_message(f)), f.severity,
                getattr(f, "kind", None), getattr(f, "confidence", None)) \
            if text and not f.path.endswith(".ipynb") else None  # notebooks: their own folder rules above

    def scope_shape(f: Finding) -> tuple | None:
        # one rule saying the same thing about different names in one notebook (the softmax model
        # fed to the loss in the training cell and again in the evaluation cell; `criterion` in one
        # section, `loss_func` in the next): a lesson repeating one habit, one comment
        # (a project rule's finding has no function: one file is its scope -- two functions of one
        # script saving a whole encoder each and loading it back, cross_modal_adaptation's
        # `features.py`, is one comment, judged a repeat in blind test 81)
        if not f.path.endswith(".ipynb"):
            return None
        return (f.code, f.path, _shape(_own_message(f)), getattr(f, "kind", None), getattr(f, "confidence", None))

    def function_shape(f: Finding) -> tuple | None:
        # so in one module: one rule saying the same thing about other names anywhere in one Python
        # file is one habit, one comment listing the places (the U-Net's and the text encoder's
        # gradients clipped before one `scaler.unscale_`, waifu-diffusion, blind test 79; two
        # functions of one script each saving a whole encoder, cross_modal_adaptation, blind test
        # 81; over every judged first pass up to blind test 83, 79 of 204 such later findings were
        # called repeats of the first and 18 worth a comment of their own). The key keeps kind and
        # confidence apart, so a hidden guess never rides on a shown defect. After the places are
        # merged, so that what another rule says at each of those lines stays with it.
        if f.path.endswith(".ipynb"):
            return None
        return (f.code, f.path, _shape(_own_message(f)), getattr(f, "kind", None),
                getattr(f, "confidence", None))

    per_line = _grouped(sorted(findings, key=Finding.sort_key), line, _merge_line)
    firsts = fold_notebook_copies(_grouped(per_line, repeat, _merge_repeats), root_of)
    firsts = _grouped(_grouped(firsts, same_words, _merge_repeats), copied_file, _merge_repeats)
    firsts = _grouped(firsts, scope_shape, _merge_repeats)
    firsts = _grouped_copies(firsts, copied_line, copies, functions=True)
    firsts = _grouped_copies(firsts, copied_message, copies)
    # one rule saying the same thing (line numbers aside) about the same line of code anywhere
    # in one project: the same mistake in each copy of a pattern (conv-emotion's vendored simpletransformers models,
    # each `train()` evaluating mid-epoch and never switching back) is one comment, listing
    # the places
    firsts = _grouped_across_files(firsts, project_message)
    return _grouped(_grouped(firsts, place, _merge_place), function_shape, _merge_repeats)


_LINE_NUMBERS = re.compile(r"\d+")
_QUOTED_CODE = re.compile(r"`[^`]*`")


def _shape(message: str) -> str:
    """A message with its quoted code and numbers masked: what it says, not about which names."""
    return _LINE_NUMBERS.sub("#", _QUOTED_CODE.sub("`_`", message))


def _grouped_copies(findings: list[Finding], key_of: Callable[[Finding], tuple | None],
                    copies: CopyDetector, functions: bool = False) -> list[Finding]:
    """Findings with one key are merged when their files are copies of the group's
    first file (engine/file_copies.py) -- with ``functions``, also when the functions
    holding the flagged lines are; files are read only for keys shared by
    findings in different files."""
    by_key: dict[tuple, list[Finding]] = {}
    for f in findings:
        key = key_of(f)
        if key is not None:
            by_key.setdefault(key, []).append(f)
    lead_of: dict[int, Finding] = {}
    members: dict[int, list[Finding]] = {}
    for group in by_key.values():
        if len({f.path for f in group}) < 2:
            continue
        leads: list[Finding] = []
        for f in group:
            lead = next((g for g in leads if copies.are_copies(g.path, f.path) or
                         (functions and copies.same_function(g.path, g.line, f.path, f.line))), None)
            if lead is None:
                leads.append(f)
                members[id(f)] = [f]
            else:
                lead_of[id(f)] = lead
                members[id(lead)].append(f)
    if not lead_of:
        return findings
    return [_merge_repeats(members[id(f)]) if len(members.get(id(f), ())) > 1 else f
            for f in findings if id(f) not in lead_of]


_SPACES = re.compile(r"\s+")


def _normalized(line: str) -> str:
    """The flagged line's code as compared across files: no comment, no indentation,
    runs of spaces as one (``x = f(a,  b)  # note`` and ``x = f(a, b)`` are equal)."""
    code = line
    if "#" in line:
        try:
            for tok in tokenize.generate_tokens(io.StringIO(line).readline):
                if tok.type == tokenize.COMMENT:
                    code = line[:tok.start[1]]
                    break
        except (tokenize.TokenError, SyntaxError, ValueError):
            pass  # part of a longer statement: the comment is kept, only equal lines match
    return _SPACES.sub(" ", code).strip()


def fold_notebook_copies(findings: list[Finding], root_of: Callable[[str], str]) -> list[Finding]:
    """A notebook finding whose flagged line is, code for code, the flagged line of
    the same rule's finding in a module of the same project (a notebook that
    walks through the package's own code) is the module's finding again: it
    becomes a related location of the module's finding, which names it. The same
    holds within one notebook: a cell copied further down (the same loop run on
    another task) is a related location of the first cell's finding."""
    def key(f: Finding) -> tuple | None:
        text = _normalized(f.source_line)
        return (f.code, root_of(f.path), text) if text else None

    modules: dict[tuple, Finding] = {}
    for f in findings:
        if f.path.endswith(".ipynb"):
            continue
        # each place of a module finding that already merged repeats (one root value in one
        # scope of a notebook's `.py` export: the softmax model fed to the loss in two cells)
        # leads the notebook's copy of that place's line
        for part in (f.parts or (f,)):
            k = key(part)
            if k is not None and k not in modules:
                modules[k] = f
    # a cell copied within one notebook (the same loop run again on another task): the
    # first cell's finding leads, the copies are its related locations
    for f in findings:
        k = key(f) if f.path.endswith(".ipynb") else None
        if k is not None and (k + (f.path,)) not in modules:
            modules[k + (f.path,)] = f
    if not modules:
        return findings
    copies: dict[int, list[Finding]] = {}
    kept: list[Finding] = []
    for f in findings:
        lead = None
        if f.path.endswith(".ipynb") and key(f) is not None:
            lead = modules.get(key(f))
            if lead is None:
                first = modules.get(key(f) + (f.path,))
                lead = first if first is not f else None
        if lead is None:
            kept.append(f)
        else:
            copies.setdefault(id(lead), []).append(f)
    if not copies:
        return findings
    out = []
    for f in kept:
        found = copies.get(id(f))
        if found:
            places = ", ".join(_where(c) for c in found[:SHOWN_PLACES]) + (", …" if len(found) > SHOWN_PLACES else "")
            f = replace(f, message=f"{f.message} (the same line in {places})",
                        severity=max([f.severity, *(c.severity for c in found)]),
                        related=f.related + tuple(_related(c) for c in found), parts=_parts([f, *found]))
        out.append(f)
    return out
