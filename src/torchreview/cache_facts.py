"""FileFacts in a cache entry: written and read back by each field's declared type.

Every field of ``FileFacts`` (engine/facts.py) is serialised from its annotation,
so a new fact needs no edit here: ``str``, ``bool``, ``int`` (never negative),
``X | None``, ``tuple[X, ...]``, ``dict[str, X]`` and frozen dataclasses such as
``Anchor`` or ``Download`` (a list of their fields, in order). Reading back is
strict: every field present, nothing else, each value of its exact type, or
``FactsError`` -- the cache then treats the entry as a miss.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from functools import lru_cache
from typing import Any, Callable

from torchreview.engine.facts import FileFacts


class FactsError(ValueError):
    """A cached facts value does not have the shape of its field."""


Codec = tuple[Callable[[Any], Any], Callable[[Any], Any]]


def _scalar(kind: type) -> Codec:
    def decode(value):
        if type(value) is not kind or (kind is int and value < 0):
            raise FactsError(f"expected {kind.__name__}, got {type(value).__name__}")
        return value
    return (lambda value: value), decode


def _optional(inner: Codec) -> Codec:
    encode, decode = inner
    return (lambda value: None if value is None else encode(value)), \
        (lambda value: None if value is None else decode(value))


def _tuple(inner: Codec) -> Codec:
    encode, decode = inner

    def decode_all(value):
        if type(value) is not list:
            raise FactsError("expected a list")
        return tuple(decode(v) for v in value)
    return (lambda value: [encode(v) for v in value]), decode_all


def _mapping(inner: Codec) -> Codec:
    encode, decode = inner

    def decode_all(value):
        if type(value) is not dict or not all(type(k) is str for k in value):
            raise FactsError("expected an object")
        return {k: decode(v) for k, v in value.items()}
    return (lambda value: {k: encode(v) for k, v in value.items()}), decode_all


def _record(cls: type) -> Codec:
    names = [f.name for f in dataclasses.fields(cls)]
    hints = typing.get_type_hints(cls)
    codecs = [codec_for(hints[name]) for name in names]

    def decode(value):
        if type(value) is not list or len(value) != len(names):
            raise FactsError(f"expected a {cls.__name__} of {len(names)} fields")
        return cls(*(dec(v) for (_, dec), v in zip(codecs, value)))
    return (lambda value: [enc(getattr(value, n)) for (enc, _), n in zip(codecs, names)]), decode


@lru_cache(maxsize=None)
def codec_for(hint: Any) -> Codec:
    """How a value of the annotated type ``hint`` is written and strictly read back."""
    if hint in (str, bool, int):
        return _scalar(hint)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (types.UnionType, typing.Union) and len(args) == 2 and type(None) in args:
        return _optional(codec_for(next(a for a in args if a is not type(None))))
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return _tuple(codec_for(args[0]))
    if origin is dict and args[0] is str:
        return _mapping(codec_for(args[1]))
    if dataclasses.is_dataclass(hint) and hint.__dataclass_params__.frozen:
        return _record(hint)
    raise TypeError(f"a fact of type {hint!r} cannot be cached: use str, bool, int, X | None, "
                    "tuple[X, ...], dict[str, X] or a frozen dataclass of those")


@lru_cache(maxsize=1)
def _fields() -> tuple[tuple[str, Codec], ...]:
    hints = typing.get_type_hints(FileFacts)
    return tuple((f.name, codec_for(hints[f.name])) for f in dataclasses.fields(FileFacts))


def facts_to_json(facts: FileFacts) -> dict:
    return {name: encode(getattr(facts, name)) for name, (encode, _) in _fields()}


def facts_from_json(data: Any) -> FileFacts:
    """The FileFacts written by ``facts_to_json``; ``FactsError`` for anything else."""
    fields = _fields()
    if type(data) is not dict or set(data) != {name for name, _ in fields}:
        raise FactsError("not the fields of FileFacts")
    return FileFacts(**{name: decode(data[name]) for name, (_, decode) in fields})
