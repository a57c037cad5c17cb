"""Turn what the scan found into TR108 findings and error entries.

One finding per pickle stream that references anything outside the allow-list,
at the worst severity it contains, naming the file, the member, the byte offsets
and every offending global.  Streams or containers that could not be read are
error entries; if the file could not be fully verified and nothing critical was
found, a medium finding says so, so a broken file never passes silently.
"""

from __future__ import annotations

from dataclasses import replace

from torchreview.artifacts.containers import ScanState
from torchreview.artifacts.opcodes import GlobalRef, StreamResult
from torchreview.artifacts.policy import CONTEXT_NUMPY, judge, load_policy, normalise
from torchreview.findings import Finding, ReviewError, Severity
from torchreview.rules.security.tr108_unsafe_pickle_artifact import REFUSED, UnsafePickleArtifact

MAX_LISTED_USES = 1


_PSEUDO = ("pickle #", "(", "object array pickle", "pickle inside")


def _where(location: str) -> str:
    """'member 'a.pt!archive/data.pkl'', 'pickle #2 (protocol version)', ..."""
    if not location:
        return "pickle stream"
    parts = location.split("!")
    members = [p for p in parts if not p.startswith(_PSEUDO)]
    pseudo = [f"{p[1:-1]}-compressed stream" if p.startswith("(") else p
              for p in parts if p.startswith(_PSEUDO)]
    text = f"member {'!'.join(members)!r}" if members else ""
    if pseudo:
        text = ", ".join(([text] if text else []) + pseudo)
    return text


def _describe_ref(ref: GlobalRef, with_uses: bool, reason: str = "") -> str:
    text = f"{ref.qualname} ({ref.opcode} at byte {ref.offset}"
    if ref.count > 1:
        text += f", {ref.count} references"
    if with_uses and ref.uses:
        text += "; " + "; ".join(ref.uses[:MAX_LISTED_USES])
    if reason:
        text += f"; {reason}"
    return text + ")"


def _numpy_rebuilder(ref: GlobalRef) -> bool:
    """A global of NumPy's own array/scalar/dtype rebuilding (``allow.numpy`` of the
    policy: ``numpy.core.multiarray.scalar``, ``_reconstruct``, ``numpy.dtype`` ...):
    it builds data from bytes and runs no code of the file's choosing."""
    module, name = normalise(ref.module, ref.name)
    return f"{module}.{name}" in load_policy().allow.get(CONTEXT_NUMPY, frozenset())


def _stream_finding(result: StreamResult, path: str) -> Finding | None:
    critical: list[str] = []
    unknown: list[str] = []
    data_only = True  # every global outside the torch allow-list only rebuilds NumPy data
    for ref in sorted(result.refs.values(), key=lambda r: r.offset):
        if ref.vetted and not (ref.called or ref.instantiated or ref.built or ref.uses):
            continue  # every call loaded a nested torch stream of data only: a tensor, as plain pickle stores one
        verdict = judge(ref, result.context)
        if verdict.severity is Severity.CRITICAL:
            critical.append(_describe_ref(ref, with_uses=True, reason=verdict.reason))
        elif verdict.severity is not None:
            unknown.append(_describe_ref(ref, with_uses=False))
            data_only = data_only and _numpy_rebuilder(ref)
    events = sorted(result.events, key=lambda e: e.offset)
    has_critical = bool(critical) or any(e.severity is Severity.CRITICAL for e in events)
    for event in events:
        (critical if has_critical else unknown).append(event.text)
    if not critical and not unknown:
        return None
    where = _where(result.location)
    loader = (
        "numpy.load(allow_pickle=True) or pickle"
        if result.context == CONTEXT_NUMPY
        else "pickle or torch.load(weights_only=False)"
    )
    if not critical and data_only and unknown and not events and result.complete and not result.error:
        # NumPy scalars/arrays in a pickle (a metric saved as np.float64, landmarks as an
        # ndarray): nothing here runs code, so it is not a trust question; what remains is
        # that a weights-only load refuses the file, which the code loading it decides
        return UnsafePickleArtifact.make_finding(
            path=path, line=1, column=1, severity=Severity.LOW, kind="advice", detection="static",
            scope="artifact",
            message=f"{where} holds NumPy data: {', '.join(unknown)}. These globals only rebuild "
                    "arrays, scalars and dtypes (no code runs), but `torch.load(weights_only=True)` "
                    "refuses them: store tensors or plain numbers, or allow them with "
                    "`torch.serialization.add_safe_globals([...])` where the file is loaded")
    if critical:
        message = f"{where} imports code-executing globals: {', '.join(critical)}"
        if unknown:
            message += f"; also outside the weights-only allow-list: {', '.join(unknown)}"
        message += f". Loading it with {loader} runs them: do not load this file"
        severity = Severity.CRITICAL
    else:
        allow = (
            "the torch.load(weights_only=True) and NumPy object-array allow-lists"
            if result.context == CONTEXT_NUMPY
            else "the torch.load(weights_only=True) allow-list"
        )
        message = (
            f"{where} needs globals outside {allow}: {', '.join(unknown)}. "
            f"{REFUSED}; it needs trust"
        )
        severity = Severity.MEDIUM
    return UnsafePickleArtifact.make_finding(
        path=path, line=1, column=1, message=message, severity=severity,
        detection="static", scope="artifact",
    )


