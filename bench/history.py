"""Every bench run keeps its figures in its own file: `results/<UTC time>-<commit>.json`.

Files are compact: one line per table row, floats to 6 significant digits, and only the
figures (the report derives targets and wording from them). File names sort by time, so the
last one is the newest run.
"""

from __future__ import annotations

import json
import math
import pathlib
import subprocess
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parents[1]
RESULTS_DIR = "results"


def git_commit() -> tuple[str, bool]:
    """The checkout's short commit and whether tracked files differ from it."""
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return "nogit", False
    return sha, bool(status.strip())


def _figures(obj: Any) -> Any:
    """JSON has no NaN (null instead); 6 significant digits are plenty for timings."""
    if isinstance(obj, float):
        return float(f"{obj:.6g}") if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _figures(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_figures(v) for v in obj]
    return obj


def _dump(obj: Any, depth: int = 0) -> str:
    """JSON with the top two levels of objects and every list of rows spread over lines;
    everything inside a row stays on the row's line."""
    pad = " " * (depth + 1)
    if isinstance(obj, dict) and obj and depth <= 1:
        items = [f"{pad}{json.dumps(k)}: {_dump(v, depth + 1)}" for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad[:-1] + "}"
    if isinstance(obj, list) and obj and all(isinstance(v, dict) for v in obj):
        items = [f"{pad}{json.dumps(v)}" for v in obj]
        return "[\n" + ",\n".join(items) + "\n" + pad[:-1] + "]"
    return json.dumps(obj)


def run_file_name(started_utc: str, commit: str, quick: bool, device: str = "cpu") -> str:
    """`started_utc` as `YYYY-MM-DDTHHMMSSZ`; quick smoke runs and GPU runs are marked.
    The run's meta also records the device (`meta["device"]`: "cpu" or "cuda (<GPU name>)")."""
    on = "" if device == "cpu" else f"-{device}"
    return f"{started_utc}-{commit}{on}{'-quick' if quick else ''}.json"


def write_run(results: dict[str, Any], folder: pathlib.Path, name: str) -> pathlib.Path:
    path = folder / RESULTS_DIR / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(_dump(_figures(results)) + "\n")
    return path


def newest_run(folder: pathlib.Path) -> pathlib.Path:
    """The newest CPU run: a file named by its UTC time (`2026-...Z-<commit>.json`), not a
    CUDA run (the report shows the newest beside it) nor a section's own figures
    (`offload.json`, `monitor.json`)."""
    runs = sorted(
        p for p in (folder / RESULTS_DIR).glob("[0-9]*Z-*.json") if not p.stem.endswith("-cuda")
    )
    if not runs:
        raise FileNotFoundError(f"no bench runs in {folder / RESULTS_DIR}")
    return runs[-1]


def read_run(path: pathlib.Path) -> dict[str, Any]:
    return json.loads(path.read_text())
