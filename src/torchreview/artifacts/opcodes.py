"""Walk one pickle stream with ``pickletools.genops`` and find every global.

Nothing is unpickled.  A small abstract machine mirrors the unpickler's stack,
mark stack and memo closely enough to know

* every global a stream imports (``GLOBAL``, ``INST``, and ``STACK_GLOBAL``
  whose names may come from the memo through ``GET``/``BINGET``/...);
* what each global is used for (called by ``REDUCE``, instantiated by
  ``NEWOBJ``/``OBJ``/``INST``, or the target of ``BUILD``);
* tricks a plain opcode listing misses: a ``STACK_GLOBAL`` whose name is
  computed at load time, ``BUILD`` writing attributes onto an imported global,
  calls of the result of another call (``getattr(...)(...)`` chains).

The values on the abstract stack are described in ``values``.
"""

from __future__ import annotations

import pickletools
import warnings
from dataclasses import dataclass, field

from torchreview.artifacts import copyreg_model, joblib_arrays
from torchreview.artifacts.base import Budget, BudgetExceeded, LimitExceeded, Span, SpanReader
from torchreview.artifacts.policy import CONTEXT_TORCH, classify
from torchreview.artifacts.values import (
    BYTES,
    CONTAINER,
    INSTANCE,
    LONG_TEXT,
    MAX_TEXT,
    MAX_TUPLE,
    MAX_USES,
    MISSING,
    PERSISTENT,
    UNKNOWN,
    CallVal,
    ExtRef,
    GlobalVal,
    describe,
)
from torchreview.findings import Severity

MAX_NESTED = 3  # pickles inside strings inside pickles, walked this deep

@dataclass
class GlobalRef:
    module: str
    name: str
    offset: int
    opcode: str
    count: int = 1
    uses: list[str] = field(default_factory=list)
    called: list[str] = field(default_factory=list)  # opcodes that call it (REDUCE, INST...)
    instantiated: bool = False  # NEWOBJ, or rebuilt through copyreg: must be a class
    built: bool = False  # BUILD ran on an instance of it (its __setstate__, if any)

    @property
    def qualname(self) -> str:
        return f"{self.module}.{self.name}"


@dataclass
class Event:
    """Something suspicious that is not a plain global reference."""

    severity: Severity
    offset: int
    text: str


@dataclass
class StreamResult:
    location: str
    context: str
    refs: dict[tuple[str, str], GlobalRef] = field(default_factory=dict)
    events: list[Event] = field(default_factory=list)
    error: str | None = None
    complete: bool = False
    end: int = 0
    result: object = None
    opcodes: int = 0
    nested: list["StreamResult"] = field(default_factory=list)  # pickles inside strings


_TEXT_OPS = frozenset(
    "STRING BINSTRING SHORT_BINSTRING UNICODE BINUNICODE SHORT_BINUNICODE BINUNICODE8".split()
)
_INT_OPS = frozenset("INT BININT BININT1 BININT2 LONG LONG1 LONG4".split())
_BYTES_OPS = frozenset("BINBYTES SHORT_BINBYTES BINBYTES8 BYTEARRAY8".split())
_SCALAR_OPS = frozenset("FLOAT BINFLOAT NEXT_BUFFER".split())
_CONST = {"NONE": None, "NEWTRUE": True, "NEWFALSE": False, "EMPTY_TUPLE": ()}
_EMPTY_CONTAINERS = frozenset("EMPTY_LIST EMPTY_DICT EMPTY_SET".split())
_MARK_CONTAINERS = frozenset("LIST DICT FROZENSET".split())
_MARK_UPDATES = frozenset("APPENDS SETITEMS ADDITEMS POP_MARK".split())
_GETS = frozenset("GET BINGET LONG_BINGET".split())
_PUTS = frozenset("PUT BINPUT LONG_BINPUT".split())
_NOOPS = frozenset("PROTO FRAME READONLY_BUFFER".split())


