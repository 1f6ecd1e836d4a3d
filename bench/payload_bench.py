"""The widget's synced graph: its size as JSON and on the wire, and what a saved notebook grows by.

    python -m bench.payload_bench [--quick]     # prints the figures as JSON
    python -m bench.payload_bench --kernel 20000,100000   # only the kernel-side timings

Kernel side: for a synthetic chain of nested `Sequential`s (model_zoo.chain, folded into one
`×N` stack) and a flat loop of tiny ops (bench.per_op.TinyLoop: 3 ops per `Linear`, nothing
folds), each of ~20k and ~100k ops: the trace (save=None), `LensWidget.from_log` (it builds
the payload and encodes it when the widget opens), then on a fresh trace of the same model
`log.repeated_blocks`, `log.graph`, `log.rolled_graph`, `build_payload` and `wire.encode`
one by one (wall-clock seconds, one run each: compare rows of one run, not across runs).

Graphs: real GPT-2 traces (transformers, random weights, width 32 and as many layers as it
takes to reach ~5k and ~20k ops: module paths, source lines and shapes as any real model has
them), the graph bench's chain of 20k ops, and the synthetic ViT-like payloads of 20k and 100k
ops the widget bench draws. *JSON*: `json.dumps` of the GraphPayload, what the `graph` trait
synced before; *wire*: lens_widget/widget/wire.py's bytes, what it syncs now.

Notebook: a notebook whose one cell shows a LensWidget of the ~5k-op GPT-2 is executed in a
fresh kernel with nbclient and saved with nbformat (as `jupyter nbconvert --execute` does);
its growth is its size minus that of the same notebook whose cell leaves the widget out.
Of that: the graph (a base64 buffer) and the ESM bundle (`_esm`: anywidget saves the
frontend code with every widget's state), the rest is the other traits and the output.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import tempfile
import time
from collections.abc import Callable
from typing import Any

import nbformat
import torch
from nbclient import NotebookClient
from transformers import GPT2Config, GPT2LMHeadModel

import lens_widget
from lens_widget.widget import LensWidget, wire
from lens_widget.widget.payload import build_payload
from model_zoo import ZooCase, chain
from model_zoo.case import build, token_ids
from model_zoo.synthetic_payload import make_payload

from .per_op import TinyLoop

ROOT = pathlib.Path(__file__).resolve().parents[1]
GPT2_BASE_OPS = 13  # ops of a 0-layer GPT-2 here (embeddings, final norm, head, outputs)
GPT2_OPS_PER_LAYER = 43
NOTEBOOK_OPS = 5000


def deep_gpt2(n_ops: int) -> tuple[torch.nn.Module, torch.Tensor]:
    """A real GPT-2 (width 32, random weights) with enough layers for about `n_ops` ops."""
    layers = max(1, round((n_ops - GPT2_BASE_OPS) / GPT2_OPS_PER_LAYER))
    cfg = GPT2Config(
        vocab_size=96, n_positions=64, n_embd=32, n_layer=layers, n_head=2, bos_token_id=1,
        eos_token_id=2,
    )  # fmt: skip
    return build(lambda: GPT2LMHeadModel(cfg)), token_ids(96, 16, batch=1)


def _traced(model: torch.nn.Module, *args: Any) -> dict[str, Any]:
    with torch.no_grad():
        return dict(build_payload(lens_widget.trace(model, args, save=None)))


def _traced_case(case: ZooCase) -> dict[str, Any]:
    return _traced(case.model, *case.args)


def _row(name: str, payload: dict[str, Any]) -> dict[str, Any]:
    t0 = time.perf_counter()
    data = wire.encode(payload)
    encode_ms = (time.perf_counter() - t0) * 1e3
    return {
        "graph": name,
        "ops": payload["nOps"],
        "nodes": len(payload["unrolled"]["nodes"]) + len(payload["rolled"]["nodes"]),
        "json_bytes": len(json.dumps(payload)),
        "wire_bytes": len(data),
        "encode_ms": encode_ms,
    }


def _graphs(quick: bool) -> list[tuple[str, Callable[[], dict[str, Any]]]]:
    if quick:
        return [("gpt2 ~300 ops", lambda: _traced(*deep_gpt2(300)))]
    return [
        ("gpt2 ~5k ops", lambda: _traced(*deep_gpt2(5000))),
        ("gpt2 ~20k ops", lambda: _traced(*deep_gpt2(20000))),
        ("chain 20k ops", lambda: _traced_case(chain(20000))),
        ("synthetic 20000", lambda: make_payload(target_ops=20000)),
        ("synthetic 100000", lambda: make_payload(target_ops=100000)),
    ]


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def _kernel_models(n_ops: int) -> list[tuple[str, torch.nn.Module, torch.Tensor]]:
    case = chain(n_ops)
    torch.manual_seed(0)
    return [
        (f"chain {n_ops}", case.model, case.args[0]),
        (f"tiny loop {n_ops}", TinyLoop(n_ops // 3), torch.randn(4, 8)),
    ]


def kernel_rows(sizes: list[int], log: Callable[[str], None] = print) -> list[dict[str, Any]]:
    """Seconds the kernel spends from a log to the bytes the widget syncs (see the docstring)."""
    rows = []
    for n_ops in sizes:
        for name, model, x in _kernel_models(n_ops):
            with torch.no_grad():
                trace_s, traced = _timed(lambda m=model, x=x: lens_widget.trace(m, (x,), save=None))
            widget_s, _ = _timed(lambda t=traced: LensWidget.from_log(t))
            with torch.no_grad():
                fresh = lens_widget.trace(model, (x,), save=None)
            row: dict[str, Any] = {"graph": name, "ops": len(fresh.ops), "trace_s": trace_s}
            row["widget_s"] = widget_s
            row["repeated_blocks_s"], _ = _timed(lambda f=fresh: f.repeated_blocks)
            row["graph_s"], _ = _timed(lambda f=fresh: f.graph)
            row["rolled_graph_s"], _ = _timed(lambda f=fresh: f.rolled_graph)
            row["payload_s"], payload = _timed(lambda f=fresh: build_payload(f))
            row["encode_s"], data = _timed(lambda p=payload: wire.encode(p))
            row["wire_bytes"] = len(data)
            log(
                f"  {name}: {row['ops']} ops, trace {trace_s:.2f}s, LensWidget.from_log "
                f"{widget_s:.2f}s | repeated_blocks {row['repeated_blocks_s']:.2f}s, graph "
                f"{row['graph_s']:.2f}s, rolled {row['rolled_graph_s']:.2f}s, payload "
                f"{row['payload_s']:.2f}s, encode {row['encode_s']:.2f}s "
                f"({len(data) / 2**20:.2f} MiB)"
            )
            rows.append(row)
            del traced, fresh, payload, data
    return rows


NOTEBOOK_SETUP = """\
from bench.payload_bench import deep_gpt2
from lens_widget.widget import LensWidget
model, ids = deep_gpt2({n_ops})
"""


def _saved_size(cell: str, n_ops: int, work: pathlib.Path) -> tuple[int, dict[str, Any]]:
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(NOTEBOOK_SETUP.format(n_ops=n_ops)),
        nbformat.v4.new_code_cell(cell),
    ]
    NotebookClient(nb, kernel_name="python3", timeout=600).execute()
    path = work / "saved.ipynb"
    nbformat.write(nb, path)
    return path.stat().st_size, nb


def notebook_growth(n_ops: int = NOTEBOOK_OPS) -> dict[str, Any]:
    """Bytes a saved notebook grows by when one cell shows a LensWidget of ~`n_ops` ops."""
    env = {"PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    with tempfile.TemporaryDirectory() as tmp:
        work = pathlib.Path(tmp)
        old = {k: os.environ.get(k) for k in ("PYTHONPATH", "JUPYTER_CONFIG_DIR")}
        os.environ.update(env, JUPYTER_CONFIG_DIR=str(work / "config"))
        try:
            without, _ = _saved_size("None", n_ops, work)
            with_widget, nb = _saved_size("LensWidget(model, (ids,))", n_ops, work)
        finally:
            for k, v in old.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
    states = nb.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    lens = next(s for s in states.values() if "_esm" in s["state"])
    graph = [b for b in lens.get("buffers", []) if b["path"] == ["graph"]]
    return {
        "ops": n_ops,
        "growth_bytes": with_widget - without,
        "graph_bytes": len(graph[0]["data"]) if graph else len(json.dumps(lens["state"]["graph"])),
        "esm_bytes": len(json.dumps(lens["state"]["_esm"])),
    }


def bench_payload(quick: bool, log: Callable[[str], None] = print) -> dict[str, Any]:
    rows = []
    for name, make in _graphs(quick):
        row = _row(name, make())
        log(
            f"  {name}: {row['ops']} ops, JSON {row['json_bytes'] / 2**20:.1f} MiB, "
            f"wire {row['wire_bytes'] / 2**20:.2f} MiB (encode {row['encode_ms']:.0f} ms)"
        )
        rows.append(row)
    kernel = kernel_rows([2000] if quick else [20000, 100000], log=log)
    notebook = notebook_growth(300 if quick else NOTEBOOK_OPS)
    grow, graph, esm = (notebook[k] / 2**20 for k in ("growth_bytes", "graph_bytes", "esm_bytes"))
    ops = notebook["ops"]
    log(f"  notebook, {ops}-op widget: +{grow:.2f} MiB (graph {graph:.2f}, ESM {esm:.2f})")
    return {"rows": rows, "kernel": kernel, "notebook": notebook}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--kernel", metavar="SIZES", help="only the kernel rows, e.g. 20000,100000")
    args = parser.parse_args()
    if args.kernel:
        print(json.dumps(kernel_rows([int(s) for s in args.kernel.split(",")]), indent=1))
    else:
        print(json.dumps(bench_payload(args.quick), indent=1))
