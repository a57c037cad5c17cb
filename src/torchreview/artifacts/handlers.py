"""The opcode handlers of the abstract pickle machine, and their dispatch table.

``decode.run`` calls ``table[opcode byte](machine, argument, offset)``; a handler
mirrors what the unpickler does to its stack, mark stack and memo, with the
abstract values of ``values``, and returns True at ``STOP``.  The machine's
core (stack, globals, calls) is ``opcodes._Machine``.
"""

from __future__ import annotations

import pickletools

from torchreview.artifacts import copyreg_model, joblib_arrays
from torchreview.artifacts.decode import LongArg
from torchreview.artifacts.results import Event
from torchreview.artifacts.values import (
    BYTES,
    CONTAINER,
    LONG_TEXT,
    MAX_TEXT,
    MAX_TUPLE,
    MISSING,
    PERSISTENT,
    TORCH_PAYLOAD,
    UNKNOWN,
    CallVal,
    GlobalVal,
)
from torchreview.findings import Severity

MAX_NESTED = 3  # pickles inside strings inside pickles, walked this deep

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


class OpcodeHandlers:
    """Mixin of ``opcodes._Machine``: one method per opcode family."""

    def op_text(self, arg, pos: int) -> None:
        # a Python 2 `str` is bytes: a whole legacy torch.save stream of data only in one
        # (`torch.storage._load_from_bytes(<BINSTRING>)`, how a Python 2 pickle stores a tensor:
        # DyGIS' graph lists) is the same payload as in BINBYTES (TORCH_PAYLOAD)
        if isinstance(arg, LongArg):
            payload = arg.offset >= 0 and self.depth < MAX_NESTED and self.nested_pickle(arg, pos)
            self.stack.append(TORCH_PAYLOAD if payload else LONG_TEXT)
            return
        if self.depth < MAX_NESTED and copyreg_model.looks_pickled(arg) and self.nested_pickle(arg, pos):
            self.stack.append(TORCH_PAYLOAD)
            return
        if len(arg) > MAX_TEXT:  # protocol-0 strings come whole from their line
            self.stack.append(LONG_TEXT)
        else:
            self.stack.append(arg.decode("latin-1") if isinstance(arg, bytes) else arg)

    def op_bytes(self, arg, pos: int) -> None:
        payload = False  # a whole legacy torch.save stream of data only (TORCH_PAYLOAD)
        if self.depth < MAX_NESTED:
            if isinstance(arg, LongArg):
                if arg.offset >= 0:
                    payload = self.nested_pickle(arg, pos)
            elif copyreg_model.looks_pickled(arg):
                payload = self.nested_pickle(arg, pos)
        self.stack.append(TORCH_PAYLOAD if payload else BYTES)

    def op_get(self, arg, pos: int) -> None:
        value = self.memo.get(arg, MISSING)
        if value is MISSING:
            self.malformed(pos, f"memo entry {arg} read before it was written")
            value = UNKNOWN
        self.stack.append(value)

    def op_put(self, arg, pos: int) -> None:
        self.put(arg, pos)

    def op_memoize(self, arg, pos: int) -> None:
        self.put(len(self.memo), pos)

    def op_int(self, arg, pos: int) -> None:
        self.stack.append(arg if isinstance(arg, int) else UNKNOWN)

    def op_mark(self, arg, pos: int) -> None:
        self.mark()

    def op_tuple_n(self, n: int, pos: int) -> None:
        items = tuple(self.pop(pos) for _ in range(n))[::-1]
        self.stack.append(items)

    def op_tuple(self, arg, pos: int) -> None:
        items = self.pop_mark(pos)
        self.stack.append(tuple(items) if len(items) <= MAX_TUPLE else CONTAINER)

    def op_empty(self, value, pos: int) -> None:
        if value == "EMPTY_DICT":
            self.stack.append({} if self.joblib else CONTAINER)
        else:
            self.stack.append(CONTAINER)

    def op_setitem(self, n: int, pos: int) -> None:
        stack = self.stack
        if len(stack) > n and not isinstance(stack[-1 - n], dict):
            del stack[-n:]  # into an opaque container: nothing to keep
            return
        items = [self.pop(pos) for _ in range(n)][::-1]
        self.fill(self.top(pos), items)

    def op_mark_update(self, fill: bool, pos: int) -> None:
        items = self.pop_mark(pos)
        if fill:
            self.fill(self.top(pos), items)

    def op_mark_container(self, arg, pos: int) -> None:
        self.pop_mark(pos)
        self.stack.append(CONTAINER)

    def op_unknown(self, arg, pos: int) -> None:
        self.stack.append(UNKNOWN)

    def op_global(self, arg, pos: int) -> None:
        module, _, gname = str(arg).partition(" ")
        self.stack.append(self.add_global(module, gname, pos, "GLOBAL"))

    def op_stack_global(self, arg, pos: int) -> None:
        self.stack_global(pos)

    def op_reduce(self, arg, pos: int) -> None:
        args = self.pop(pos)
        func = self.pop(pos)
        self.stack.append(self.call(func, args, "REDUCE", pos))

    def op_build(self, arg, pos: int) -> None:
        state = self.pop(pos)
        target = self.top(pos)
        if self.joblib and isinstance(state, dict) and joblib_arrays.is_wrapper(target):
            self.joblib_array(state)
        elif isinstance(target, CallVal) and isinstance(target.func, GlobalVal):
            ref = self.res.refs.get((target.func.module, target.func.name))
            if ref is not None:
                ref.built = True
            if target.func.qualname == "functools.partial":
                # `partial.__setstate__((func, args, kwds, dict))`: the state names the function the
                # partial calls (kept so that a call of the partial is judged as a call of it)
                self.partial_states[id(target)] = (target, state)
        elif isinstance(target, GlobalVal):
            self.use(target, "state written onto it by BUILD", pos)
            self.res.events.append(
                Event(
                    Severity.CRITICAL,
                    pos,
                    f"BUILD writes attributes onto the imported object "
                    f"{target.qualname} at byte {pos} (monkey-patching at load time)",
                )
            )

    def op_newobj(self, name: str, pos: int) -> None:
        if name == "NEWOBJ_EX":
            self.pop(pos)
        args = self.pop(pos)
        cls = self.pop(pos)
        self.stack.append(self.call(cls, args, name, pos))

    def op_inst(self, arg, pos: int) -> None:
        module, _, gname = str(arg).partition(" ")
        args = tuple(self.pop_mark(pos))[:MAX_TUPLE]
        cls = self.add_global(module, gname, pos, "INST")
        self.stack.append(self.call(cls, args, "INST", pos))

    def op_obj(self, arg, pos: int) -> None:
        items = self.pop_mark(pos)
        if not items:
            self.malformed(pos, "OBJ without a class")
            self.stack.append(UNKNOWN)
        else:
            self.stack.append(self.call(items[0], tuple(items[1:MAX_TUPLE]), "OBJ", pos))

    def op_pop(self, arg, pos: int) -> None:
        if self.stack:
            self.stack.pop()
        else:
            self.pop_mark(pos)

    def op_dup(self, arg, pos: int) -> None:
        self.stack.append(self.top(pos))

    def op_persid(self, arg, pos: int) -> None:
        self.stack.append(PERSISTENT)

    def op_binpersid(self, arg, pos: int) -> None:
        self.pop(pos)
        self.stack.append(PERSISTENT)

    def op_ext(self, name_arg, pos: int) -> None:
        name, arg = name_arg
        self.stack.append(copyreg_model.extension(self, name, arg, pos))

    def op_stop(self, arg, pos: int) -> bool:
        res = self.res
        res.result = self.pop(pos)
        res.end = self.reader.tell()
        res.complete = True
        if self.metastack:
            self.malformed(pos, "STOP inside an unfinished MARK")
        return True

    def op_noop(self, arg, pos: int) -> None:
        pass