def _with_nested(streams: list[StreamResult], outer: str | None = None):
    """(stream, is-inside-a-string) for every stream, nested ones under their outer stream."""
    for result in streams:
        if outer is not None:
            location = f"{outer}!{result.location}" if outer else result.location
            result = replace(result, location=location)
        yield result, outer is not None
        yield from _with_nested(result.nested, result.location)


def build(state: ScanState, path: str, *, explicit: bool) -> tuple[list[Finding], list[ReviewError]]:
    findings: list[Finding] = []
    errors: list[ReviewError] = []
    for result, inside_string in _with_nested(state.streams):
        finding = _stream_finding(result, path)
        if inside_string:
            # Bytes that merely look like a pickle are data unless something
            # unpickles them, and that something is critical itself: only code
            # execution inside them is worth a finding, and parse errors are not.
            if finding is not None and finding.severity is Severity.CRITICAL:
                findings.append(finding)
            continue
        if finding is not None:
            findings.append(finding)
        if result.error:
            errors.append(ReviewError(path, f"{_where(result.location)}: {result.error}"))
    for location, message in state.problems:
        prefix = f"{_where(location)}: " if location else ""
        errors.append(ReviewError(path, f"{prefix}{message}"))
    capped = [_where(c) for c in state.capped]

    def in_capped(message: str) -> bool:  # `member 'x.npy': ...`, `member 'x.npy', object array pickle: ...`
        return any(message.startswith(c) and message[len(c):len(c) + 1] in (":", ",") for c in capped)

    # ... and the part read of such a member holds a pickle that parsed up to the cut (a large
    # array, not a bomb of filler bytes, which keeps the plain "could not be fully verified")
    read = capped and any(in_capped(f"{_where(r.location)}:") and r.end > 0 for r in state.streams)
    if errors and not findings and read and all(in_capped(e.message) for e in errors):
        # every problem lies in members larger than the scanner reads (MetaHIN's 319 MB feature
        # array, zipped to 1.4 MB): the part read holds nothing outside the allow-list, and what
        # broke after the cut is the scan limit, not damage in the file
        cut = next(e.message for e in errors if "MiB" in e.message)
        findings.append(
            UnsafePickleArtifact.make_finding(
                path=path, line=1, column=1, severity=Severity.MEDIUM, scope="artifact", confidence="low",
                message=(
                    f"file only partly verified: {cut}. The part read imports nothing outside the allow-list; "
                    "the rest was not checked (a very large array, or a decompression bomb)"
                ),
            )
        )
    elif errors and not any(f.severity is Severity.CRITICAL for f in findings):
        first = errors[0].message
        more = f" (and {len(errors) - 1} more problem(s))" if len(errors) > 1 else ""
        findings.append(
            UnsafePickleArtifact.make_finding(
                path=path, line=1, column=1, severity=Severity.MEDIUM, scope="artifact",
                message=(
                    f"file could not be fully verified: {first}{more}. "
                    "Parts of it were not checked for code-executing globals; treat it as untrusted"
                ),
            )
        )
    if explicit and not state.recognised and not state.streams and not errors:
        errors.append(
            ReviewError(path, "not a checkpoint, pickle, NumPy or archive file: nothing was scanned")
        )
    return findings, errors


def internal_error(path: str, exc: BaseException) -> tuple[list[Finding], list[ReviewError]]:
    text = f"internal error while scanning ({type(exc).__name__}: {exc})"
    finding = UnsafePickleArtifact.make_finding(
        path=path, line=1, column=1, severity=Severity.MEDIUM, scope="artifact",
        message=f"file could not be fully verified: {text}; treat it as untrusted",
    )
    return [finding], [ReviewError(path, text)]
