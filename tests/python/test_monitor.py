"""lw.Monitor: every op's statistics over the sampled steps of a training run, computed
right (against module hooks), without changing the training (bit for bit), with the first
NaN found and its step kept whole, saved and read back, and written for TensorBoard."""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from torch import nn

import lens_widget as lw
from lens_widget.log.monitor.step_history import STAT_NAMES

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning")


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.drop = nn.Dropout(0.1)
        self.fc2 = nn.Linear(16, 4)
        self.poison_at: int | None = None  # a step whose forward makes a NaN
        self.calls = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.fc1(x))
        if self.calls == self.poison_at:
            h = h * torch.log(h - 1e9)  # log of a negative number: NaN from finite values
        self.calls += 1
        return self.fc2(self.drop(h))


def _train(model: Net, steps: int, monitor: lw.Monitor | None = None) -> torch.optim.Optimizer:
    torch.manual_seed(1)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(steps):
        x, y = torch.randn(4, 8), torch.randn(4, 4)
        context = monitor.step() if monitor is not None else _nothing()
        with context:
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad()
    return opt


class _nothing:  # noqa: N801 - a do-nothing context manager
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def test_training_with_the_monitor_is_bit_equal_to_training_without() -> None:
    torch.manual_seed(0)
    plain = Net()
    watched = copy.deepcopy(plain)
    opt_plain = _train(plain, 7)
    rng_plain = torch.get_rng_state()
    mon = lw.Monitor(watched, every=2)
    opt_watched = _train(watched, 7, mon)
    assert torch.equal(torch.get_rng_state(), rng_plain)
    assert mon.steps == [0, 2, 4, 6]
    for a, b in zip(plain.parameters(), watched.parameters(), strict=True):
        assert torch.equal(a, b)
        assert (a.grad is None) == (b.grad is None)
    for sa, sb in zip(opt_plain.state.values(), opt_watched.state.values(), strict=True):
        assert all(torch.equal(sa[k], sb[k]) for k in sa)


def test_unsampled_steps_run_with_nothing_active() -> None:
    mon = lw.Monitor(Net(), every=3)
    seen = []
    for _ in range(4):
        with mon.step():
            seen.append(
                (torch._C._len_torch_function_stack(), nn.Module._call_impl.__code__ is _TORCH_CODE)
            )
    assert seen == [(1, False), (0, True), (0, True), (1, False)]


# torch's module calls run torch's own code (a trace gives its function the stand-in's)
_TORCH_CODE = nn.Module._call_impl.__code__


