"""torchreview: a reviewer for PyTorch code, checkpoints and training runs.

Kept tiny on purpose: ``import torchreview`` and ``torchreview --version`` must
stay fast, so everything heavy is imported lazily.
"""

__version__ = "0.1.0"
__all__ = ["__version__", "watch"]


def watch(*args, **kwargs):
    """Review a training run from inside Python (see :mod:`torchreview.runtime`)."""
    from torchreview.runtime import watch as _watch

    return _watch(*args, **kwargs)
