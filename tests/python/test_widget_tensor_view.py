"""tensor_view: plot kind per shape, kernel-side reduction, stats and histogram."""

import math
import re
from pathlib import Path

import numpy as np
import pytest
import torch

from lens_widget.widget.tensor_view import (
    CHUNK,
    MAX_CHANNELS,
    MAX_HEATMAP,
    MAX_IMAGE,
    MAX_LINE,
    tensor_view,
)


def values(buf: bytes, result: dict) -> np.ndarray:
    arr = np.frombuffer(buf, dtype="<f4")
    assert arr.size == math.prod(result["dataShape"])
    return arr.reshape(result["dataShape"])


@pytest.mark.parametrize(
    ("shape", "plot", "data_shape"),
    [
        ((), "scalar", [1]),
        ((1, 1), "scalar", [1]),
        ((7,), "line", [7]),
        ((1, 768), "line", [768]),
        ((12, 30), "heatmap", [12, 30]),
        ((2, 5, 8, 9), "images", [5, 8, 9]),
        ((3, 6, 1, 1), "heatmap", [3, 6]),
        ((2, 11, 13), "sequence", [11, 13]),
        ((2, 3, 4, 1, 5), "sequence", [3, 20]),
    ],
)
def test_plot_kind_per_shape(shape, plot, data_shape):
    x = torch.randn(shape)
    result, buf = tensor_view(x, node_id="n")
    assert result["plot"] == plot
    assert result["dataShape"] == data_shape
    assert result["shape"] == list(shape)
    assert result["reduced"] is False or plot in ("images", "sequence")
    values(buf, result)


def test_small_values_are_sent_exactly():
    x = torch.randn(12, 30)
    result, buf = tensor_view(x)
    np.testing.assert_array_equal(values(buf, result), x.numpy())
    assert result["note"] == ""
    assert result["reduced"] is False


def test_long_line_is_block_mean_pooled():
    x = torch.arange(MAX_LINE * 3, dtype=torch.float32)
    result, buf = tensor_view(x)
    data = values(buf, result)
    assert result["dataShape"] == [MAX_LINE]
    assert result["reduced"] is True
    assert f"{MAX_LINE * 3} -> {MAX_LINE}" in result["note"]
    np.testing.assert_allclose(data, x.reshape(MAX_LINE, 3).mean(1).numpy())


def test_large_heatmap_pooled_to_limit_with_note():
    x = torch.randn(1024, 300)
    result, buf = tensor_view(x)
    data = values(buf, result)
    assert result["dataShape"] == [MAX_HEATMAP, MAX_HEATMAP]
    assert "rows 1024 -> 256" in result["note"] and "cols 300 -> 256" in result["note"]
    # rows pool by exactly 4: the first output row's mean equals the first 4 rows' mean
    assert data.mean() == pytest.approx(float(x.mean()), abs=1e-3)
    assert data[:, 0].mean() == pytest.approx(float(x[:, :2].mean()), abs=0.05)


def test_images_window_of_channels_of_one_batch_item():
    x = torch.randn(3, 40, 128, 20)
    result, buf = tensor_view(x, batch=2, channel_start=32)
    data = values(buf, result)
    assert result["plot"] == "images"
    assert result["channels"] == {"start": 32, "count": 8, "total": 40}
    assert result["batch"] == {"index": 2, "size": 3}
    assert result["dataShape"] == [8, MAX_IMAGE, 20]
    assert result["reduced"] is True
    np.testing.assert_allclose(
        data[0], x[2, 32].reshape(MAX_IMAGE, 2, 20).mean(1).numpy(), rtol=1e-5, atol=1e-6
    )
    first, _ = tensor_view(x)
    assert first["channels"]["count"] == MAX_CHANNELS


def test_sequence_is_tokens_by_features_of_one_item():
    x = torch.randn(4, 6, 10)
    result, buf = tensor_view(x, batch=3)
    np.testing.assert_array_equal(values(buf, result), x[3].numpy())
    assert result["batch"] == {"index": 3, "size": 4}
    assert result["reduced"] is True  # one of four items


