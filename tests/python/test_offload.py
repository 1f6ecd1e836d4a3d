"""Saved values past a memory budget go to disk while the pass runs (``offload=path``): the
values are those of an in-memory trace, bit for bit; a write reaching a value still
waiting to be written waits for it; a failing disk is a clear error that loses neither the
forward's result nor what was written; a save links the shards instead of copying them."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
import torch
from cleanup_checks import compare_with_plain_forward
from torch import nn

import lens_widget as lw
from lens_widget.capture.offload import offload as offload_module
from lens_widget.capture.offload import shard_writer
from lens_widget.capture.offload.offload import OffloadSpec, parse_budget
from lens_widget.log.disk_values import DiskValues
from model_zoo import TEST_MODELS

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning")
REPO = Path(__file__).resolve().parents[2]


def _values(log: lw.ModelLog) -> list[tuple[str, int, torch.Tensor]]:
    return [(n.label, i, t) for n in log.nodes for i, t in enumerate(n.activations or ())]


def assert_same_values(actual: lw.ModelLog, expected: lw.ModelLog) -> int:
    """Every saved value equal (bits, shape, dtype); how many of `actual`'s are on disk."""
    got, want = _values(actual), _values(expected)
    assert [(label, i) for label, i, _ in got] == [(label, i) for label, i, _ in want]
    on_disk = 0
    for (label, _, a), (_, _, b) in zip(got, want, strict=True):
        assert a.dtype == b.dtype and a.shape == b.shape, label
        assert (
            torch.equal(a, b)
            or torch.equal(a.isnan(), b.isnan())
            and torch.equal(a.nan_to_num(), b.nan_to_num())
        ), label
        if actual.disk_values is not None and actual.disk_values.entry_of(a) is not None:
            on_disk += 1
    return on_disk


def _disk(log: lw.ModelLog) -> DiskValues:
    assert log.disk_values is not None, "the log has no values on disk"
    return log.disk_values


def _gpt2() -> tuple[nn.Module, tuple[Any, ...]]:
    case = TEST_MODELS["gpt2"]()
    return case.model.eval(), case.args


def _slow_writer(monkeypatch: pytest.MonkeyPatch, **sizes: int) -> None:
    """Offloads with these writer sizes; a value waits until a shard fills or a write needs it."""
    monkeypatch.setattr(shard_writer, "_IDLE_FLUSH_S", 30.0)

    def spec(offload: Any, budget: Any) -> OffloadSpec:
        offload_module.check_writable(Path(offload))
        return OffloadSpec(Path(offload), 0, **sizes)

    for module in ("lens_widget.capture.trace", "lens_widget.capture.tracing"):
        monkeypatch.setattr(f"{module}.offload_spec", spec)


# ---- values -------------------------------------------------------------------------------


def test_offloaded_values_are_the_in_memory_values_bit_for_bit(tmp_path: Path) -> None:
    model, args = _gpt2()
    with torch.no_grad():
        expected = lw.trace(model, args)
        log = lw.trace(model, args, offload=tmp_path / "acts")
    on_disk = assert_same_values(log, expected)
    # all but the weights (references to the model's), the outputs and empty values
    kept = [
        t for n in log.nodes if n.kind not in ("param", "buffer", "output")
        for t in n.activations or () if t.untyped_storage().nbytes()
    ]  # fmt: skip
    assert on_disk == len(kept) > 50
    shards = sorted((tmp_path / "acts").iterdir())
    assert shards and all(p.suffix == ".safetensors" for p in shards)
    assert log.disk_values is not None and log.disk_values.shards
    # each storage once: views (transpose, view, split) share their input's entry
    assert sum(p.stat().st_size for p in shards) < 1.05 * log.disk_values.nbytes + 4096 * len(
        shards
    )
    assert log.validate().checked == len(log.ops)


def test_the_budget_keeps_the_first_values_in_memory_and_the_rest_on_disk(tmp_path: Path) -> None:
    model, args = _gpt2()
    with torch.no_grad():
        expected = lw.trace(model, args)
        log = lw.trace(model, args, offload=tmp_path, memory_budget="40kB")
    on_disk = assert_same_values(log, expected)
    assert 0 < on_disk < len(_values(log))
    first_on_disk = next(
        n.index for n in log.ops if any(_disk(log).entry_of(t) for t in n.activations or ())
    )
    assert first_on_disk > 0  # the first ops' values fit the budget


