"""A monitor's history on disk (``mon.save(path)``, ``lw.load_monitor(path)``): columnar,
no pickle (docs/log-format.md#monitor-files).

    monitor.json         settings, the op index of each distinct graph, one entry per step
    stats.safetensors    per step, float64 (ops x statistics): a<step> (activations),
                         g<step> (gradients)
    kept/step-<n>/       each kept step's ModelLog, as log.save writes it
    structure/           the graph: the first traced step's log without values

Read back as untrusted input: JSON checked field by field, every array against its index.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors import safe_open
from safetensors.torch import save_file

from lens_widget.log.monitor.step_history import SIDES, STAT_NAMES, OpIndex, StepHistory, StepStats
from lens_widget.store.format import LogFormatError, fail
from lens_widget.store.load import load
from lens_widget.store.save import save_log

MONITOR_FORMAT = "lens_widget.monitor"
MONITOR_VERSION = 1
JSON_NAME = "monitor.json"
STATS_NAME = "stats.safetensors"


def save_history(history: StepHistory, path: str | os.PathLike[str]) -> Path:
    """Write `history` into the directory `path` (a previous monitor save there is replaced)."""
    directory = Path(path)
    if directory.exists() and any(directory.iterdir()) and not (directory / JSON_NAME).exists():
        raise FileExistsError(f"{directory} exists and is not a saved monitor: pick another")
    directory.mkdir(parents=True, exist_ok=True)
    indexes: list[OpIndex] = []
    arrays: dict[str, torch.Tensor] = {}
    steps = []
    shutil.rmtree(directory / "kept", ignore_errors=True)
    if history.structure is not None:
        save_log(history.structure, directory / "structure", weights=False)
    for step in history.steps:
        if not indexes or indexes[-1] is not step.ops:
            indexes.append(step.ops)
        arrays[f"a{step.step}"] = torch.from_numpy(np.ascontiguousarray(step.activation))
        if step.gradient is not None:
            arrays[f"g{step.step}"] = torch.from_numpy(np.ascontiguousarray(step.gradient))
        kept = None
        if step.step in history.kept:
            kept = f"kept/step-{step.step}"
            save_log(history.kept[step.step], directory / kept)
        steps.append({
            "step": step.step, "index": len(indexes) - 1, "kept": kept,
            "gradient": step.gradient is not None,
            "first_nonfinite": list(step.first_nonfinite) if step.first_nonfinite else None,
        })  # fmt: skip
    save_id = uuid.uuid4().hex
    document = {
        "format": MONITOR_FORMAT, "version": MONITOR_VERSION, "save_id": save_id,
        "every": history.every, "grads": history.grads, "stats": list(history.stats),
        "structure": "structure" if history.structure is not None else None,
        "columns": list(STAT_NAMES),
        "indexes": [
            {
                "labels": list(i.labels), "modules": list(i.modules), "funcs": list(i.funcs),
                "outputs": [list(pair) for pair in i.outputs],
            }
            for i in indexes
        ],
        "steps": steps,
    }  # fmt: skip
    save_file(arrays, str(directory / STATS_NAME), metadata={"save_id": save_id})
    (directory / JSON_NAME).write_text(json.dumps(document, allow_nan=False), "utf-8")
    return directory


def load_history(path: str | os.PathLike[str]) -> StepHistory:
    """Read a monitor saved with ``mon.save(path)``; LogFormatError names what is wrong."""
    directory = Path(path)
    where = JSON_NAME
    try:
        document = json.loads((directory / JSON_NAME).read_bytes())
    except FileNotFoundError:
        raise FileNotFoundError(f"no saved monitor at {directory} (no {JSON_NAME})") from None
    except ValueError as err:
        raise fail(where, f"not valid JSON ({err})") from None
    if not isinstance(document, dict) or document.get("format") != MONITOR_FORMAT:
        raise fail(where, f'not a lens_widget monitor (no "format": "{MONITOR_FORMAT}")')
    if document.get("version") != MONITOR_VERSION:
        raise fail(where, f"version {document.get('version')!r}: this lens_widget reads 1")
    if document.get("columns") != list(STAT_NAMES):
        raise fail(where, f"columns must be {list(STAT_NAMES)}")
    stats = _strings(document.get("stats"), f"{where}: stats")
    if not set(stats) <= set(STAT_NAMES):
        raise fail(where, f"stats {stats} are not all among {list(STAT_NAMES)}")
    every, grads = document.get("every"), document.get("grads")
    if isinstance(every, bool) or not isinstance(every, int) or every < 1:
        raise fail(where, "every must be a positive integer")
    if not isinstance(grads, bool):
        raise fail(where, "grads must be true or false")
    listed = _list(document.get("indexes"), f"{where}: indexes")
    indexes = [_index(entry, f"{where}: indexes[{i}]") for i, entry in enumerate(listed)]
    history = StepHistory(every=every, grads=grads, stats=tuple(stats))
    structure = document.get("structure")
    if structure not in (None, "structure"):
        raise fail(where, "structure must be null or 'structure'")
    if structure is not None:
        history.structure = load(directory / "structure")
    with _open_stats(directory, document.get("save_id")) as arrays:
        for k, entry in enumerate(_list(document.get("steps"), f"{where}: steps")):
            history.add(_step(entry, k, indexes, arrays, directory, history))
    return history


def _step(
    entry: Any, k: int, indexes: list[OpIndex], arrays: Any, directory: Path, history: StepHistory
) -> StepStats:
    where = f"{JSON_NAME}: steps[{k}]"
    if not isinstance(entry, dict):
        raise fail(where, "must be an object")
    step, index = entry.get("step"), entry.get("index")
    if isinstance(step, bool) or not isinstance(step, int) or step < 0:
        raise fail(where, "step must be an integer >= 0")
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(indexes):
        raise fail(where, f"index must name one of the {len(indexes)} op indexes")
    ops = indexes[index]
    values = {side: _array(arrays, f"{side[0]}{step}", len(ops), where) for side in SIDES}
    if values["activation"] is None:
        raise fail(where, f"{STATS_NAME} has no a{step}")
    first = entry.get("first_nonfinite")
    if first is not None and not (
        isinstance(first, list) and len(first) == 2 and first[0] in ops.labels and first[1] in SIDES
    ):
        raise fail(where, "first_nonfinite must be [an op label of the step, a side] or null")
    kept = entry.get("kept")
    if kept is not None:
        if kept != f"kept/step-{step}":
            raise fail(where, f"kept must be null or 'kept/step-{step}'")
        history.kept[step] = load(directory / kept)
    nonfinite = (str(first[0]), str(first[1])) if first else None
    return StepStats(step, ops, values["activation"], values["gradient"], nonfinite)


@contextmanager
def _open_stats(directory: Path, save_id: Any) -> Iterator[Any]:
    """The stats file, its header checked by safetensors, its save_id against monitor.json."""
    try:
        opened = safe_open(str(directory / STATS_NAME), framework="pt")
    except Exception as err:  # safetensors' own header checks
        raise fail(STATS_NAME, f"missing, damaged or not a safetensors file ({err})") from None
    with opened as handle:
        if (handle.metadata() or {}).get("save_id") != save_id:
            raise fail(STATS_NAME, "belongs to another save than monitor.json")
        yield handle


def _array(arrays: Any, name: str, rows: int, where: str) -> np.ndarray | None:
    if name not in set(arrays.keys()):
        return None
    tensor = arrays.get_tensor(name)
    if tensor.dtype != torch.float64 or tuple(tensor.shape) != (rows, len(STAT_NAMES)):
        expected = [rows, len(STAT_NAMES)]
        raise fail(where, f"{name} is {tensor.dtype} {list(tensor.shape)}, not float64 {expected}")
    return tensor.numpy()


def _index(entry: Any, where: str) -> OpIndex:
    if not isinstance(entry, dict):
        raise fail(where, "must be an object")
    labels = _strings(entry.get("labels"), f"{where}: labels")
    modules = _strings(entry.get("modules"), f"{where}: modules")
    funcs = _strings(entry.get("funcs"), f"{where}: funcs")
    if not len(labels) == len(modules) == len(funcs):
        raise fail(where, "labels, modules and funcs differ in length")
    outputs = _list(entry.get("outputs"), f"{where}: outputs")
    known = set(labels)
    if not all(
        isinstance(o, list) and len(o) == 2 and isinstance(o[0], str) and o[1] in known
        for o in outputs
    ):
        raise fail(where, "outputs must be [module address, an op label of the index] pairs")
    pairs = tuple((str(o[0]), str(o[1])) for o in outputs)
    return OpIndex(tuple(labels), tuple(modules), tuple(funcs), pairs)


def _list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise fail(where, "must be an array")
    return value


def _strings(value: Any, where: str) -> list[str]:
    items = _list(value, where)
    if not all(isinstance(v, str) for v in items):
        raise LogFormatError(f"{where}: must be an array of strings")
    return items
