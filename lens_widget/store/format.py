"""The saved-log format: its name, version, file names and its one error type.

docs/log-format.md describes every field; schema.py checks them.
"""

from __future__ import annotations

FORMAT_NAME = "lens_widget.log"
# Bumped when a reader of the previous version could misread a file or refuse it for an
# unknown field. Readers refuse newer versions and read every older one. Version 2 adds a
# traced backward (leaves, passes, the autograd graph) and each replay's autocast; version 3
# values in more files than tensors.safetensors (`tensor_files`: an offloaded trace's shards);
# version 4 `distributed` (rank, world size, collectives, placements, engine calls). A log
# without what a version adds is written as the version before (DISTRIBUTED_VERSION's field
# is the only one written conditionally): readers of version 3 still open every log made
# outside torch.distributed. Version 5 each op's `function` (the helper of the model's code it
# ran in), written only where an op has one: a log without any is written as before. Version 6
# each op's `nested_shapes` (outputs that were nested tensors, saved padded) and the log's
# `notes` (what the trace could not run as an untraced forward), written only where present.
# Version 7 `in_transform` beside `unavailable` in a replay (an op inside a torch.func
# transform that a loaded log cannot call), written only where present.
FORMAT_VERSION = 7
DISTRIBUTED_VERSION = 4
FUNCTION_VERSION = 5
NESTED_VERSION = 6
TRANSFORM_NOTE_VERSION = 7
JSON_FILE = "log.json"
TENSOR_FILE = "tensors.safetensors"


class LogFormatError(ValueError):
    """A saved log that cannot be read: truncated, tampered, foreign or from a newer version.

    The message names the file (and the field) and what is wrong with it.
    """


def fail(where: str, problem: str) -> LogFormatError:
    return LogFormatError(f"{where}: {problem}")