@pytest.mark.parametrize(
    ("text", "value"),
    [("2GB", 2 * 10**9), ("512 MiB", 512 << 20), ("1.5gb", 15 * 10**8), (1234, 1234), ("0", 0)],
)
def test_memory_budget_reads_sizes(text: Any, value: int) -> None:
    assert parse_budget(text) == value


@pytest.mark.parametrize("bad", ["2 parsecs", "-1GB", "", -5, 1.5, True])
def test_a_bad_memory_budget_is_a_clear_error_before_anything_runs(
    bad: Any, tmp_path: Path
) -> None:
    calls = []
    model = nn.Linear(2, 2)
    model.register_forward_hook(lambda *a: calls.append(1))
    with pytest.raises((ValueError, TypeError), match="memory_budget"):
        lw.trace(model, torch.ones(1, 2), offload=tmp_path, memory_budget=bad)
    assert calls == []


def test_memory_budget_without_offload_says_what_is_missing() -> None:
    with pytest.raises(ValueError, match="offload=path"):
        lw.trace(nn.Linear(2, 2), torch.ones(1, 2), memory_budget="1GB")
    with pytest.raises(ValueError, match="offload=path"):
        lw.tracing(nn.Linear(2, 2), memory_budget="1GB")


def test_the_world_comes_out_as_a_plain_run_leaves_it(tmp_path: Path) -> None:
    case = TEST_MODELS["gpt2"]()
    compare_with_plain_forward(
        case.model.train(), case.args,
        trace=lambda m, a, k: lw.trace(m, a, k, offload=tmp_path),
    )  # fmt: skip


# ---- writes -------------------------------------------------------------------------------


class WritesSaved(nn.Module):
    """In-place writes to values saved just before (relu_ on a conv output, add_ on its input)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.fc = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(x)
        y.relu_()
        y.mul_(2).add_(1)
        z = y.mean((2, 3))
        z += 3
        return self.fc(z)


def test_a_write_to_a_value_still_waiting_to_be_written_waits_for_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model, x = WritesSaved(), torch.randn(2, 3, 8, 8)
    expected = lw.trace(model, x)
    _slow_writer(monkeypatch, shard_bytes=1 << 40, pending_limit=1 << 40)
    log = lw.trace(model, x, offload=tmp_path)
    assert assert_same_values(log, expected) > 0
    conv = log["conv"]
    assert torch.equal(conv.activation, model.conv(x))  # as produced, before relu_ wrote it
    assert log.validate().checked == len(log.ops)


def test_a_write_no_call_showed_is_reported_as_in_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Hidden(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = x * 2
            with torch._C.DisableTorchFunction():  # a write the tracer cannot see
                y.add_(1)
            return y + 1

    _slow_writer(monkeypatch, shard_bytes=1 << 40, pending_limit=1 << 40)
    with pytest.warns(UserWarning, match="could not see"):
        lw.trace(Hidden(), torch.ones(3), offload=tmp_path)


def test_backpressure_bounds_the_values_waiting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With tiny shards and a tiny queue every value still arrives, in many shards."""
    model, args = _gpt2()
    with torch.no_grad():
        expected = lw.trace(model, args)
    _slow_writer(monkeypatch, shard_bytes=4096, pending_limit=8192)
    with torch.no_grad():
        log = lw.trace(model, args, offload=tmp_path)
    assert assert_same_values(log, expected) > 0
    assert len(_disk(log).shards) > 5


# ---- failures -----------------------------------------------------------------------------


