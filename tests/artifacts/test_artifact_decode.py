"""The fast opcode decoder sees exactly what ``pickletools.genops`` sees."""

from __future__ import annotations

import datetime
import io
import pickle
import pickletools
from collections import OrderedDict

import pytest

from torchreview.artifacts import decode
from torchreview.artifacts.base import Budget, Span, SpanReader

OBJECTS = [
    {"a": [1, 2.5, -3, 2**70, -(2**40), None, True, False], "b": ("x", b"y", bytearray(b"z"))},
    [OrderedDict(k=1), {1, 2}, frozenset({3}), complex(1, 2), "ü€" * 3, b"\x00" * 300],
    datetime.datetime(2020, 1, 2, 3, 4, 5),
    ["shared"] * 3,
    list(range(300)),
]


class _Recorder:
    """Stands in for the abstract machine: records (opcode byte, argument, offset)."""

    def __init__(self) -> None:
        self.seen: list = []
        self.budget = Budget()
        self.limits = self.budget.limits
        self.res = type("R", (), {"opcodes": 0})()
        stop = ord(".")
        self.handlers = [self._record(code == stop) for code in range(256)]

    def _record(self, is_stop: bool):
        def handler(machine, arg, offset):
            machine.seen.append((offset, arg))
            return is_stop

        return handler


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
@pytest.mark.parametrize("index", range(len(OBJECTS)))
def test_decoder_matches_genops(protocol, index):
    data = pickle.dumps(OBJECTS[index], protocol=protocol)
    expected = [(pos, arg) for _op, arg, pos in pickletools.genops(io.BytesIO(data))]
    recorder = _Recorder()
    reader = SpanReader(Span(data))
    decode.run(recorder, reader)
    got = [(pos, arg.size if isinstance(arg, decode.LongArg) else arg)
           for pos, arg in recorder.seen]
    want = [(pos, len(arg) if isinstance(arg, (str, bytes)) and len(arg) > 1024 else arg)
            for pos, arg in expected]
    assert got == want
    assert reader.pos == len(data)


@pytest.mark.parametrize("data", [b"\x80\x02", b"\x80\x02X\xff\x00\x00\x00ab", b"\x80\x02\xff.",
                                  b"\x80\x02J\x01\x00", b"\x80\x02\x8a\x05\x01."])
def test_decoder_rejects_truncated_and_unknown(data):
    with pytest.raises(ValueError):
        decode.run(_Recorder(), SpanReader(Span(data)))


@pytest.mark.parametrize("unit", [b"N0", b"(1", b")0", b"\x8c\x03abc0", b"K\x05\x85" + b"0",
                                  b"\x95" + bytes(8), b"(K\x01K\x02t0", b"I-17\n0", b"N20" + b"0"])
def test_padding_is_skipped_in_bulk(unit):
    data = unit * 1000 + b"X"
    assert decode.skip_padding(data, 0, len(data)) == len(unit) * 1000
    mixed = (unit + b"N0" + b"(1") * 300 + b"X"
    assert decode.skip_padding(mixed, 0, len(mixed)) == len(mixed) - 1


@pytest.mark.parametrize("not_padding", [b"N", b"(N0", b"Nq\x010", b"]K\x01a0", b"\x940", b"c"])
def test_units_that_change_the_state_are_not_padding(not_padding):
    assert decode.skip_padding(not_padding + b"N0", 0, len(not_padding) + 2) == 0
