"""A reviewed script that crashes: the error in the report, and known misuses as findings.

An uncaught exception is recorded in the report's ``errors`` (its type, its
first message line, and the innermost line of user code on its traceback),
so a JSON report never reads as a clean run when the script died.  Where the
message is the signature of a well-known PyTorch misuse, the crash also
becomes a finding with the catalog code of that misuse, at that line:

* "one of the variables needed for gradient computation has been modified by
  an inplace operation" / "a leaf Variable that requires grad is being used in
  an in-place operation" -> TR501;
* "'DistributedDataParallel' object has no attribute" -> TR606 (a method or
  attribute of the model looked up on the DDP wrapper);
* device mismatches, batch-norm batches of one and DDP unused parameters are
  explained by ``devices.DeviceChecks.explain`` (TR403, TR512, TR606).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from torchreview.findings import Finding, ReviewError
from torchreview.runtime._env import UNKNOWN_SITE, Site, is_internal, site_of
from torchreview.runtime.codes import runtime_finding

if TYPE_CHECKING:  # pragma: no cover
    from torchreview.runtime.watcher import Watcher

_SAVED_MODIFIED = "one of the variables needed for gradient computation has been modified by an inplace"
_LEAF_INPLACE = "a leaf Variable that requires grad is being used in an in-place operation"
_DDP_ATTRIBUTE = re.compile(r"'DistributedDataParallel' object has no attribute '([^']+)'")
_TENSOR_DESC = re.compile(r"\[(torch\.\S+ \[[^\]]*\])\], which is output (\d+) of (\w+)")


def failing_site(exc: BaseException, script: str | None = None) -> Site:
    """The innermost traceback line in ``script`` (an absolute path), else in user code."""
    tb, in_script, in_user = exc.__traceback__, None, None
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if script is not None and filename == script:
            in_script = tb
        if not is_internal(filename):
            in_user = tb
        tb = tb.tb_next
    last = in_user or in_script
    if last is None:
        return UNKNOWN_SITE
    site = site_of(last.tb_frame)
    if site.line == last.tb_lineno:
        return site
    import linecache

    return Site(site.path, last.tb_lineno,
                linecache.getline(last.tb_frame.f_code.co_filename, last.tb_lineno).strip())


class CrashChecks:
    """Records the script's uncaught exception; maps known signatures to findings."""

    def __init__(self, watcher: "Watcher") -> None:
        self.w = watcher
        self.explained: list[Finding] = []
        self.recorded = False

    def record(self, exc: BaseException, script: str | None = None) -> None:
        if self.recorded or isinstance(exc, (SystemExit, KeyboardInterrupt)):
            return
        self.recorded = True
        site = failing_site(exc, script)
        text = str(exc).strip()
        first = text.splitlines()[0] if text else ""
        kind = type(exc).__name__
        path = site.path if site is not UNKNOWN_SITE else (self.w.options.script or "<runtime>")
        where = f"line {site.line}: " if site is not UNKNOWN_SITE else ""
        self.w.errors.append(ReviewError(
            path=path, message=f"{where}the script stopped with {kind}: {first[:300]}".rstrip(": "),
            line=site.line if site is not UNKNOWN_SITE else None, kind=kind))
        finding = self._known(exc, text, site)
        if finding is not None:
            self.explained.append(finding)
            self.w.warn(finding.code, finding.message.split(". ")[0], site)

    def _known(self, exc: BaseException, text: str, site: Site) -> Finding | None:
        if _SAVED_MODIFIED in text:
            found = _TENSOR_DESC.search(text)
            what = (f"a {found.group(1)} (output {found.group(2)} of {found.group(3)})"
                    if found else "a tensor")
            return runtime_finding("TR501", (
                f"backward failed: {what} that autograd saved for the gradient was modified "
                "in place after it was used (`x.clamp_()`, `x[...] = ...`, `x += ...`, "
                "`relu(inplace=True)` on a view or an output the graph still needs). Compute "
                "it out of place (`x = x.clamp(...)`, `torch.stack`/`torch.cat` of new "
                "columns); `torch.autograd.set_detect_anomaly(True)` shows the in-place line."),
                site)
        if _LEAF_INPLACE in text:
            return runtime_finding("TR501", (
                "in-place operation on a leaf tensor that requires grad (a parameter or a "
                "`requires_grad=True` tensor, or a view of one) with autograd on: wrap manual "
                "updates in `torch.no_grad()`, or compute the value out of place."), site)
        if isinstance(exc, AttributeError):
            found = _DDP_ATTRIBUTE.search(text)
            if found:
                return runtime_finding("TR606", (
                    f"`{found.group(1)}` was looked up on the DistributedDataParallel wrapper, "
                    "which does not forward the wrapped model's own methods and attributes: "
                    f"keep the unwrapped model (`raw_model = model.module`) and call "
                    f"`raw_model.{found.group(1)}` (every rank fails the same way)."), site)
        return None

    def findings(self) -> list[Finding]:
        return list(self.explained)

