"""Walk one pickle stream and find every global, every call, every trick.

Nothing is unpickled.  A small abstract machine mirrors the unpickler's stack,
mark stack and memo closely enough to know

* every global a stream imports (``GLOBAL``, ``INST``, ``STACK_GLOBAL`` whose
  names may come from the memo through ``GET``/``BINGET``/..., and ``EXT``
  codes registered through ``copyreg.add_extension``);
* what each global is used for (called by ``REDUCE``/``INST``/``OBJ``,
  instantiated by ``NEWOBJ`` or a ``copyreg`` rebuild helper, rebuilt with
  ``BUILD``), which ``policy.judge`` turns into a severity;
* tricks a plain opcode listing misses: a ``STACK_GLOBAL`` whose name is
  computed at load time, ``BUILD`` writing attributes onto an imported global,
  calls of the result of another call (``getattr(...)(...)`` chains), pickles
  hidden in string arguments.

Opcodes are read by ``decode`` (fast, padding skipped in bulk) and handled in
``handlers``; the values on the abstract stack are described in ``values``.
"""

from __future__ import annotations

import warnings

from torchreview.artifacts import copyreg_model, decode, joblib_arrays
from torchreview.artifacts.base import Budget, LimitExceeded, Span, SpanReader
from torchreview.artifacts.decode import LongArg
from torchreview.artifacts.handlers import MAX_NESTED, OpcodeHandlers, build_table
from torchreview.artifacts.policy import CONTEXT_TORCH, classify
from torchreview.artifacts.sniff import LEGACY_MAGIC, is_pickle_header
from torchreview.artifacts.results import Event, GlobalRef, StreamResult
from torchreview.artifacts.values import (
    INSTANCE,
    MAX_USES,
    UNKNOWN,
    CallVal,
    ExtRef,
    GlobalVal,
    describe,
)
from torchreview.findings import Severity

NESTED_TEXT_MAX = 4 * 1024 * 1024  # longer UTF-8 text is not decoded to look for a pickle
LEGACY_PICKLES = 5  # a legacy torch.save stream: magic number, protocol, sys info, object, storage keys

__all__ = ["Event", "GlobalRef", "StreamResult", "analyse_stream", "MAX_NESTED"]


