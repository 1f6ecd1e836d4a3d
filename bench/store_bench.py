"""Save / load of a GPT-2 12-layer log: bytes on disk against the bytes the log holds, save
time, load time, and what loading costs in memory before and after an activation is read.

    PYTHONPATH=$PWD .venv/bin/python -m bench.store_bench [--seq 128] [--repeats 3]

GPT2Config defaults (12 layers, 768 wide, vocab 50257), random weights, one batch of
`--seq` tokens, every activation saved. "Tensor bytes" counts each distinct storage the log
references once (activations of every node, parameters included, replay inputs and RNG
states): what a save must write. Target: bytes on disk <= 1.05x tensor bytes.
Self-contained: imports nothing from the other bench modules.
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

import lens_widget as lw


def tensor_bytes(log: lw.ModelLog) -> int:
    """Bytes of every distinct storage the log references (what a save writes)."""
    storages: dict[tuple[int, int], int] = {}

    def add(tensor: torch.Tensor) -> None:
        storage = tensor.untyped_storage()
        storages[(storage.data_ptr(), storage.nbytes())] = storage.nbytes()

    for node in log.nodes:
        for tensor in node.activations or ():
            add(tensor)
        replay = node.replay
        call = replay[0] if isinstance(replay, tuple) else None
        if call is not None:
            for tensor in call.literals.values():
                add(tensor)
            if call.rng_state is not None:
                add(call.rng_state)
    return sum(storages.values())


def rss_kb(field: str) -> int:
    """A line of /proc/self/status in kB (RssAnon: private memory, RssFile: mapped files)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def directory_bytes(path: Path) -> dict[str, int]:
    return {p.name: p.stat().st_size for p in sorted(path.iterdir())}


def build_log(seq: int) -> lw.ModelLog:
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(n_layer=12)).eval()
    ids = torch.randint(
        0, model.config.vocab_size, (1, seq), generator=torch.Generator().manual_seed(1)
    )
    with torch.no_grad():
        return lw.trace(model, (ids,))


def bench(seq: int, repeats: int, workdir: Path) -> dict[str, Any]:
    t0 = time.perf_counter()
    log = build_log(seq)
    trace_s = time.perf_counter() - t0
    held = tensor_bytes(log)
    target = workdir / "gpt2"

    save_s = []
    for _ in range(repeats):
        gc.collect()
        start = time.perf_counter()
        log.save(target)
        save_s.append(time.perf_counter() - start)
    files = directory_bytes(target)
    on_disk = sum(files.values())

    load_s = []
    for _ in range(repeats):
        gc.collect()
        start = time.perf_counter()
        loaded = lw.load(target)
        load_s.append(time.perf_counter() - start)
        del loaded
    gc.collect()
    anon, mapped = rss_kb("RssAnon"), rss_kb("RssFile")
    start = time.perf_counter()
    loaded = lw.load(target)
    last_load_s = time.perf_counter() - start
    anon_after, mapped_after = rss_kb("RssAnon"), rss_kb("RssFile")
    logits = loaded.outputs[0].activation
    start = time.perf_counter()
    logits.sum()
    read_s = time.perf_counter() - start
    mapped_read = rss_kb("RssFile")
    same = torch.equal(logits, log.outputs[0].activation)

    return {
        "model": f"GPT2LMHeadModel (GPT2Config defaults, 12 layers), 1x{seq} tokens",
        "ops": len(log.ops),
        "nodes": len(log.nodes),
        "trace_s": trace_s,
        "tensor_bytes": held,
        "saved_bytes": log.saved_bytes,
        "param_bytes": log.param_bytes,
        "files": files,
        "disk_bytes": on_disk,
        "disk_ratio": on_disk / held,
        "save_s": statistics.median(save_s),
        "load_s": statistics.median([*load_s, last_load_s]),
        "load_anon_kb": anon_after - anon,
        "load_mapped_kb": mapped_after - mapped,
        "logits_bytes": logits.numel() * logits.element_size(),
        "read_logits_s": read_s,
        "read_logits_mapped_kb": mapped_read - mapped_after,
        "logits_equal": same,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "cpus": torch.get_num_threads(),
    }


def report(row: dict[str, Any]) -> str:
    mb = 1024 * 1024
    return "\n".join(
        [
            f"## lens_widget save / load: {row['model']}",
            "",
            f"{row['ops']} ops, {row['nodes']} nodes; traced in {row['trace_s']:.1f} s",
            "",
            "| measure | value |",
            "|---|---|",
            f"| tensor bytes in the log (distinct storages) | {row['tensor_bytes'] / mb:,.1f} MB |",
            f"| of which op activations (`log.saved_bytes`) | {row['saved_bytes'] / mb:,.1f} MB |",
            f"| parameters | {row['param_bytes'] / mb:,.1f} MB |",
            f"| bytes on disk (log.json + tensors.safetensors) | {row['disk_bytes'] / mb:,.1f} MB "
            f"(log.json {row['files'].get('log.json', 0) / 1024:,.0f} KB) |",
            f"| disk / tensor bytes (target <= 1.05) | {row['disk_ratio']:.4f} |",
            f"| save (median) | {row['save_s'] * 1000:,.0f} ms |",
            f"| load (median) | {row['load_s'] * 1000:,.0f} ms |",
            f"| memory after load: private / mapped-and-read | {row['load_anon_kb'] / 1024:,.1f} MB"
            f" / {row['load_mapped_kb'] / 1024:,.1f} MB |",
            f"| first read of the logits ({row['logits_bytes'] / mb:,.1f} MB) | "
            f"{row['read_logits_s'] * 1000:,.0f} ms, {row['read_logits_mapped_kb'] / 1024:,.1f} MB"
            f" read from the file; equal: {row['logits_equal']} |",
            "",
            f"torch {row['torch']}, Python {row['python']}, {row['cpus']} threads",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", type=Path, help="also write the numbers here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="lens_store_bench_") as workdir:
        row = bench(args.seq, args.repeats, Path(workdir))
    print(report(row))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(row, indent=2))


if __name__ == "__main__":
    main()