class _Machine:
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
                return INSTANCE
            shown = CallVal(func, args)
            ref = self.res.refs.get((func.module, func.name))
            if ref is not None and not copyreg_model.on_call(self, func, ref, args, offset):
                if opcode.startswith("NEWOBJ"):
                    ref.instantiated = True
                else:
                    ref.called.append(opcode)
            self.use(func, f"{verb} {opcode} as {describe(shown)}", offset)
            return shown
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

    # -- the loop ------------------------------------------------------------
    def run(self, reader: SpanReader) -> None:
        self.reader = reader
        budget = self.budget
        max_ops = self.limits.max_opcodes
        res = self.res
        stack = None  # rebound through self.stack (MARK swaps it)
        for op, arg, pos in pickletools.genops(reader):
            budget.opcodes += 1
            res.opcodes += 1
            if budget.opcodes > max_ops:
                budget.exhausted = True
                raise BudgetExceeded(f"more than {max_ops} pickle opcodes in one file")
            name = op.name
            stack = self.stack
            if name in _TEXT_OPS or name in _BYTES_OPS:
                if self.depth < MAX_NESTED and copyreg_model.looks_pickled(arg):
                    self.nested_pickle(arg, pos)
                if name in _BYTES_OPS:
                    stack.append(BYTES)
                elif isinstance(arg, (str, bytes)) and len(arg) <= MAX_TEXT:
                    stack.append(arg.decode("latin-1") if isinstance(arg, bytes) else arg)
                else:
                    stack.append(LONG_TEXT)
            elif name in _GETS:
                value = self.memo.get(arg, MISSING)
                if value is MISSING:
                    self.malformed(pos, f"memo entry {arg} read before it was written")
                    value = UNKNOWN
                stack.append(value)
            elif name in _PUTS:
                self.put(arg, pos)
            elif name == "MEMOIZE":
                self.put(len(self.memo), pos)
            elif name in _INT_OPS:
                stack.append(arg if isinstance(arg, int) else UNKNOWN)
            elif name == "MARK":
                self.mark()
            elif name in ("TUPLE1", "TUPLE2", "TUPLE3"):
                n = int(name[-1])
                items = tuple(self.pop(pos) for _ in range(n))[::-1]
                self.stack.append(items)
            elif name == "TUPLE":
                items = self.pop_mark(pos)
                self.stack.append(tuple(items) if len(items) <= MAX_TUPLE else CONTAINER)
            elif name in _CONST:
                stack.append(_CONST[name])
            elif name in _EMPTY_CONTAINERS:
                stack.append({} if self.joblib and name == "EMPTY_DICT" else CONTAINER)
            elif name in ("APPEND", "SETITEM"):
                items = [self.pop(pos) for _ in range(1 if name == "APPEND" else 2)][::-1]
                self.fill(self.top(pos), items)
            elif name in _MARK_UPDATES:
                items = self.pop_mark(pos)
                if name != "POP_MARK":
                    self.fill(self.top(pos), items)
            elif name in _MARK_CONTAINERS:
                self.pop_mark(pos)
                self.stack.append(CONTAINER)
            elif name in _SCALAR_OPS:
                stack.append(UNKNOWN)
            elif name == "GLOBAL":
                module, _, gname = str(arg).partition(" ")
                stack.append(self.add_global(module, gname, pos, "GLOBAL"))
            elif name == "STACK_GLOBAL":
                self.stack_global(pos)
            elif name == "REDUCE":
                args = self.pop(pos)
                func = self.pop(pos)
                self.stack.append(self.call(func, args, "REDUCE", pos))
            elif name == "BUILD":
                state = self.pop(pos)
                target = self.top(pos)
                if self.joblib and isinstance(state, dict) and joblib_arrays.is_wrapper(target):
                    self.joblib_array(state)
                elif isinstance(target, CallVal) and isinstance(target.func, GlobalVal):
                    ref = res.refs.get((target.func.module, target.func.name))
                    if ref is not None:
                        ref.built = True
                elif isinstance(target, GlobalVal):
                    self.use(target, "state written onto it by BUILD", pos)
                    res.events.append(
                        Event(
                            Severity.CRITICAL,
                            pos,
                            f"BUILD writes attributes onto the imported object "
                            f"{target.qualname} at byte {pos} (monkey-patching at load time)",
                        )
                    )
            elif name in ("NEWOBJ", "NEWOBJ_EX"):
                if name == "NEWOBJ_EX":
                    self.pop(pos)
                args = self.pop(pos)
                cls = self.pop(pos)
                self.stack.append(self.call(cls, args, name, pos))
            elif name == "INST":
                module, _, gname = str(arg).partition(" ")
                args = tuple(self.pop_mark(pos))[:MAX_TUPLE]
                cls = self.add_global(module, gname, pos, "INST")
                self.stack.append(self.call(cls, args, "INST", pos))
            elif name == "OBJ":
                items = self.pop_mark(pos)
                if not items:
                    self.malformed(pos, "OBJ without a class")
                    self.stack.append(UNKNOWN)
                else:
                    self.stack.append(self.call(items[0], tuple(items[1:MAX_TUPLE]), "OBJ", pos))
            elif name == "POP":
                if self.stack:
                    self.stack.pop()
                else:
                    self.pop_mark(pos)
            elif name == "DUP":
                stack.append(self.top(pos))
            elif name == "PERSID":
                stack.append(PERSISTENT)
            elif name == "BINPERSID":
                self.pop(pos)
                self.stack.append(PERSISTENT)
            elif name in ("EXT1", "EXT2", "EXT4"):
                stack.append(copyreg_model.extension(self, name, arg, pos))
            elif name == "STOP":
                res.result = self.pop(pos)
                res.end = reader.tell()
                res.complete = True
                if self.metastack:
                    self.malformed(pos, "STOP inside an unfinished MARK")
                return
            elif name in _NOOPS:
                pass
            else:  # an opcode pickletools knows and we do not model: stay safe
                self.malformed(pos, f"unsupported opcode {name}")
        # genops returns only after STOP, or raises.

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

    def nested_pickle(self, arg, pos: int) -> None:
        """A string that is itself a pickle (fed to ``pickle.loads`` by a gadget): walk it too."""
        data = arg.encode("latin-1", "replace") if isinstance(arg, str) else bytes(arg)
        inner = StreamResult(
            location=f"pickle inside a string at byte {pos}",  # under the outer location
            context=self.res.context,
        )
        reader = SpanReader(Span(data), self.limits)
        _walk(inner, reader, self.budget, self.depth + 1)
        if inner.refs or inner.events or inner.nested:
            self.res.nested.append(inner)

    def put(self, index, pos: int) -> None:
        if not isinstance(index, int) or index < 0:
            self.malformed(pos, f"bad memo index {index!r}")
            return
        if index not in self.memo and len(self.memo) >= self.limits.max_memo:
            raise LimitExceeded(f"more than {self.limits.max_memo} memo entries")
        self.memo[index] = self.top(pos)


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


def _walk(result: StreamResult, reader: SpanReader, budget: Budget, depth: int) -> None:
    start = reader.tell()
    try:
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
