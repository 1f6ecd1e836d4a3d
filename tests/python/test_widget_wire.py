"""wire: the `graph` trait as compact bytes, decoded back to the very payload, here and by the
frontend's own decoder (js/src/kernel/wire.ts, run in node)."""

import json
import math
import pathlib
import shutil
import struct
import subprocess
import zlib

import pytest
import torch
from ipywidgets.widgets.widget import _remove_buffers
from torch import nn
from wire_fixtures import EDGE_BIN, EDGE_VALUE, PAYLOAD_BIN, PAYLOAD_JSON

import lens_widget as lw
from lens_widget.widget import LensWidget, wire
from lens_widget.widget.payload import build_payload
from model_zoo import TEST_MODELS
from model_zoo.synthetic_payload import make_payload

ROOT = pathlib.Path(__file__).resolve().parents[2]
ESBUILD = ROOT / "node_modules" / ".bin" / "esbuild"


def same(a, b) -> bool:
    """Equal, NaN equal to NaN, and int/float/bool kept apart as JSON would keep them."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    if type(a) is not type(b) and not {type(a), type(b)} <= {int, float}:
        return False
    if isinstance(a, dict):
        return set(a) == set(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def header(data: bytes) -> dict:
    raw = zlib.decompress(data)
    assert raw[:4] == wire.MAGIC
    (length,) = struct.unpack_from("<I", raw, 4)
    return json.loads(raw[8 : 8 + length])


# ---- the codec in Python -------------------------------------------------------------


def test_round_trip_keeps_every_value_and_type():
    assert same(wire.decode(wire.encode(EDGE_VALUE)), EDGE_VALUE)
    for value in ([], {}, None, "s", 0, -1.5, True, [[1, "a"], [2]], [{"a": 1}, {"b": 2}]):
        assert same(wire.decode(wire.encode(value)), value), value


def test_fixtures_of_the_typescript_tests_decode_to_their_values():
    # tests/js/wire.test.ts decodes the same files: rewrite them with wire_fixtures.py
    assert same(wire.decode(EDGE_BIN.read_bytes()), EDGE_VALUE)
    assert wire.decode(PAYLOAD_BIN.read_bytes()) == json.loads(PAYLOAD_JSON.read_text())


def test_lists_of_dicts_become_columns_and_strings_are_stored_once():
    rows = [{"id": f"n{i}", "func": "linear", "groups": ["a.b:1", "a.b.c:1"]} for i in range(500)]
    data = wire.encode({"nodes": rows})
    h = header(data)
    assert h["strings"].count("linear") == 1 and h["strings"].count("a.b.c:1") == 1
    nodes = h["root"]["v"][0]["v"]  # the list's items: one column per key
    assert nodes["c"] == "obj" and nodes["k"] == ["id", "func", "groups"]
    assert wire.decode(data) == {"nodes": rows}


def test_a_field_no_one_told_the_codec_about_travels():
    p = make_payload(n_layers=1)
    for i, n in enumerate(p["unrolled"]["nodes"]):
        if i % 3 == 0:  # only on some nodes, nested, nullable
            n["attention"] = {
                "heads": 4,
                "dims": ["batch", "head"],
                "scale": None if i % 2 else 0.125,
            }
    p["repeatedBlocks"] = [["blocks.0", "blocks.1"]]
    assert wire.decode(wire.encode(p)) == p


def test_what_json_cannot_carry_is_refused_clearly():
    with pytest.raises(wire.WireError, match="cannot encode"):
        wire.encode({"x": [1, {1, 2}]})
    with pytest.raises(wire.WireError, match="keys must be strings"):
        wire.encode([{1: "a"}])
    with pytest.raises(wire.WireError, match="not a lens_widget graph"):
        wire.decode(b"not zlib")
    with pytest.raises(wire.WireError, match="bad magic"):
        wire.decode(zlib.compress(b"JSON{}"))


# ---- the widget's trait ---------------------------------------------------------------


class Twice(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(torch.relu(self.lin(x)))


def test_the_synced_graph_is_bytes_in_a_binary_buffer_and_w_graph_stays_the_payload():
    w = LensWidget(Twice(), (torch.randn(2, 8),))
    state = w.get_state()
    assert isinstance(w.graph, dict) and w.graph["unrolled"]["nodes"]
    assert isinstance(state["graph"], bytes)
    assert wire.decode(state["graph"]) == w.graph
    assert w.get_state()["graph"] is state["graph"]  # encoded once per graph
    # what the comm sends and a saved notebook stores: the graph as a binary buffer
    rest, paths, buffers = _remove_buffers(state)
    assert "graph" not in rest and paths == [["graph"]]
    assert wire.decode(bytes(buffers[0])) == w.graph
    w.rerun()
    assert wire.decode(w.get_state()["graph"]) == w.graph


# ---- Python's bytes through the frontend's decoder ------------------------------------

RUNNER = """
import { readFileSync, writeFileSync } from "node:fs";
import { decodeWire } from "./wire.mjs";
const [input, output] = process.argv.slice(2);
const value = await decodeWire(new Uint8Array(readFileSync(input)));
writeFileSync(output, JSON.stringify(value));
"""


@pytest.fixture(scope="module")
def ts_decode(tmp_path_factory):
    node = shutil.which("node")
    if node is None or not ESBUILD.exists():
        pytest.skip("needs node and node_modules (npm ci)")
    out = tmp_path_factory.mktemp("wire_ts")
    subprocess.run(
        [str(ESBUILD), str(ROOT / "js/src/kernel/wire.ts"), "--format=esm", "--platform=node"]
        + [f"--outfile={out / 'wire.mjs'}", "--log-level=warning"],
        check=True,
    )
    (out / "run.mjs").write_text(RUNNER)

    def decode(data: bytes):
        (out / "in.bin").write_bytes(data)
        subprocess.run(
            [node, str(out / "run.mjs"), str(out / "in.bin"), str(out / "out.json")], check=True
        )
        return json.loads((out / "out.json").read_text())

    return decode


def test_typescript_decodes_a_traced_model_to_the_same_payload(ts_decode):
    case = TEST_MODELS["gpt2"]()
    with torch.no_grad():
        log = lw.trace(case.model, case.args, case.kwargs)
    payload = build_payload(log)
    assert len(payload["unrolled"]["nodes"]) > 50
    assert ts_decode(wire.encode(payload)) == json.loads(json.dumps(payload))


def test_typescript_decodes_a_5000_op_payload_to_the_same_payload(ts_decode):
    payload = make_payload(target_ops=5000)
    assert payload["nOps"] >= 4900
    assert ts_decode(wire.encode(payload)) == payload