def test_a_path_that_cannot_be_written_fails_before_anything_runs(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    calls = []
    model = nn.Linear(2, 2)
    model.register_forward_hook(lambda *a: calls.append(1))
    with pytest.raises(lw.OffloadError, match=str(blocker / "acts")):
        lw.trace(model, torch.ones(1, 2), offload=blocker / "acts")
    assert calls == []


def _failing_disk(monkeypatch: pytest.MonkeyPatch, after: int) -> None:
    """The disk fills up after `after` shards."""
    real = shard_writer.save_file
    written = []

    def save_file(tensors: Any, path: str, metadata: Any = None) -> None:
        if len(written) >= after:
            raise OSError(errno.ENOSPC, "No space left on device")
        written.append(path)
        real(tensors, path, metadata=metadata)

    monkeypatch.setattr(shard_writer, "save_file", save_file)


def test_a_disk_that_fills_up_mid_pass_keeps_the_output_and_what_was_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model, args = _gpt2()
    with torch.no_grad():
        expected = lw.trace(model, args)
        plain = model(*args)
    _slow_writer(monkeypatch, shard_bytes=16384, pending_limit=32768)
    _failing_disk(monkeypatch, after=2)
    weights = {k: v.clone() for k, v in model.state_dict().items()}
    with torch.no_grad(), pytest.raises(lw.OffloadError) as caught:
        lw.trace(model, args, offload=tmp_path)
    err = caught.value
    assert str(tmp_path) in str(err) and "No space left" in str(err)
    log = lw.partial_log(err)
    assert log is not None and len(log.ops) == len(expected.ops)
    assert torch.equal(log.output.logits, plain.logits)  # the forward's result is not lost
    assert all(torch.equal(v, model.state_dict()[k]) for k, v in weights.items())
    kept = {(label, i): t for label, i, t in _values(log)}
    on_disk = [k for k, t in kept.items() if _disk(log).entry_of(t) is not None]
    assert on_disk  # what was written is kept
    for label, i, t in _values(expected):
        if (label, i) in kept:
            assert torch.equal(kept[label, i], t), label
    assert len(kept) < len(_values(expected))  # what could not be written was dropped...
    in_memory = [
        op.label for op in log.ops for t in op.activations or ()
        if t.untyped_storage().nbytes() and _disk(log).entry_of(t) is None
    ]  # fmt: skip
    assert in_memory == []  # ...not kept in memory: the budget (0) holds


def test_a_forward_that_raises_keeps_its_own_exception_when_the_disk_fails_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Fails(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            for _ in range(20):
                x = x * 1.5
            raise KeyError("the model's own error")

    _slow_writer(monkeypatch, shard_bytes=256, pending_limit=512)
    _failing_disk(monkeypatch, after=1)
    with pytest.raises(KeyError, match="own error") as caught:
        lw.trace(Fails(), torch.ones(16), offload=tmp_path)
    notes = "\n".join(getattr(caught.value, "__notes__", []))
    assert "offload=" in notes and "No space left" in notes
    assert lw.partial_log(caught.value) is not None


# ---- gradients ----------------------------------------------------------------------------


def test_gradients_of_a_traced_backward_honour_the_budget(tmp_path: Path) -> None:
    def step(model: nn.Module, x: torch.Tensor, **options: Any) -> lw.ModelLog:
        torch.manual_seed(0)
        with lw.tracing(model, grads=True, **options) as t:
            model(x).pow(2).sum().backward()
        model.zero_grad()
        return t.log

    model = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 8))
    x = torch.randn(4, 16)
    expected = step(model, x)
    log = step(model, x, offload=tmp_path)
    grads_on_disk = 0
    for a, b in zip(log.ops, expected.ops, strict=True):
        assert (a.grads is None) == (b.grads is None)
        for g, h in zip(a.grads or (), b.grads or (), strict=True):
            assert (g is None) == (h is None)
            if g is not None:
                assert torch.equal(g, h), a.label
                grads_on_disk += _disk(log).entry_of(g) is not None
    assert grads_on_disk >= len(log.ops) - 1


# ---- save and load ------------------------------------------------------------------------


