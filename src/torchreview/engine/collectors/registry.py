"""How a fact is collected: one function per ``FileFacts`` field, registered with
``@collects("<field>")``. A collector reads the file's context and returns the
field's value; it never writes to the facts or reads another fact, so collectors
run in any order and each can be tested alone.

``CallNames`` gives every collector the file's called names, computed once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:  # pragma: no cover
    from torchreview.engine.context import FileContext

Collector = Callable[["FileContext", "CallNames"], Any]

# field name -> the function that computes it
COLLECTORS: dict[str, Collector] = {}


def collects(field_name: str) -> Callable[[Collector], Collector]:
    """Register the decorated function as the collector of ``FileFacts.<field_name>``."""

    def register(func: Collector) -> Collector:
        if field_name in COLLECTORS:
            raise ValueError(f"two collectors for the fact {field_name!r}")
        COLLECTORS[field_name] = func
        return func

    return register


class CallNames:
    """The qualified names a file calls, the method names it calls (``x.half()``:
    ``half``) and the keyword names its calls are given (``device=``), each computed
    once for all collectors: a collector whose answer needs one of them asks these
    first and skips its pass over the calls in a file that has none."""

    def __init__(self, ctx: "FileContext") -> None:
        m = ctx.model
        self.names = m.called_qualnames
        self.attrs = m.called_methods
        # every keyword of the file (a class statement's too: ``metaclass=``): a superset of
        # the calls' keywords, from the model's one walk
        self.keywords = m.keyword_names

    def any_of(self, exact: frozenset[str] = frozenset(), prefixes: tuple[str, ...] = ()) -> bool:
        """A call of one of the ``exact`` qualified names, or of a name under one of the
        ``prefixes`` (each ending in ".": ``"wandb."`` is every ``wandb`` function)."""
        if not self.names.isdisjoint(exact):
            return True
        return bool(prefixes) and any(q.startswith(prefixes) for q in self.names)

    def any_method(self, attrs: frozenset[str]) -> bool:
        """A call of a method (``x.<attr>(...)``) of one of these names."""
        return not self.attrs.isdisjoint(attrs)

    def any_keyword(self, names: frozenset[str]) -> bool:
        """Some call may be given a keyword argument of one of these names (``device=``);
        False: no call is."""
        return not self.keywords.isdisjoint(names)
