"""What the numbers were measured on: machine, versions, and how busy the machine was."""

from __future__ import annotations

import os
import platform
import subprocess
import time
from importlib import metadata
from typing import Any

import torch

from .chromium import CHROMIUM


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _ram_gib() -> float:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return round(int(line.split()[1]) / 1024**2, 1)
    except OSError:
        pass
    return float("nan")


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _chromium_version() -> str | None:
    try:
        out = subprocess.run([CHROMIUM, "--version"], capture_output=True, text=True, timeout=20)
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def machine_info() -> dict[str, Any]:
    return {
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "ram_gib": _ram_gib(),
        "os": platform.platform(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": _version("transformers"),
        "torchlens": _version("torchlens"),
        "networkx": _version("networkx"),
        "playwright": _version("playwright"),
        "chromium": _chromium_version(),
        "lens_widget": _version("lens_widget"),
    }


class LoadMeter:
    """Machine-wide CPU use between start() and stop(), split into ours and everyone else's."""

    def _snap(self) -> tuple[float, int, int, float]:
        with open("/proc/stat") as f:
            vals = [int(v) for v in f.readline().split()[1:]]
        t = os.times()
        ours = t.user + t.system + t.children_user + t.children_system
        return time.monotonic(), sum(vals), vals[3] + vals[4], ours

    def start(self) -> None:
        self._start = self._snap()
        with open("/proc/loadavg") as f:
            self._loadavg_start = f.read().split()[:3]

    def stop(self) -> dict[str, Any]:
        w1, tot1, idle1, ours1 = self._snap()
        w0, tot0, idle0, ours0 = self._start
        ncpu = os.cpu_count() or 1
        wall = max(1e-9, w1 - w0)
        machine = 1.0 - (idle1 - idle0) / max(1, tot1 - tot0)
        ours = (ours1 - ours0) / (wall * ncpu)
        with open("/proc/loadavg") as f:
            loadavg_end = f.read().split()[:3]
        return {
            "wall_s": round(wall, 1),
            "machine_busy": round(machine, 3),
            "ours_busy": round(ours, 3),
            "others_busy": round(max(0.0, machine - ours), 3),
            "loadavg_start": self._loadavg_start,
            "loadavg_end": loadavg_end,
        }