class _Machine(OpcodeHandlers):
    def __init__(self, result: StreamResult, budget: Budget, depth: int = 0) -> None:
        self.res = result
        self.depth = depth  # pickles nested in strings of pickles
        self.budget = budget
        self.limits = budget.limits
        self.stack: list = []
        self.metastack: list[list] = []
        self.memo: dict[int, object] = {}
        self.allowed: dict[tuple[str, str], bool] = {}
        self.joblib = False  # joblib arrays seen: keep small dicts to read their layout
        # dill `_import_module("m")` calls not yet consumed by a `_get_attr`: id -> (call, ref, use text)
        self.module_imports: dict[int, tuple] = {}
        # `functools.partial` objects given a state by BUILD: id -> (partial, state)
        self.partial_states: dict[int, tuple] = {}
        self.reader: SpanReader | None = None

    # -- problems ------------------------------------------------------------
    def malformed(self, offset: int, text: str) -> None:
        if self.res.error is None:
            self.res.error = f"malformed pickle at byte {offset}: {text}"

    # -- stack ---------------------------------------------------------------
    def pop(self, offset: int):
        if self.stack:
            return self.stack.pop()
        self.malformed(offset, "stack underflow")
        return UNKNOWN

    def top(self, offset: int):
        if self.stack:
            return self.stack[-1]
        self.malformed(offset, "stack underflow")
        return UNKNOWN

    def mark(self) -> None:
        if len(self.metastack) >= self.limits.max_marks:
            raise LimitExceeded(f"more than {self.limits.max_marks} nested MARKs")
        self.metastack.append(self.stack)
        self.stack = []

    def pop_mark(self, offset: int) -> list:
        items = self.stack
        if self.metastack:
            self.stack = self.metastack.pop()
        else:
            self.malformed(offset, "no MARK to pop to")
            self.stack = []
        return items

    # -- globals -------------------------------------------------------------
    def add_global(self, module: str, name: str, offset: int, opcode: str) -> GlobalVal:
        key = (module, name)
        if key in joblib_arrays.WRAPPER_NAMES:
            self.joblib = True
        ref = self.res.refs.get(key)
        if ref is None:
            self.res.refs[key] = GlobalRef(module, name, offset, opcode)
        else:
            ref.count += 1
        return GlobalVal(module, name, offset)

    def is_allowed(self, value: GlobalVal) -> bool:
        key = (value.module, value.name)
        known = self.allowed.get(key)
        if known is None:
            known = classify(value.module, value.name, self.res.context).severity is None
            self.allowed[key] = known
        return known

    def use(self, target, text: str, offset: int) -> None:
        if isinstance(target, GlobalVal):
            ref = self.res.refs.get((target.module, target.name))
            if ref is not None and len(ref.uses) < MAX_USES:
                ref.uses.append(f"{text} at byte {offset}")
        elif isinstance(target, CallVal):
            self.res.events.append(
                Event(
                    Severity.MEDIUM,
                    offset,
                    f"the result of {describe(target)} is {text} at byte {offset}",
                )
            )

    def call(self, func, args, opcode: str, offset: int):
        """Record a call (REDUCE/NEWOBJ/OBJ/INST) and return the abstract result."""
        verb = "called by" if opcode == "REDUCE" else "instantiated by"
        if isinstance(func, GlobalVal):
            if self.is_allowed(func):
                copyreg_model.on_allowed_call(self, func, args, offset)
                return INSTANCE
            looked_up = copyreg_model.torch_function_lookup(func, args) if opcode == "REDUCE" else None
            if looked_up is not None:
                # `getattr(torch._C._VariableFunctionsClass, "sin")`: a reference to one torch function
                ref = self.res.refs.get((func.module, func.name))
                if ref is not None:
                    ref.vetted += 1
                return self.add_global(looked_up[0], looked_up[1], offset, "REDUCE")
            dill = copyreg_model.dill_attribute_lookup(func, args) if opcode == "REDUCE" else None
            if dill is not None:
                # `_get_attr(_import_module("numpy.core.multiarray"), "_reconstruct")`: dill's way of
                # naming one module attribute, judged as that global; the `_import_module` call it
                # consumed is no call of its own (undone once, when first consumed)
                self._undo_module_import(dill[2])
                ref = self.res.refs.get((func.module, func.name))
                if ref is not None:
                    ref.vetted += 1
                return self.add_global(dill[0], dill[1], offset, "REDUCE")
            if opcode == "REDUCE" and copyreg_model.vetted_payload_load(func, args):
                ref = self.res.refs.get((func.module, func.name))
                if ref is not None:
                    ref.vetted += 1
                return INSTANCE  # a tensor rebuilt from a torch stream that holds only data
            shown = CallVal(func, args)
            ref = self.res.refs.get((func.module, func.name))
            if ref is not None and not copyreg_model.on_call(self, func, ref, args, offset):
                if opcode.startswith("NEWOBJ"):
                    ref.instantiated = True
                else:
                    ref.called.append(opcode)
            self.use(func, f"{verb} {opcode} as {describe(shown)}", offset)
            if opcode == "REDUCE" and copyreg_model.dill_module_import(func, args) is not None and ref is not None:
                # remembered so that a `_get_attr` consuming it can undo this record
                self.module_imports[id(shown)] = (shown, ref, ref.uses[-1] if ref.uses else None)
            return shown
        wrapped = self._partial_function(func)
        if wrapped is not None:
            # a call of `functools.partial(<global>)` (pandas' `partial(new_block, ndim=2)`, called
            # for each block of a DataFrame) calls that global: judged as it (blind test 64)
            extra = func.args[1:] if isinstance(func.args, tuple) else ()
            given = args if isinstance(args, tuple) else (args,)
            return self.call(wrapped, (*extra, *given), opcode, offset)
        if not isinstance(func, (CallVal, ExtRef)):
            return INSTANCE  # a constant, or a malformation already reported
        self.res.events.append(
            Event(
                Severity.CRITICAL,
                offset,
                f"{opcode} at byte {offset} calls {describe(func)}, a value made at load time: "
                "what runs cannot be known without loading the file",
            )
        )
        return CallVal(func, args)

    def _partial_function(self, value) -> GlobalVal | None:
        """The global a ``functools.partial`` object calls: the one it was built with, when no
        ``BUILD`` replaced its state or the state names that same global (or another global, then
        that one); None when ``value`` is no such partial or its function is not a global."""
        if not (isinstance(value, CallVal) and isinstance(value.func, GlobalVal) and
                value.func.qualname == "functools.partial" and isinstance(value.args, tuple) and
                value.args and isinstance(value.args[0], GlobalVal)):
            return None
        entry = self.partial_states.get(id(value))
        if entry is None or entry[0] is not value:
            return value.args[0]
        state = entry[1]
        if isinstance(state, tuple) and state and isinstance(state[0], GlobalVal):
            return state[0]
        return None  # a state the scan cannot read: what the partial calls is not known

    def _undo_module_import(self, call: CallVal) -> None:
        """Take back the call and use recorded for dill's ``_import_module`` call ``call``, now
        that a ``_get_attr`` turned the pair into one global (once: a memoised module used by
        several lookups was called once)."""
        entry = self.module_imports.get(id(call))
        if entry is None or entry[0] is not call:  # (an id reused by another value)
            return
        del self.module_imports[id(call)]
        _, ref, text = entry
        if ref.called:
            ref.called.pop()
        if text in ref.uses:
            ref.uses.remove(text)
        ref.vetted += 1

    def stack_global(self, offset: int) -> None:
        name = self.pop(offset)
        module = self.pop(offset)
        if isinstance(module, str) and isinstance(name, str):
            self.stack.append(self.add_global(module, name, offset, "STACK_GLOBAL"))
            return
        self.res.events.append(
            Event(
                Severity.CRITICAL,
                offset,
                "STACK_GLOBAL imports a name computed at load time "
                f"({describe(module)}, {describe(name)}) at byte {offset}",
            )
        )
        self.stack.append(UNKNOWN)

    # -- the opcodes (decode.run dispatches here; True means STOP) ---------------
    def run(self, reader: SpanReader) -> None:
        self.reader = reader
        decode.run(self, reader)

    def fill(self, target, items: list) -> None:
        """SETITEM(S) into a dict we keep (joblib wrapper states); other containers stay opaque."""
        if isinstance(target, dict) and len(target) < 32:
            for key, value in zip(items[::2], items[1::2]):
                if isinstance(key, str):
                    target[key] = value

    def joblib_array(self, state: dict) -> None:
        """Step over the array data joblib wrote right after this BUILD."""
        reader = self.reader
        if joblib_arrays.skip_array(state, reader) == joblib_arrays.OBJECT:
            inner = StreamResult(location=self.res.location, context=self.res.context)
            nested = _Machine(inner, self.budget)
            nested.run(reader)
            for key, ref in inner.refs.items():
                self.res.refs.setdefault(key, ref)
            self.res.events.extend(inner.events)
            if inner.error and self.res.error is None:
                self.res.error = inner.error

    def nested_pickle(self, arg, pos: int) -> bool:
        """A string that is itself a pickle (fed to ``pickle.loads`` by a gadget): walk it too.

        Long bytes are walked on a window of the same buffer (no copy); long
        UTF-8 text must be decoded, and is only up to ``NESTED_TEXT_MAX``. Bytes that
        start like a legacy ``torch.save`` stream (its magic number) are walked as one:
        each of its pickles in turn. True when they are such a stream, read whole, whose
        pickles reference only what a weights-only load allows (``TORCH_PAYLOAD``).
        """
        if isinstance(arg, LongArg):
            outer = self.reader.span
            if arg.how != "utf-8":
                span = outer.window(arg.offset, arg.size)
            elif arg.size <= NESTED_TEXT_MAX:
                text = outer.read(arg.offset, arg.size).decode("utf-8", "surrogatepass")
                span = Span(text.encode("latin-1", "replace"))
            else:
                return False
        else:
            span = Span(arg.encode("latin-1", "replace") if isinstance(arg, str) else arg)
        reader = SpanReader(span, self.limits)
        # (a Python 2 `str` argument, BINSTRING, arrives decoded as latin-1: its bytes again)
        legacy = span.read(0, len(LEGACY_MAGIC)) == LEGACY_MAGIC
        clean = legacy
        for index in range(LEGACY_PICKLES if legacy else 1):
            if index and not is_pickle_header(span.read(reader.tell(), 3)):
                clean = False  # the stream ends before its five pickles
                break
            inner = StreamResult(
                location=f"pickle inside a string at byte {pos}" + (f" (#{index + 1})" if index else ""),
                context=self.res.context,
            )
            _walk(inner, reader, self.budget, self.depth + 1, charge=False)
            if inner.refs or inner.events or inner.nested:
                self.res.nested.append(inner)
            clean = clean and inner.complete and inner.error is None and not inner.events and \
                not inner.nested and all(classify(r.module, r.name, inner.context).severity is None
                                         for r in inner.refs.values())
            if not inner.complete:
                break
        return clean

    def put(self, index, pos: int) -> None:
        if not isinstance(index, int) or index < 0:
            self.malformed(pos, f"bad memo index {index!r}")
            return
        if index not in self.memo and len(self.memo) >= self.limits.max_memo:
            raise LimitExceeded(f"more than {self.limits.max_memo} memo entries")
        self.memo[index] = self.top(pos)