@pytest.mark.parametrize(
    ("shape", "kwargs"),
    [
        ((2, 3, 4, 4), {"batch": 2}),
        ((2, 3, 4, 4), {"channel_start": 3}),
        ((2, 5, 6), {"batch": -1}),
    ],
)
def test_out_of_range_indices_raise(shape, kwargs):
    with pytest.raises(ValueError, match="out of range"):
        tensor_view(torch.zeros(shape), **kwargs)


def test_stats_match_torch_and_hist_counts_finite_values():
    x = torch.randn(50, 70) * 3 + 1
    x[0, :5] = 0
    x[1, 0] = float("nan")
    x[1, 1] = float("inf")
    x[1, 2] = float("-inf")
    result, _ = tensor_view(x)
    s = result["stats"]
    finite = x[torch.isfinite(x)].double()
    assert s["numel"] == x.numel()
    assert s["nan"] == 1 and s["inf"] == 2
    assert s["min"] == pytest.approx(float(finite.min()))
    assert s["max"] == pytest.approx(float(finite.max()))
    assert s["mean"] == pytest.approx(float(finite.mean()))
    assert s["std"] == pytest.approx(float(finite.std()))
    assert s["zeros"] == pytest.approx(float((x == 0).sum()) / x.numel())
    hist = result["hist"]
    assert len(hist["counts"]) == 64 and len(hist["edges"]) == 65
    assert sum(hist["counts"]) == finite.numel()
    assert hist["edges"][0] == s["min"] and hist["edges"][-1] == s["max"]
    expected, _ = np.histogram(finite.numpy(), bins=np.array(hist["edges"]))
    # bins can differ at float rounding on the edges; totals and shape must agree
    assert np.abs(expected - np.array(hist["counts"])).sum() <= 4


@pytest.mark.parametrize(
    ("tensor", "dtype"),
    [
        (torch.tensor([True, False, True, True]), "bool"),
        (torch.tensor([3, -1, 7], dtype=torch.int64), "int64"),
        (torch.tensor([1 + 1j, 3 - 4j]), "complex64"),
        (torch.randn(5).half(), "float16"),
    ],
)
def test_non_float_dtypes_are_cast(tensor, dtype):
    result, buf = tensor_view(tensor)
    data = values(buf, result)
    assert result["dtype"] == dtype
    expected = tensor.abs() if tensor.is_complex() else tensor
    np.testing.assert_allclose(data, expected.float().numpy(), rtol=1e-3)
    assert result["stats"]["mean"] == pytest.approx(float(expected.double().mean()), rel=1e-3)
    if tensor.is_complex():
        assert "magnitude" in result["note"]


def test_constant_and_non_finite_tensors():
    const, _ = tensor_view(torch.full((10,), 2.5))
    assert const["stats"]["std"] == 0 and sum(const["hist"]["counts"]) == 10
    assert const["hist"]["edges"][0] < 2.5 < const["hist"]["edges"][-1]
    nan, buf = tensor_view(torch.full((3,), float("nan")))
    assert nan["stats"]["nan"] == 3 and nan["hist"]["counts"] == []
    assert np.isnan(np.frombuffer(buf, dtype="<f4")).all()
    empty, buf = tensor_view(torch.zeros(0, 4))
    assert empty["dataShape"] == [0] and buf == b"" and empty["stats"]["numel"] == 0


@pytest.mark.parametrize(
    "tensor",
    [torch.empty(4, 0), torch.empty(0), torch.randn(3, 5)[:, :0], torch.empty(0, 2, 3, 3)],
    ids=["4x0", "0", "slice", "images"],
)
def test_an_empty_tensor_has_no_statistics(tensor):
    """Zero elements have no min, max, mean, std or share of zeros: null, not an invented 0."""
    result, buf = tensor_view(tensor)
    assert result["stats"] == {
        "numel": 0, "min": None, "max": None, "mean": None, "std": None, "zeros": None,
        "nan": 0, "inf": 0,
    }  # fmt: skip
    assert result["hist"] == {"edges": [], "counts": []}
    assert result["shape"] == list(tensor.shape) and result["dataShape"] == [0] and buf == b""


def test_all_nan_has_counts_but_no_value_statistics():
    result, _ = tensor_view(torch.tensor([float("nan"), float("inf"), 0.0, float("nan")])[:2])
    s = result["stats"]
    assert (s["nan"], s["inf"], s["zeros"]) == (1, 1, 0.0)
    assert [s[k] for k in ("min", "max", "mean", "std")] == [None] * 4