def _bind(method, fixed):
    return lambda machine, arg, pos: method(machine, fixed, pos)


def _push(value):
    return lambda machine, arg, pos: machine.stack.append(value)


def _ext(name: str):
    return lambda machine, arg, pos: machine.op_ext((name, arg), pos)


def _unsupported(name: str):
    return lambda machine, arg, pos: machine.malformed(pos, f"unsupported opcode {name}")


def build_table(m) -> list:
    """The 256-entry dispatch table of ``decode.run`` for machine class ``m``."""
    by_name = {
        "MARK": m.op_mark, "TUPLE": m.op_tuple, "GLOBAL": m.op_global, "INST": m.op_inst,
        "STACK_GLOBAL": m.op_stack_global, "REDUCE": m.op_reduce, "BUILD": m.op_build,
        "OBJ": m.op_obj, "POP": m.op_pop, "DUP": m.op_dup, "PERSID": m.op_persid,
        "BINPERSID": m.op_binpersid, "STOP": m.op_stop, "MEMOIZE": m.op_memoize,
        "APPEND": _bind(m.op_setitem, 1), "SETITEM": _bind(m.op_setitem, 2),
        "POP_MARK": _bind(m.op_mark_update, False),
    }  # fmt: skip
    groups = {
        m.op_text: _TEXT_OPS, m.op_bytes: _BYTES_OPS, m.op_get: _GETS, m.op_put: _PUTS,
        m.op_int: _INT_OPS, m.op_mark_container: _MARK_CONTAINERS, m.op_unknown: _SCALAR_OPS,
        m.op_noop: _NOOPS,
    }  # fmt: skip
    for handler, names in groups.items():
        by_name.update(dict.fromkeys(names, handler))
    for name in ("TUPLE1", "TUPLE2", "TUPLE3"):
        by_name[name] = _bind(m.op_tuple_n, int(name[-1]))
    for name in _EMPTY_CONTAINERS:
        by_name[name] = _bind(m.op_empty, name)
    for name in ("APPENDS", "SETITEMS", "ADDITEMS"):
        by_name[name] = _bind(m.op_mark_update, True)
    for name in ("NEWOBJ", "NEWOBJ_EX"):
        by_name[name] = _bind(m.op_newobj, name)
    for name in ("EXT1", "EXT2", "EXT4"):
        by_name[name] = _ext(name)
    for name, value in _CONST.items():
        by_name[name] = _push(value)
    table: list = [None] * 256
    for op in pickletools.opcodes:
        table[ord(op.code)] = by_name.get(op.name) or _unsupported(op.name)
    return table
