"""torchreview: a reviewer for PyTorch code, checkpoints and training runs.

Kept tiny on purpose: ``import torchreview`` and ``torchreview --version`` must
stay fast, so everything heavy is imported lazily.
"""

from torchreview.version import __version__
__all__ = ["__version__", "watch"]


def __getattr__(name):
    """``torchreview.watch`` is :func:`torchreview.runtime.watch` itself (its real
    signature and docs for ``help()``), imported on first use (torch is not)."""
    if name == "watch":
        from torchreview.runtime import watch

        globals()["watch"] = watch
        return watch
    raise AttributeError(f"module 'torchreview' has no attribute {name!r}")