def test_nan_and_inf_reach_the_frontend_where_they_are():
    """The float32 buffer keeps NaN and ±Inf in their cells (the plot greys them); the JSON
    stays strict and its stats count them over the full tensor."""
    import json

    x = torch.log(torch.tensor([[1.0, -1.0, 2.0, 0.0], [3.0, -2.0, 1.0, 0.5]]))
    x[1, 3] = float("inf")
    result, buf = tensor_view(x)
    got = values(buf, result)
    assert np.isnan(got).tolist() == [[False, True, False, False], [False, True, False, False]]
    assert got[0, 3] == -np.inf and got[1, 3] == np.inf
    assert result["stats"]["nan"] == 2 and result["stats"]["inf"] == 2
    json.dumps(result, allow_nan=False)
    # pooling keeps a cell that holds a NaN or an Inf non-finite, never averaged away
    big = torch.randn(600, 600)
    big[0, 0], big[599, 599] = float("nan"), float("-inf")
    result, buf = tensor_view(big.half())
    pooled = values(buf, result)
    assert result["reduced"] and np.isnan(pooled[0, 0]) and pooled[-1, -1] == -np.inf
    assert np.isfinite(pooled).sum() == pooled.size - 2
    assert result["stats"]["nan"] == 1 and result["stats"]["inf"] == 1


def test_little_endian_float32_buffer():
    result, buf = tensor_view(torch.tensor([1.0, -2.0]))
    assert buf == np.array([1.0, -2.0], dtype="<f4").tobytes()
    assert result["plot"] == "line"


def test_extreme_values_stay_json_safe():
    import json

    x = torch.tensor([1e308, -1e308, 1e308, 5.0], dtype=torch.float64)
    result, _ = tensor_view(x)
    json.dumps(result, allow_nan=False)
    assert result["stats"]["mean"] == pytest.approx(float((x / 1e308).mean() * 1e308))
    assert sum(result["hist"]["counts"]) == 4
    assert result["hist"]["edges"][0] == -1e308 and result["hist"]["edges"][-1] == 1e308


@pytest.mark.parametrize(
    ("shape", "kwargs", "expected"),
    [
        ((4, 6, 10), {"batch": 0}, ["batch 0 of 4"]),
        ((4, 6, 10), {"batch": 3}, ["batch 3 of 4"]),
        ((3, 40, 8, 8), {"batch": 1}, ["batch 1 of 3", "channels 0..15 of 40"]),
        ((1, 40, 8, 8), {"channel_start": 32}, ["channels 32..39 of 40"]),
        ((1, 4, 100, 8), {}, ["rows 100 -> 64"]),
        ((1, 300, 12), {}, ["rows 300 -> 256"]),
        ((MAX_LINE + 1,), {}, [f"points {MAX_LINE + 1} -> {MAX_LINE}"]),
        ((2, 3, 4, 1, 5), {}, ["batch 0 of 2", "dims 4x1x5 flattened"]),
    ],
)
def test_every_reduction_is_named_in_the_note(shape, kwargs, expected):
    result, _ = tensor_view(torch.randn(shape), **kwargs)
    assert result["reduced"] is True
    assert result["note"] != ""
    for text in expected:
        assert text in result["note"]


@pytest.mark.parametrize("shape", [(), (7,), (12, 30), (1, 3, 8, 8), (1, 5, 9)])
def test_unreduced_views_have_no_note(shape):
    result, _ = tensor_view(torch.randn(shape))
    assert result["reduced"] is False
    assert result["note"] == ""


# ---- large tensors: reduced before converting, in bounded pieces ------------------------


def test_stats_of_a_tensor_larger_than_a_chunk_match_float64():
    x = torch.randn(3 * CHUNK + 17) * 5 + 2
    x[::100_003] = float("nan")
    x[CHUNK + 5] = float("inf")
    x[2 * CHUNK + 9] = float("-inf")
    x[10:30] = 0
    result, _ = tensor_view(x)
    s = result["stats"]
    finite = x[torch.isfinite(x)].double()
    assert s["nan"] == int(torch.isnan(x).sum()) and s["inf"] == 2
    assert s["min"] == float(finite.min()) and s["max"] == float(finite.max())
    assert s["mean"] == pytest.approx(float(finite.mean()), rel=1e-12)
    assert s["std"] == pytest.approx(float(finite.std()), rel=1e-12)
    assert s["zeros"] == float((x == 0).sum()) / x.numel()
    expected = torch.histc(finite, 64, s["min"], s["max"])
    assert result["hist"]["counts"] == [int(c) for c in expected.tolist()]


