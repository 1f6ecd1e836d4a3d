"""validate() replays what a correct trace recorded, or says why it skipped an op; it never
crashes on a correct trace (issue 11, item 4)."""

from __future__ import annotations

import torch
from function_module import FunctionModule
from torch import nn

import lens_widget as lw


def test_ops_under_autocast_replay_under_the_same_autocast(tmp_path):
    model = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 4))

    class Autocast(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = model

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            with torch.autocast("cpu", dtype=torch.bfloat16):
                return self.inner(x).float()

    log = lw.trace(Autocast(), torch.randn(3, 8))
    assert log["inner.0"].dtype == "bfloat16"
    report = log.validate()
    assert report.checked == len(log.ops) and not report.skipped
    # and after a save: the file keeps the autocast each op ran under
    loaded = _saved_and_loaded(log, tmp_path)
    assert loaded["inner.0"].replay[0].autocast == (("cpu", torch.bfloat16),)
    report = loaded.validate()  # raised "replay gave float32, saved bfloat16" before
    assert report.checked == len(log.ops) and not report.skipped


def test_random_init_inside_forward_replays_with_its_rng_state():
    def init_then_use(x: torch.Tensor) -> torch.Tensor:
        weight = torch.empty(4, 4)
        torch.nn.init.kaiming_uniform_(weight)
        bias = torch.empty(4)
        torch.nn.init.xavier_normal_(bias.view(2, 2))
        return x @ weight + bias

    log = lw.trace(FunctionModule(init_then_use), torch.randn(2, 4))
    report = log.validate()
    assert "kaiming_uniform_" in [op.func for op in log.ops]
    assert report.checked == len(log.ops) and not report.skipped


def test_autograd_grad_inside_forward_does_not_crash_validate():
    class InnerLoop(nn.Module):
        """A MAML-style inner step: a gradient taken inside forward."""

        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(4, 1)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            loss = self.fc(x).pow(2).mean()
            (grad,) = torch.autograd.grad(loss, self.fc.weight, create_graph=True)
            adapted = self.fc.weight - 0.1 * grad
            return x @ adapted.t()

    log = lw.trace(InnerLoop(), torch.randn(3, 4))
    report = log.validate()
    assert report.checked + len(report.skipped) == len(log.ops)
    assert report.checked > 0
    assert all(reason for reason in report.skipped.values())


def test_sparse_coo_input_does_not_crash_validate():
    indices = torch.tensor([[0, 1, 2], [2, 0, 1]])
    sparse = torch.sparse_coo_tensor(indices, torch.tensor([1.0, 2.0, 3.0]), (3, 3))

    def use_sparse(a: torch.Tensor, dense: torch.Tensor) -> torch.Tensor:
        doubled = (a * 2).coalesce()  # sparse outputs: torch.equal has no sparse kernel
        return (torch.sparse.mm(doubled, dense) + a.to_dense() @ dense).relu()

    log = lw.trace(FunctionModule(use_sparse), (sparse, torch.randn(3, 2)))
    report = log.validate()
    assert report.checked + len(report.skipped) == len(log.ops)
    assert report.checked > 0
    assert all(reason for reason in report.skipped.values())


def test_a_replay_that_raises_is_skipped_with_the_reason():
    class Flaky(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.relu(x) + 1

    log = lw.trace(Flaky(), torch.randn(3))
    relu = log.ops[0]

    def refuse(*args: object, **kwargs: object) -> None:
        raise NotImplementedError("no replay for this")

    relu.replay[0].func = refuse
    report = log.validate()
    assert "NotImplementedError: no replay for this" in report.skipped[relu.label]
    assert report.checked == len(log.ops) - 1


def test_a_training_step_with_an_optimizer_validates_and_skips_grad_reads(tmp_path):
    """An optimizer step reads `p.grad`, which a replay on a saved copy of `p` cannot; the
    rest of the step (forward, loss, the in-place parameter updates) replays and matches."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.Linear(8, 1))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    x, y = torch.randn(5, 4), torch.randn(5, 1)
    with lw.tracing(model, grads=True) as t:
        nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
        optimizer.zero_grad()
    for log in (t.log, _saved_and_loaded(t.log, tmp_path)):
        report = log.validate()  # raised ValidationError ("replay gave 0 outputs") before
        reads = [op.label for op in log.ops if op.func == "grad"]
        assert reads and sorted(report.skipped) == sorted(reads)
        assert set(report.skipped.values()) == {
            "reads its input's .grad, which saved values do not keep"
        }
        assert report.checked == len(log.ops) - len(reads)
        assert {"addcdiv_", "lerp_", "mse_loss"} <= {op.func for op in log.ops}


def test_reading_the_base_of_a_view_is_skipped_not_a_failure():
    def base_of_view(x: torch.Tensor) -> torch.Tensor:
        return x.view(2, 8)._base * 2

    log = lw.trace(FunctionModule(base_of_view), torch.randn(4, 4).mul(1))
    report = log.validate()
    base = next(op.label for op in log.ops if op.func == "_base")
    assert report.skipped == {base: "reads its input's ._base, which saved values do not keep"}


def _saved_and_loaded(log: lw.ModelLog, tmp_path) -> lw.ModelLog:
    log.save(tmp_path / "step")
    return lw.load(tmp_path / "step")
