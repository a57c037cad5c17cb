"""Whether a model behaves the same in train and eval mode (shared by rules that ask
whether `.eval()`/`.train()` makes any difference). The answer is the engine's
model-content fact (engine/module_modes.py, ``ctx.module_modes``): classes of this
file and of the project's other modules, followed through their submodules, with
the dropout rates their construction passes."""

from __future__ import annotations

import ast


def mode_free_model(ctx, receiver: ast.AST) -> bool:
    """Every value the model may hold is built from a class of the project (or an
    `nn.Sequential`, a library layer) made only of layers that behave the same in
    train and eval mode: `.eval()` would change nothing, so its absence is no bug.
    A model the function receives as a parameter is judged by what its callers
    pass (this file, other project files and notebooks, two caller levels): mode-free
    when every call site passes a mode-free module. A module a class keeps in
    `self.model` is judged the same way when the class only ever stores there what
    its constructor is handed: by what every construction of the class passes
    (`Trainer(model, ...)` in train.py)."""
    if receiver is None:
        return False
    if ctx.module_modes.content_of(receiver) == "free":
        return True
    param = ctx.call_paths.parameter_of(receiver)
    if param is not None:
        return ctx.call_paths.callers_pass_free(*param)
    if isinstance(receiver, ast.Attribute) and isinstance(receiver.value, ast.Name) and receiver.value.id == "self":
        cls = ctx.enclosing_class(receiver)
        return cls is not None and ctx.call_paths.attribute_free(cls, receiver.attr)
    return False