def test_a_save_links_the_shards_and_loads_like_any_save(tmp_path: Path) -> None:
    model, args = _gpt2()
    with torch.no_grad():
        expected = lw.trace(model, args)
        log = lw.trace(model, args, offload=tmp_path / "acts")
    log.save(tmp_path / "saved")
    shards = sorted((tmp_path / "acts").glob("*.safetensors"))
    for shard in shards:
        linked = tmp_path / "saved" / shard.name
        assert os.path.samefile(linked, shard)  # the same file: no bytes copied
    document = json.loads((tmp_path / "saved" / "log.json").read_text())
    # tensor_files came with version 3; GPT-2's mask builder makes it version 5 (functions)
    assert document["version"] == 5 and len(document["tensor_files"]) == len(shards)
    main = (tmp_path / "saved" / "tensors.safetensors").stat().st_size
    in_memory = {
        t.untyped_storage().data_ptr(): t.untyped_storage().nbytes()
        for _, _, t in _values(log) if _disk(log).entry_of(t) is None
    }  # fmt: skip
    assert main <= sum(in_memory.values()) + 65536  # only what stayed in memory (and a header)
    loaded = lw.load(tmp_path / "saved")
    assert_same_values(loaded, expected)
    assert loaded.validate().checked == len(loaded.ops)
    # a loaded offloaded log saves by linking again
    loaded.save(tmp_path / "again")
    assert all(os.path.samefile(tmp_path / "again" / s.name, s) for s in shards)
    assert_same_values(lw.load(tmp_path / "again"), expected)


def test_a_save_into_the_offload_directory_itself(tmp_path: Path) -> None:
    model, args = _gpt2()
    with torch.no_grad():
        expected = lw.trace(model, args)
        log = lw.trace(model, args, offload=tmp_path)
    log.save(tmp_path)
    assert_same_values(lw.load(tmp_path), expected)


def test_a_save_replacing_an_offloaded_save_drops_its_shards(tmp_path: Path) -> None:
    model, args = _gpt2()
    with torch.no_grad():
        first = lw.trace(model, args, offload=tmp_path / "a")
        second = lw.trace(model, args, offload=tmp_path / "b")
    first.save(tmp_path / "saved")
    second.save(tmp_path / "saved")
    names = {p.name for p in (tmp_path / "saved").iterdir()}
    assert names == {"log.json", "tensors.safetensors"} | {
        p.name for p in (tmp_path / "b").iterdir()
    }
    assert_same_values(lw.load(tmp_path / "saved"), second)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("name", "../outside.safetensors", "does not match"),
        ("id", "0" * 32, "different save"),
    ],
)
def test_a_tampered_list_of_files_is_refused(
    tmp_path: Path, field: str, value: str, message: str
) -> None:
    with torch.no_grad():
        log = lw.trace(nn.Linear(64, 64), torch.randn(8, 64), offload=tmp_path / "acts")
    log.save(tmp_path / "saved")
    path = tmp_path / "saved" / "log.json"
    document = json.loads(path.read_text())
    document["tensor_files"][0][field] = value
    path.write_text(json.dumps(document))
    with pytest.raises(lw.LogFormatError, match=message):
        lw.load(tmp_path / "saved")


# ---- memory, measured ---------------------------------------------------------------------