def test_statistics_equal_module_hooks_at_the_sampled_steps() -> None:
    """The op that produced each module's output: its activation statistics equal those of
    the output a forward hook sees, and its gradient's those of the gradient a full backward
    hook sees, at every sampled step."""
    torch.manual_seed(0)
    model = Net()
    model.drop.p = 0.0
    seen: dict[tuple[int, str, str], torch.Tensor] = {}
    step = [0]
    for name in ("fc1", "fc2"):
        module = getattr(model, name)
        module.register_forward_hook(
            lambda m, i, o, name=name: seen.__setitem__(
                (step[0], name, "activation"), o.detach().clone()
            )
        )
        module.register_full_backward_hook(
            lambda m, gi, go, name=name: seen.__setitem__(
                (step[0], name, "gradient"), go[0].clone()
            )
        )
    mon = lw.Monitor(model, every=2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for i in range(5):
        step[0] = i
        with mon.step():
            nn.functional.mse_loss(model(torch.randn(4, 8)), torch.randn(4, 4)).backward()
            opt.step()
            opt.zero_grad()
    for record in mon.history:
        row = {label: k for k, label in enumerate(record.ops.labels)}
        outputs = dict(record.ops.outputs)
        for name in ("fc1", "fc2"):
            for side in ("activation", "gradient"):
                expected = seen[record.step, name, side].double()
                values = record.side(side)
                assert values is not None
                got = dict(zip(STAT_NAMES, values[row[outputs[name]]], strict=True))
                assert got["numel"] == expected.numel()
                assert math.isclose(got["mean"], expected.mean().item(), rel_tol=1e-6, abs_tol=1e-9)
                assert math.isclose(got["std"], expected.std().item(), rel_tol=1e-6, abs_tol=1e-9)
                assert got["min"] == expected.min().item() and got["max"] == expected.max().item()
                assert got["nan"] == 0 and got["inf"] == 0


def test_the_first_nan_is_found_and_its_step_kept_whole() -> None:
    torch.manual_seed(0)
    model = Net()
    model.poison_at = 5
    mon = lw.Monitor(model, every=1, keep="nonfinite")
    _train(model, 8, mon)
    found = mon.first_nonfinite()
    assert found is not None
    step, label = found
    assert step == 5 and label.startswith("log")
    kept = mon.kept[5]
    assert isinstance(kept, lw.ModelLog) and kept[label].func == "log"
    assert kept[label].activation.isnan().any() and kept[label].grad is not None
    assert list(mon.kept) == [5]  # only the first non-finite step
    table = mon.to_pandas()
    assert set(table.columns) == {"step", "label", "module", "func", "side", *STAT_NAMES}
    bad = table[(table.step == 5) & (table.label == label) & (table.side == "activation")]
    assert int(bad["nan"].iloc[0]) > 0
    assert table[table.step == 4]["nan"].fillna(0).sum() == 0


def test_keep_takes_a_predicate_and_stats_pick_the_columns() -> None:
    mon = lw.Monitor(Net(), keep=lambda s: s.step == 1, stats=["mean", "absmax"])
    _train(mon_model(mon), 3, mon)
    assert list(mon.kept) == [1]
    assert list(mon.to_pandas().columns) == [
        "step",
        "label",
        "module",
        "func",
        "side",
        "mean",
        "absmax",
    ]


def mon_model(mon: lw.Monitor) -> Net:
    (model,) = mon._modules
    return model


def test_bad_settings_are_clear_errors() -> None:
    with pytest.raises(ValueError, match="every"):
        lw.Monitor(Net(), every=0)
    with pytest.raises(ValueError, match="keep"):
        lw.Monitor(Net(), keep="sometimes")
    with pytest.raises(ValueError, match="unknown statistics"):
        lw.Monitor(Net(), stats=["median"])


def test_a_gan_with_two_optimisers_in_one_section() -> None:
    torch.manual_seed(0)
    gen, disc = nn.Sequential(nn.Linear(4, 8), nn.Tanh()), nn.Sequential(nn.Linear(8, 1))
    opt_g = torch.optim.SGD(gen.parameters(), lr=0.1)
    opt_d = torch.optim.SGD(disc.parameters(), lr=0.1)
    mon = lw.Monitor({"gen": gen, "disc": disc}, every=1)
    for _ in range(3):
        with mon.step():
            fake = gen(torch.randn(2, 4))
            disc(fake.detach()).mean().backward()
            opt_d.step()
            opt_d.zero_grad()
            (-disc(fake).mean()).backward()
            opt_g.step()
            opt_g.zero_grad()
    modules = set(mon.to_pandas().module)
    assert {"gen.0", "disc.0"} <= modules
    assert mon.steps == [0, 1, 2]


def test_a_step_that_raises_is_recorded_and_kept(tmp_path: Path) -> None:
    model = Net()
    mon = lw.Monitor(model)
    with pytest.raises(RuntimeError), mon.step():
        model(torch.randn(4, 3))  # wrong width: raises in fc1
    assert mon.steps == [0] and 0 in mon.kept and mon.kept[0].failed_op is not None


def test_a_kept_step_shows_the_weights_before_the_optimizer_wrote_them() -> None:
    """A monitor that keeps logs copies each parameter before the optimizer writes it; one
    that keeps none does not, and its step's statistics are the same."""
    runs = {}
    for keep in (None, "all"):
        torch.manual_seed(0)
        model = Net()
        before = model.fc1.weight.detach().clone()
        runs[keep] = mon = lw.Monitor(model, every=1, keep=keep)
        _train(model, 1, mon)
        assert not torch.equal(model.fc1.weight, before)  # the optimizer wrote it
    weight = runs["all"].kept[0]["fc1.weight"]
    assert weight.activation is not None and torch.equal(weight.activation, before)
    plain, kept = runs[None].history.steps[0], runs["all"].history.steps[0]
    assert plain.ops == kept.ops
    np.testing.assert_array_equal(plain.activation, kept.activation)
    np.testing.assert_array_equal(plain.gradient, kept.gradient)


# ---- keep and share -----------------------------------------------------------------------


def _watched_run(keep: Any = "nonfinite") -> lw.Monitor:
    torch.manual_seed(0)
    model = Net()
    model.poison_at = 2
    mon = lw.Monitor(model, every=1, keep=keep)
    _train(model, 4, mon)
    return mon


def test_save_and_load_round_trip(tmp_path: Path) -> None:
    mon = _watched_run()
    mon.save(tmp_path / "run")
    back = lw.load_monitor(tmp_path / "run")
    assert back.step_numbers == mon.steps and back.first_nonfinite() == mon.first_nonfinite()
    for a, b in zip(back.steps, mon.history.steps, strict=True):
        assert a.ops == b.ops
        np.testing.assert_array_equal(a.activation, b.activation)
        np.testing.assert_array_equal(a.gradient, b.gradient)  # pyright: ignore[reportArgumentType]
    assert list(back.kept) == [2] and back.kept[2].validate().checked > 0
    assert back.to_pandas().equals(mon.to_pandas())
    mon.save(tmp_path / "run")  # a second save replaces the first
    assert lw.load_monitor(tmp_path / "run").step_numbers == mon.steps


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.update(format="other"), "not a lens_widget monitor"),
        (lambda d: d["steps"][0].update(index=9), "index must name"),
        (lambda d: d["steps"][1].update(kept="../../etc"), "kept must be"),
        (lambda d: d["indexes"][0].update(labels=[1, 2]), "array of strings"),
        (lambda d: d.update(save_id="0" * 32), "another save"),
    ],
)
def test_a_tampered_monitor_file_is_refused(tmp_path: Path, change: Any, message: str) -> None:
    import json

    _watched_run().save(tmp_path)
    document = json.loads((tmp_path / "monitor.json").read_text())
    change(document)
    (tmp_path / "monitor.json").write_text(json.dumps(document))
    with pytest.raises(lw.LogFormatError, match=message):
        lw.load_monitor(tmp_path)


