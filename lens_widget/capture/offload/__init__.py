"""`offload=` / `memory_budget=`: saved values past a budget to disk while the pass runs
(`Offload`, a Feature), written by a thread into safetensors shards."""

from lens_widget.capture.offload.offload import Offload, OffloadError

__all__ = ["Offload", "OffloadError"]