_Machine.handlers = build_table(_Machine)



def analyse_stream(
    reader: SpanReader,
    location: str,
    budget: Budget,
    context: str = CONTEXT_TORCH,
) -> StreamResult:
    """Walk one pickle starting at ``reader.tell()``; never raises for bad input."""
    result = StreamResult(location=location, context=context)
    _walk(result, reader, budget, 0)
    return result


def _walk(result: StreamResult, reader: SpanReader, budget: Budget, depth: int,
          charge: bool = True) -> None:
    start = reader.tell()
    try:
        if charge:  # pickles inside strings cost opcodes, not streams
            budget.charge_stream()
        with warnings.catch_warnings():
            # pickletools warns about odd escapes in protocol-0 strings.
            warnings.simplefilter("ignore")
            _Machine(result, budget, depth).run(reader)
    except LimitExceeded as exc:
        result.error = f"scan limit reached: {exc}"
    except RecursionError:
        result.error = "pickle too deeply nested to analyse"
    except MemoryError:
        result.error = "pickle too large to analyse in memory"
    except Exception as exc:  # genops: bad opcode, truncation, bad argument
        text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if "Skipped" in text:
            text = f"a string argument is larger than the {budget.limits.max_arg} byte limit"
        if len(text) > 160:
            text = text[:157] + "..."
        result.error = f"unreadable pickle after byte {reader.tell() - start}: {text}"
    if not result.complete and result.error is None:
        result.error = "pickle ended before STOP"
    if result.end == 0:
        result.end = reader.tell()