def test_a_large_non_contiguous_tensor_gives_the_same_view():
    x = torch.randn(1100, 700).t()  # 770k elements, a transposed view
    result, buf = tensor_view(x)
    same, same_buf = tensor_view(x.contiguous())
    assert result["stats"] == pytest.approx(same["stats"], rel=1e-12)
    assert result["hist"] == same["hist"] and buf == same_buf


@pytest.mark.parametrize(
    ("shape", "kwargs"),
    [
        ((CHUNK * 2 + 123,), {}),  # line: 4096 windows of uneven length
        ((1111, 997), {}),  # heatmap: rows and cols pooled unevenly
        ((2, 3, 700, 400), {"batch": 1}),  # images
        ((2, 600, 900), {"batch": 1}),  # sequence
    ],
)
def test_integer_tensors_pool_like_their_float_copy(shape, kwargs):
    x = torch.randint(-1000, 1000, shape)
    assert x.numel() > CHUNK or x[0].numel() > CHUNK // 2
    result, buf = tensor_view(x, **kwargs)
    expected, expected_buf = tensor_view(x.double(), **kwargs)
    assert result["dataShape"] == expected["dataShape"] and result["note"] == expected["note"]
    np.testing.assert_allclose(values(buf, result), values(expected_buf, expected), atol=1e-3)
    assert result["stats"] == pytest.approx(expected["stats"], rel=1e-12)


def test_large_bfloat16_pools_in_its_own_dtype_close_to_float32():
    x = torch.randn(1500, 1200)
    result, buf = tensor_view(x.bfloat16())
    expected, expected_buf = tensor_view(x.bfloat16().float())
    assert result["dtype"] == "bfloat16" and result["dataShape"] == expected["dataShape"]
    np.testing.assert_allclose(values(buf, result), values(expected_buf, expected), atol=0.02)


def resident_kib(field: str) -> int:
    status = Path("/proc/self/status").read_text()
    return int(re.search(rf"{field}:\s+(\d+) kB", status)[1])


def peak_growth(call) -> int:
    """Bytes by which this process's peak resident memory grows during `call()`."""
    Path("/proc/self/clear_refs").write_text("5")  # the peak starts again from the present
    before = resident_kib("VmHWM")
    call()
    return (resident_kib("VmHWM") - before) * 1024


@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="needs Linux /proc")
@pytest.mark.parametrize(
    ("shape", "dtype"),
    [
        ((2048, 4096), torch.float32),  # heatmap, 32 MiB
        ((2, 2048, 4096), torch.bfloat16),  # sequence
        ((2, 16, 512, 256), torch.int64),  # images
    ],
)
def test_one_request_costs_a_small_fraction_of_the_tensor_in_memory(shape, dtype):
    """A float64 copy of the tensor (converting before reducing) would grow the peak by 2x
    for float32; the chunked statistics and the pooled window take about a MiB."""
    tensor_view(torch.randn(3, 4, 70, 70).to(dtype))  # load lazy code and kernels first
    x = torch.empty(shape, dtype=dtype)  # filled in place: no temporary copy
    x.normal_() if dtype.is_floating_point else x.random_(-1000, 1000)
    growth = peak_growth(lambda: tensor_view(x))
    assert growth < 0.5 * x.numel() * x.element_size()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_a_cuda_tensor_is_reduced_on_the_device():
    x = torch.randn(3, 8, 300, 200)
    result, buf = tensor_view(x.cuda(), batch=2)
    expected, expected_buf = tensor_view(x, batch=2)
    assert result["dataShape"] == expected["dataShape"]
    np.testing.assert_allclose(values(buf, result), values(expected_buf, expected), rtol=1e-4)
    assert result["stats"] == pytest.approx(expected["stats"], rel=1e-6)
