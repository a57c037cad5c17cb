"""Naming parameters and modules the way the user's code does (``model.fc.weight``).

Names come from the modules the user holds in variables (found in the frames
that call ``optimizer.step()``) and from the modules seen at the outermost
level of a forward call.  Modules are held weakly: naming never keeps a model
alive.
"""

from __future__ import annotations

import weakref

from torchreview.runtime._env import is_internal


class Names:
    def __init__(self, torch) -> None:
        self._module_type = torch.nn.Module
        self._roots: dict[int, object] = {}
        self._held: dict[int, tuple[str, object]] = {}
        self._cache: dict[int, str] | None = None

    def note_root(self, module) -> None:
        self._roots[id(module)] = weakref.ref(module)
        self._cache = None

    def scan_frames(self, frame) -> None:
        """Remember modules held in the variables of the user's frames."""
        while frame is not None:
            if not is_internal(frame.f_code.co_filename):
                for var, value in list(frame.f_locals.items()):
                    if isinstance(value, self._module_type) and id(value) not in self._held:
                        self._held[id(value)] = (var, weakref.ref(value))
                        self._cache = None
            frame = frame.f_back

    def param(self, param) -> str:
        if self._cache is None or id(param) not in self._cache:
            names: dict[int, str] = {}
            for var, ref in list(self._held.values()):
                module = ref()
                if module is not None:
                    for name, p in module.named_parameters():
                        names.setdefault(id(p), f"{var}.{name.removeprefix('module.')}")
            for ref in list(self._roots.values()):
                module = ref()
                if module is not None:
                    for name, p in module.named_parameters():
                        names.setdefault(id(p), name.removeprefix("module."))
            self._cache = names
        return self._cache.get(id(param)) or f"<unnamed {tuple(param.shape)}>"

    def module(self, module, default: str) -> str:
        """`model` (Net) when the user holds the module in a variable, else the class."""
        held = self._held.get(id(module)) if module is not None else None
        if held is not None and held[1]() is module:
            return f"`{held[0]}` ({type(module).__name__})"
        return f"`{default}`"