def test_tensorboard_scalars_read_back_with_tensorboards_reader(tmp_path: Path) -> None:
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    mon = _watched_run()
    mon.to_tensorboard(tmp_path / "tb")
    events = EventAccumulator(str(tmp_path / "tb"), size_guidance={"scalars": 0})
    events.Reload()
    tags = events.Tags()["scalars"]
    record = mon.history.steps[0]
    label = next(
        lbl for lbl, m in zip(record.ops.labels, record.ops.modules, strict=True) if m == "fc1"
    )
    tag = f"fc1/{label}/activation/mean"
    assert tag in tags and "fc1/(output)/gradient/std" in tags
    assert [e.step for e in events.Scalars(tag)] == mon.steps
    series = mon.history.series(label)
    assert [e.value for e in events.Scalars(tag)] == pytest.approx(
        series["mean"], rel=1e-6, nan_ok=True
    )


def test_the_graph_of_the_first_step_is_kept_without_values(tmp_path: Path) -> None:
    import gc
    import weakref

    mon = _watched_run(keep=None)
    structure = mon.history.structure
    assert structure is not None and len(structure.ops) == len(mon.history.steps[0].ops)
    assert all(n.activations is None and n.grads is None for n in structure.nodes)
    logs = []
    mon.on_step(lambda stats: logs.append(stats.step))
    model = mon_model(mon)
    with mon.step():
        model(torch.randn(4, 8)).sum().backward()
    assert logs == [4]
    mon.save(tmp_path)
    back = lw.load_monitor(tmp_path)
    assert back.structure is not None
    assert [n.label for n in back.structure.ops] == [n.label for n in structure.ops]
    ref = weakref.ref(mon)
    del mon
    gc.collect()
    assert ref() is None


def test_a_listener_can_be_removed_and_drops_itself_by_returning_false() -> None:
    model = Net()
    mon = lw.Monitor(model)
    heard: list[str] = []
    stop = mon.on_step(lambda s: heard.append("a"))
    mon.on_step(lambda s: heard.append("b") or False)  # a view that is gone
    for _ in range(2):
        with mon.step():
            model(torch.randn(4, 8)).sum().backward()
        stop()
    assert heard == ["a", "b"] and mon._listeners == []
