"""Every dtype and tensor layout round-trips bit for bit; shared memory is written once;
loading maps the file and reads a tensor's bytes only when it is used."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
from function_module import FunctionModule
from log_equality import assert_same_log
from safetensors import safe_open

import lens_widget as lw

DTYPE_NAMES = [
    "float32", "float64", "float16", "bfloat16", "int8", "int16", "int32", "int64", "uint8",
    "uint16", "uint32", "uint64", "bool", "complex32", "complex64", "complex128", "float8_e4m3fn",
    "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu",
]  # fmt: skip
# Each torch is tested on every dtype it has (float8_e8m0fnu is new in torch 2.7).
DTYPES = [getattr(torch, name) for name in DTYPE_NAMES if hasattr(torch, name)]


def special_values() -> torch.Tensor:
    """Values whose bits a careless round trip loses: NaN payloads, -0.0, inf, subnormals."""
    x = torch.tensor([0.5, -0.0, math.inf, -math.inf, math.nan, 1e-40, 3.0, -7.25])
    bits = x.view(torch.int32).clone()
    bits[4] = 0x7FC0_1234  # a NaN with a payload
    return bits.view(torch.float32)


def every_dtype(x: torch.Tensor):
    outs = [x.to(dtype) for dtype in DTYPES if not dtype.is_complex]
    c = torch.complex(x, x.flip(0))
    outs += [c, c.to(torch.complex128), c.to(torch.complex32), c.conj(), torch.view_as_real(c)]
    outs.append(c.imag)
    return outs


@pytest.mark.filterwarnings("ignore:ComplexHalf support is experimental")
def test_every_dtype_round_trips_bit_for_bit(tmp_path):
    log = lw.trace(FunctionModule(every_dtype), special_values())
    dtypes = {str(node.activation.dtype) for node in log.ops}
    assert {str(d) for d in DTYPES} <= dtypes
    assert next(n for n in log.ops if n.func == "conj").activation.is_conj()
    log.save(tmp_path / "dtypes")
    loaded = lw.load(tmp_path / "dtypes")
    assert_same_log(log, loaded)
    document = json.loads((tmp_path / "dtypes" / "log.json").read_text())
    # complex storages are written as float pairs (safetensors has no complex dtypes)
    complex_storages = [s for s in document["storages"] if s.get("complex_as_real")]
    assert {s["dtype"] for s in complex_storages} == {"float16", "float32", "float64"}
    assert all(s["shape"][-1] == 2 for s in complex_storages)


def views(x: torch.Tensor):
    y = x * 2
    return (
        y.t(), y[::2, 1:], y.expand(3, *y.shape)[1], y.reshape(-1)[5:9], y.sum(), y[:0],
        y.unsqueeze(0).transpose(0, 2), y.diagonal(), y.as_strided((2, 2), (1, 3), 4),
    )  # fmt: skip


def test_views_keep_their_strides_and_offsets(tmp_path):
    log = lw.trace(FunctionModule(views), torch.randn(6, 6))
    log.save(tmp_path / "views")
    loaded = lw.load(tmp_path / "views")
    assert_same_log(log, loaded)
    by_func = {node.func: node.activation for node in loaded.ops}
    assert by_func["expand"].stride()[0] == 0
    assert by_func["as_strided"].storage_offset() == 4


def test_shared_storage_is_written_once(tmp_path):
    def many_views(x):
        y = x * 2  # 4 MB
        return y.view(-1), y.t(), y[1:], y.reshape(512, 2048), y.transpose(0, 1)[3], y.T

    x = torch.randn(1024, 1024)
    log = lw.trace(FunctionModule(many_views), x)
    assert len(log.outputs) == 6
    log.save(tmp_path / "shared")
    document = json.loads((tmp_path / "shared" / "log.json").read_text())
    assert len(document["storages"]) == 2  # x and y, each once
    size = (tmp_path / "shared" / "tensors.safetensors").stat().st_size
    stored = 2 * x.numel() * x.element_size()
    assert stored <= size <= stored + 64 * 1024  # plus the safetensors header
    loaded = lw.load(tmp_path / "shared")
    assert_same_log(log, loaded)
    base = loaded["mul_1_1"].activation.untyped_storage().data_ptr()
    assert all(o.activation.untyped_storage().data_ptr() == base for o in loaded.outputs)


def test_the_safetensors_file_reads_in_other_tools(tmp_path):
    log = lw.trace(FunctionModule(lambda x: torch.relu(x) + 1), torch.randn(3, 5))
    log.save(tmp_path / "plain")
    document = json.loads((tmp_path / "plain" / "log.json").read_text())
    with safe_open(str(tmp_path / "plain" / "tensors.safetensors"), framework="pt") as f:
        for node in log.nodes:
            view = document["tensors"][document["nodes"][node.index]["activations"][0]]
            name = document["storages"][view["storage"]]["name"]
            assert torch.equal(f.get_tensor(name), node.activation)


def _rss_file_kb() -> int:
    """Bytes of mapped files this process has touched (kB)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssFile:"):
            return int(line.split()[1])
    pytest.skip("no RssFile in /proc/self/status")


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc")
def test_loading_maps_the_file_and_reads_a_tensor_on_first_use(tmp_path):
    def big(x):
        return [x * k for k in range(1, 5)]  # four 16 MB activations

    log = lw.trace(FunctionModule(big), torch.randn(2048, 2048))
    log.save(tmp_path / "big")
    del log
    # a first load maps the libraries it uses: not part of what is measured
    lw.trace(FunctionModule(torch.relu), torch.randn(3)).save(tmp_path / "small")
    lw.load(tmp_path / "small").validate()
    one = 2048 * 2048 * 4 // 1024  # kB of one activation
    before = _rss_file_kb()
    loaded = lw.load(tmp_path / "big")
    after_load = _rss_file_kb()
    assert after_load - before < one // 4  # nothing read but headers and metadata
    first = loaded["mul_1_1:1"].activation
    assert float(first[-1, -1]) == float(first[-1, -1])  # touches one page
    assert _rss_file_kb() - after_load < one // 4
    first.sum()  # reads the whole tensor
    after_read = _rss_file_kb()
    assert after_read - after_load >= one * 3 // 4
    assert after_read - after_load < 2 * one  # ... and only that one
    # the mapping is private: writing into a loaded tensor leaves the file as saved
    saved = first.clone()
    first.add_(1)
    assert torch.equal(lw.load(tmp_path / "big")["mul_1_1:1"].activation, saved)


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc")
def test_loading_many_small_tensors_reads_none_of_them(tmp_path):
    def small(x):
        return [x + k for k in range(512)]  # 512 activations of 64 kB

    lw.trace(FunctionModule(small), torch.randn(16384)).save(tmp_path / "small")
    lw.trace(FunctionModule(torch.relu), torch.randn(3)).save(tmp_path / "warm")
    lw.load(tmp_path / "warm").validate()
    before = _rss_file_kb()
    loaded = lw.load(tmp_path / "small")
    assert _rss_file_kb() - before < 32 * 1024 // 8  # under an eighth of the 32 MB saved
    assert len(loaded.ops) == 512
