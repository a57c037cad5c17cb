"""What the opcode walk finds in one pickle stream (see ``opcodes``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from torchreview.findings import Severity


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
    # calls whose argument was a vetted payload (``copyreg_model.LOADS_PAYLOAD``): data, not code
    vetted: int = 0

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
