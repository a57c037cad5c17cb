"""The run's series as TensorBoard scalars (``torchreview run --tensorboard DIR``).

Written once, when the run ends, through ``torch.utils.tensorboard`` (which
needs the ``tensorboard`` package: ``pip install tensorboard``).  Tags live
under ``torchreview/``; each finding becomes a text entry at its step.
"""

from __future__ import annotations

TAGS = {
    "loss": "torchreview/loss",
    "grad_norm": "torchreview/grad_norm",
    "lr": "torchreview/lr",
    "data_wait": "torchreview/step_time/data_wait_ms",
    "forward_backward": "torchreview/step_time/forward_backward_ms",
    "optimizer": "torchreview/step_time/optimizer_ms",
    "other": "torchreview/step_time/other_ms",
    "rss": "torchreview/memory/rss_mb",
    "cuda_allocated": "torchreview/memory/cuda_allocated_mb",
}
_SCALE = {"data_wait": 1000.0, "forward_backward": 1000.0, "optimizer": 1000.0, "other": 1000.0,
          "rss": 1.0 / (1024 * 1024), "cuda_allocated": 1.0 / (1024 * 1024)}


class TensorBoardMissing(RuntimeError):
    pass


def write_scalars(directory: str, runtime: dict) -> int:
    """Write the series to an event file in ``directory``; returns the number of scalars."""
    try:
        import tensorboard  # noqa: F401  (torch.utils.tensorboard imports it lazily)
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:
        raise TensorBoardMissing("the tensorboard package is not installed "
                                 "(pip install tensorboard)") from None
    written = 0
    writer = SummaryWriter(log_dir=directory)
    try:
        for name, tag in TAGS.items():
            series = runtime.get("series", {}).get(name)
            if not series:
                continue
            scale = _SCALE.get(name, 1.0)
            for step, value in zip(series["step"], series["value"]):
                if value is None:
                    continue
                writer.add_scalar(tag, value * scale, global_step=step)
                written += 1
        for marker in runtime.get("markers", []):
            writer.add_text("torchreview/findings",
                            f"**{marker['code']}** ({marker['severity']}) "
                            f"{marker['path']}:{marker['line']}: {marker['message']}",
                            global_step=marker["step"])
    finally:
        writer.close()
    return written
