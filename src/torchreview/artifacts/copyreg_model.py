"""What ``copyreg`` lets a pickle do, modelled for the opcode walk in ``opcodes``.

* ``copyreg._reconstructor(cls, base, state)``, ``copyreg.__newobj__(cls, ...)``
  and ``__newobj_ex__`` rebuild an instance of ``cls`` (``base.__init__`` runs
  too when ``base`` is not ``object``): the classes they receive are what is
  instantiated, so those are judged, not the helper;
* ``copyreg.add_extension(module, name, code)`` registers ``module.name`` under
  ``code`` in the loading process; a later ``EXT1/EXT2/EXT4 code`` (in this
  pickle or in the next one of the same file) imports it although it never
  appears as a ``GLOBAL``.  The walk keeps that registry so the call target is
  known; an ``EXT`` code that was never registered in the file is an unknown
  callable;
* ``torch._tensor._rebuild_from_type_v2(func, ...)`` is allowed but calls
  ``func``: that argument is judged as a call;
* a string argument that is itself a pickle (``_codecs.decode`` or ``shelve``
  gadgets feed it to ``pickle.loads``) is walked as a nested pickle.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from torchreview.artifacts.policy import normalise
from torchreview.artifacts.results import Event
from torchreview.artifacts.values import MAX_USES, CallVal, ExtRef, GlobalVal
from torchreview.findings import Severity

if TYPE_CHECKING:  # pragma: no cover
    from torchreview.artifacts.opcodes import GlobalRef, _Machine

REBUILDERS = frozenset({"copyreg._reconstructor", "copyreg.__newobj__", "copyreg.__newobj_ex__"})
ADD_EXTENSION = "copyreg.add_extension"


def _qualname(value: GlobalVal) -> str:
    module, name = normalise(value.module, value.name)
    return f"{module}.{name}"


def on_call(machine: "_Machine", func: GlobalVal, ref: "GlobalRef", args, offset: int) -> bool:
    """Model a call of a copyreg helper; True when the call was fully accounted for here."""
    qualname = _qualname(func)
    if qualname == ADD_EXTENSION:
        if isinstance(args, tuple) and len(args) == 3:
            module, name, code = args
            if isinstance(module, str) and isinstance(name, str) and isinstance(code, int):
                machine.budget.extensions[code] = (module, name)
                ref.uses.insert(0, f"registers {module}.{name} as extension code {code} "
                                f"at byte {offset}")
        return False  # still a function call: judged like any other
    if qualname not in REBUILDERS:
        return False
    classes = args[:1] if isinstance(args, tuple) else ()
    if qualname == "copyreg._reconstructor" and isinstance(args, tuple) and len(args) > 1:
        base = args[1]
        if not (isinstance(base, GlobalVal) and _qualname(base) == "builtins.object"):
            classes = args[:2]  # base.__init__(obj, state) runs as well
    if not classes or not all(isinstance(c, GlobalVal) for c in classes):
        return False  # rebuilding from a computed value: judged as a plain call (critical)
    ref.instantiated = True
    for cls in classes:
        if machine.is_allowed(cls):
            continue
        target = machine.res.refs.get((cls.module, cls.name))
        if target is not None:
            target.instantiated = True
            if len(target.uses) < MAX_USES:
                target.uses.append(f"instantiated through {qualname} at byte {offset}")
    return True


# Allowed rebuild helpers that call one of their arguments: torch's
# ``_rebuild_from_type_v2(func, new_type, args, state)`` runs ``func(*args)``.
# A weights-only load vets ``func``; a full unpickler does not, so the callable
# passed there is judged as if the pickle called it.
CALLS_ARGUMENT = {"torch._tensor._rebuild_from_type_v2": 0}


# Denied helpers that load a nested `torch.save` stream given as their one argument:
# `torch.storage._load_from_bytes(b)` is how plain `pickle` stores a tensor (its
# `__reduce__`), and it runs `torch.load` on `b`. The bytes are walked as a legacy torch
# file (``_Machine.nested_pickle``); when every pickle in them references only what a
# weights-only load allows, the call rebuilds a tensor and nothing else.
LOADS_PAYLOAD = frozenset({"torch.storage._load_from_bytes"})


def vetted_payload_load(func: GlobalVal, args) -> bool:
    """``func(args)`` loads a nested torch stream that was walked and found to be data."""
    from torchreview.artifacts.values import TORCH_PAYLOAD

    return _qualname(func) in LOADS_PAYLOAD and isinstance(args, tuple) and len(args) == 1 and \
        args[0] is TORCH_PAYLOAD


def on_allowed_call(machine: "_Machine", func: GlobalVal, args, offset: int) -> None:
    index = CALLS_ARGUMENT.get(_qualname(func))
    if index is None or not isinstance(args, tuple) or len(args) <= index:
        return
    target = args[index]
    if isinstance(target, GlobalVal) and not machine.is_allowed(target):
        ref = machine.res.refs.get((target.module, target.name))
        if ref is not None:
            ref.called.append(f"REDUCE through {_qualname(func)}")
            if len(ref.uses) < MAX_USES:
                ref.uses.append(f"called by {_qualname(func)} at byte {offset}")
    elif not isinstance(target, GlobalVal):
        if isinstance(target, (CallVal, ExtRef)):
            machine.res.events.append(Event(
                Severity.CRITICAL, offset,
                f"{_qualname(func)} at byte {offset} calls a value made at load time",
            ))


def extension(machine: "_Machine", opcode: str, code, offset: int):
    """The value an EXT opcode pushes: the registered global, or an unknown callable."""
    registered = machine.budget.extensions.get(code)
    if registered is not None:
        value = machine.add_global(registered[0], registered[1], offset, opcode)
        machine.use(value, f"loaded by {opcode} {code} (registered through {ADD_EXTENSION})",
                    offset)
        return value
    machine.res.events.append(
        Event(
            Severity.MEDIUM,
            offset,
            f"{opcode} imports extension code {code} from the loader's copyreg registry at "
            f"byte {offset} (not registered in this file: cannot be resolved statically)",
        )
    )
    return ExtRef(code)


def looks_pickled(arg) -> bool:
    """Does a string or bytes argument start like a protocol 2-5 pickle?"""
    if isinstance(arg, str):
        return len(arg) > 3 and arg[0] == "\x80" and arg[1] in "\x02\x03\x04\x05"
    if isinstance(arg, (bytes, bytearray)):
        return len(arg) > 3 and arg[0] == 0x80 and 2 <= arg[1] <= 5
    return False


# Namespaces of torch's C functions: `getattr(torch._C._VariableFunctionsClass, "sin")` is how a
# pickle stores `torch.sin` (a module attribute set to the function, DDSP's default oscillator):
# the lookup names one torch function, which is judged as that global, not as a getattr call
_TORCH_FUNCTION_NAMESPACES = frozenset({
    "torch._C._VariableFunctionsClass", "torch._C._VariableFunctions", "torch._C._nn", "torch._C._linalg",
    "torch._C._fft", "torch._C._special",
})


# dill pickles a module-level object it cannot name directly (numpy's `_reconstruct` under
# dill's own pickler) as `_get_attr(_import_module("<module>"), "<name>")`: two calls on constants
# that load exactly what a GLOBAL of `<module>.<name>` loads, so the pair is judged as that global
_DILL_IMPORT = frozenset({"dill._dill._import_module", "dill.dill._import_module"})
_DILL_GET_ATTR = frozenset({"dill._dill._get_attr", "dill.dill._get_attr"})


def dill_module_import(func: GlobalVal, args) -> str | None:
    """The module name when ``func(*args)`` is dill's ``_import_module("<dotted name>")``."""
    if _qualname(func) not in _DILL_IMPORT or not (isinstance(args, tuple) and len(args) == 1):
        return None
    name = args[0]
    if not isinstance(name, str) or not all(part.isidentifier() for part in name.split(".")):
        return None
    return name