def test_the_peak_stays_within_the_budget_plus_a_plain_forward(tmp_path: Path) -> None:
    """bench/offload_bench.py's model (1 GiB of saved values, a 256 MiB budget), each run in
    a fresh process: the offloaded trace's peak RSS <= budget + the plain peak + 10%."""
    peaks = {}
    for kind in ("plain", "offload"):
        out = subprocess.run(
            [sys.executable, "-m", "bench.offload_bench", "--run", kind],
            cwd=REPO, check=True, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        peaks[kind] = json.loads(out.stdout.strip().splitlines()[-1])
    from bench.offload_bench import BUDGET

    plain, offload = peaks["plain"], peaks["offload"]
    assert offload["saved_bytes"] > 3.5 * BUDGET
    assert offload["peak_mib"] <= BUDGET / (1 << 20) + plain["peak_mib"] * 1.1
    assert offload["disk_bytes"] <= 1.05 * offload["offloaded_bytes"]


def test_no_host_read_on_the_recording_thread(tmp_path: Path) -> None:
    """The offload adds no read of a value on the pass's thread (on CUDA: no sync per op)."""
    from test_trace_no_sync import _plain_reads

    model, args = _gpt2()
    with torch.no_grad():
        plain = _plain_reads(lambda: model(*args))
        traced = _plain_reads(lambda: lw.trace(model, args, offload=tmp_path))
    assert traced == plain


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_on_cuda_values_go_to_disk_through_pinned_memory_without_a_sync(tmp_path: Path) -> None:
    model, args = _gpt2()
    model = model.cuda()
    args = tuple(a.cuda() for a in args)
    with torch.no_grad():
        expected = lw.trace(model, args)
        torch.cuda.synchronize()
        torch.cuda.set_sync_debug_mode("error")
        try:
            log = lw.trace(model, args, offload=tmp_path)
        finally:
            torch.cuda.set_sync_debug_mode("default")
    for (label, _, a), (_, _, b) in zip(_values(log), _values(expected), strict=True):
        assert torch.equal(a.cpu(), b.cpu()), label


def test_warnings_are_quiet_for_a_clean_offloaded_trace(tmp_path: Path) -> None:
    model, args = _gpt2()
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        with torch.no_grad():
            lw.trace(model, args, offload=tmp_path)


# ---- the widget ---------------------------------------------------------------------------


class Chain(nn.Module):
    """200 ops, each a 256 KiB value: 50 MiB on disk."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for _ in range(100):
            x = torch.tanh(x * 1.01)
        return x


def test_the_widget_opens_without_reading_values_and_a_click_reads_only_its_value(
    tmp_path: Path,
) -> None:
    from widget_replies import ask

    from bench.offload_bench import mapped_kib
    from lens_widget.widget import LensWidget

    x = torch.randn(64, 1024)
    with torch.no_grad():
        log = lw.trace(Chain(), x, offload=tmp_path)
    widget = LensWidget.from_log(log)
    assert mapped_kib(tmp_path) == 0  # opening read no value
    op = log.ops[120]
    reply, buffers = ask(widget, "activation", {"id": op.label})
    assert reply["ok"], reply
    read_kib = mapped_kib(tmp_path)
    value_kib = op.activation.untyped_storage().nbytes() / 1024
    # that value (its statistics cover all of it), and the pages the kernel maps around
    # each fault (fault-around, 64 KiB windows)
    assert value_kib <= read_kib <= value_kib + 512
    assert _disk(log).nbytes / 1024 > 20 * read_kib  # far from the whole store (50 MiB)


def test_the_shards_go_with_the_log_unless_saved(tmp_path: Path) -> None:
    import gc

    model, args = _gpt2()
    with torch.no_grad():
        log = lw.trace(model, args, offload=tmp_path / "scratch")
        kept = lw.trace(model, args, offload=tmp_path / "kept")
    value = log.ops[5].activation.clone()
    still_mapped = log.ops[5].activation
    log.save(tmp_path / "saved")
    kept.save(tmp_path / "kept")  # into its own offload directory
    del log, kept
    gc.collect()
    assert list((tmp_path / "scratch").iterdir()) == []  # scratch space, freed with the log
    assert torch.equal(still_mapped, value)  # a value still held stays readable
    assert_same_values(lw.load(tmp_path / "saved"), lw.load(tmp_path / "saved"))
    assert lw.load(tmp_path / "kept").validate().checked > 0


def test_a_widget_traced_with_offload_plots_from_disk_and_reruns(tmp_path: Path) -> None:
    from widget_replies import ask

    from lens_widget.widget import LensWidget

    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 4))
    x = torch.randn(5, 8)
    widget = LensWidget(model, x, save=["linear"], offload=tmp_path, memory_budget=0)
    assert ask(widget, "rerun", {"id": "relu_1_2"})[0]["ok"] is True  # saves it, offloaded too
    log = widget.model_log
    relu = next(op for op in log.ops if op.func == "relu")
    assert _disk(log).entry_of(relu.activation) is not None
    reply, buffers = ask(widget, "activation", {"id": relu.label})
    assert reply["ok"] and reply["result"]["shape"] == [5, 32] and buffers
    assert torch.equal(relu.activation, model[1](model[0](x)))
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(lw.OffloadError, match="a-file"):
        LensWidget(model, x, offload=blocker / "acts")
