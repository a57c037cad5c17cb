"""Keeping the reviewed script's behaviour: exits, exception hooks, torch.compile.

* ``os._exit`` ends the process without atexit handlers, so a script ending
  with it would leave no report: while a review is active, ``os._exit`` first
  writes the findings so far (or says in one line that it could not), then
  exits with the script's status. Forked children (DataLoader workers,
  multiprocessing) inherit the wrapper but pass straight through.
* An uncaught exception goes to the script's own ``sys.excepthook`` when it set
  one, exactly as ``python SCRIPT`` would do.
* ``torch.compile(module)`` returns a wrapper module that calls the original
  one: global module hooks see two calls per forward, and torch warns about it.
  The review's hooks take the wrapper's call as the call of the module it
  wraps (the one call seen outside the compiled graph) and ignore the nested
  call of that same module, so each forward is reviewed once; torch's warning
  is only kept for the script's own global hooks.
"""

from __future__ import annotations

import os
import sys
import traceback

# The module-hook registries of torch.nn.modules.module that make
# ``_has_any_global_hook()`` true.
_GLOBAL_HOOK_DICTS = ("_global_backward_pre_hooks", "_global_backward_hooks", "_global_forward_pre_hooks",
                      "_global_forward_hooks", "_global_forward_hooks_always_called",
                      "_global_forward_hooks_with_kwargs")


def install(watcher, module_hooks) -> None:
    """Patch ``os._exit`` and torch's global-hook test for the life of ``watcher``
    (the watcher's ``_restore`` undoes both)."""
    _guard_os_exit(watcher)
    if callable(getattr(module_hooks, "_has_any_global_hook", None)):
        ours = {handle.id for handle in watcher._handles if hasattr(handle, "id")}

        def has_foreign_global_hook() -> bool:
            return any(key not in ours for name in _GLOBAL_HOOK_DICTS
                       for key in list(getattr(module_hooks, name, None) or ()))

        watcher.patch(module_hooks, "_has_any_global_hook", has_foreign_global_hook)


def _guard_os_exit(watcher) -> None:
    pid = os.getpid()
    original = os._exit

    def _exit(*args, **kwargs):
        if os.getpid() == pid and watcher.active:
            status = args[0] if args else kwargs.get("status", 0)
            flush_before_exit(watcher, status)
        original(*args, **kwargs)

    _exit.__doc__ = original.__doc__
    watcher.patch(os, "_exit", _exit)
    posix = sys.modules.get(os.name)  # ``posix._exit`` / ``nt._exit``: the same function
    if posix is not None and getattr(posix, "_exit", None) is original:
        watcher.patch(posix, "_exit", _exit)


def flush_before_exit(watcher, status) -> None:
    """Write the report of a script that is about to end with ``os._exit``."""
    try:
        watcher.notes.append(f"the script ended with os._exit({status!r}): findings up to that point")
        watcher.stop()
    except BaseException as exc:  # never keep the script from exiting
        try:
            sys.stderr.write(f"torchreview: the script ended with os._exit({status!r}); no runtime report "
                             f"could be written ({type(exc).__name__}: {exc})\n")
            sys.stderr.flush()
        except (OSError, ValueError):
            pass


def is_compile_wrapper(cls: type, cache: dict) -> bool:
    """Whether ``cls`` is torch.compile's wrapper module (``OptimizedModule``)."""
    known = cache.get(cls)
    if known is None:
        known = cache[cls] = (cls.__name__ == "OptimizedModule"
                              and cls.__module__.startswith("torch._dynamo"))
    return known


def script_traceback(exc: BaseException, script: str):
    """The traceback from the script's first frame on, as ``python SCRIPT`` shows it."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != script:
        tb = tb.tb_next
    return tb


def report_uncaught(exc: BaseException, script: str) -> None:
    """Show an uncaught exception as Python would: through the script's own
    ``sys.excepthook`` when it installed one, else the standard traceback."""
    hook = sys.excepthook
    tb = script_traceback(exc, script)
    if hook is sys.__excepthook__:
        _print_standard(exc, tb)
        return
    try:
        hook(type(exc), exc, tb or exc.__traceback__)
    except BaseException as err:  # as Python does when the hook itself fails
        sys.stderr.write("Error in sys.excepthook:\n")
        traceback.print_exception(type(err), err, err.__traceback__)
        sys.stderr.write("\nOriginal exception was:\n")
        _print_standard(exc, tb)


def _print_standard(exc: BaseException, tb) -> None:
    if tb is None and isinstance(exc, SyntaxError):  # the script did not even compile
        sys.stderr.write("".join(traceback.format_exception_only(type(exc), exc)))
        return
    traceback.print_exception(type(exc), exc, tb or exc.__traceback__)