def dill_attribute_lookup(func: GlobalVal, args) -> tuple[str, str, object] | None:
    """``(module, name, module call)`` when ``func(*args)`` is dill's ``_get_attr(<the result of
    _import_module("<module>")>, "<name>")`` with a public-or-private identifier ``name``."""
    if _qualname(func) not in _DILL_GET_ATTR or not (isinstance(args, tuple) and len(args) == 2):
        return None
    target, attribute = args
    if not (isinstance(target, CallVal) and isinstance(target.func, GlobalVal) and isinstance(attribute, str)) or \
            not attribute.isidentifier() or attribute.startswith("__"):
        return None
    module = dill_module_import(target.func, target.args)
    return (module, attribute, target) if module is not None else None


def torch_function_lookup(func: GlobalVal, args) -> tuple[str, str] | None:
    """``(module, name)`` of the global that ``func(*args)`` names when it is ``getattr(<global>,
    "<name>")`` on constants: ``getattr(<torch C namespace>, "<public name>")`` is that torch
    function; ``getattr(<a class>, "<name>")`` -- how protocol 2 stores a class nested in another
    (a project's ``Task.Name`` enum in its pickled config, judged false as code execution in blind
    test 66) -- is the dotted global ``<module>.<Class>.<name>``, judged as a protocol-4 dotted name
    is (critical attributes anywhere in the walk stay critical). Never a dunder or a private name."""
    from torchreview.artifacts.policy import normalise

    module, name = normalise(func.module, func.name)
    if f"{module}.{name}" != "builtins.getattr" or not (isinstance(args, tuple) and len(args) == 2):
        return None
    target, attribute = args
    if not (isinstance(target, GlobalVal) and isinstance(attribute, str)) or \
            not attribute.isidentifier() or attribute.startswith("_"):
        return None
    if _qualname(target) in _TORCH_FUNCTION_NAMESPACES:
        return _qualname(target), attribute
    owner_module, owner = normalise(target.module, target.name)
    return owner_module, f"{owner}.{attribute}"

