"""A traced training step saved and loaded: named leaves with their gradients per pass,
the backward passes (an error in one too), the autograd graph, checkpoint recomputations;
and every reference among them checked when the file is untrusted."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from log_equality import assert_same_log
from saved_files import load_fails, read_doc, tampered
from torch import nn
from torch.utils.checkpoint import checkpoint

import lens_widget as lw
from lens_widget.widget.gradient_payload import gradient_info


class Step(nn.Module):
    """A checkpointed block, a branch cut off by detach (its weights get no gradient) and a
    tensor made inside forward that requires grad (a leaf named by its line)."""

    def __init__(self) -> None:
        super().__init__()
        self.block = nn.Sequential(nn.Linear(4, 4), nn.Tanh())
        self.cut = nn.Linear(4, 4)
        self.head = nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = checkpoint(self.block, x, use_reentrant=False)
        scale = torch.ones(4, requires_grad=True)
        return self.head(h * scale + self.cut(h).detach())


def two_passes(out: torch.Tensor) -> torch.Tensor:
    out.pow(2).mean().backward(retain_graph=True)
    return out.sum()  # the second pass: trace() runs .backward() on it


def traced_step() -> lw.ModelLog:
    torch.manual_seed(0)
    return lw.trace(Step(), (torch.randn(3, 4, requires_grad=True),), backward=two_passes)


def round_trip(log: lw.ModelLog, path: Path) -> lw.ModelLog:
    log.save(path)
    loaded = lw.load(path)
    assert_same_log(log, loaded)  # leaves, passes, the autograd graph and recomputed too
    return loaded


def test_a_training_step_comes_back_whole(tmp_path):
    log = traced_step()
    assert len(log.backward_passes) == 2 and log.recomputed
    assert not log.leaves["cut.weight"].received and log.leaves["head.weight"].received
    assert {leaf.kind for leaf in log.leaves.values()} == {"param", "input", "other"}
    loaded = round_trip(log, tmp_path / "step")
    assert read_doc(tmp_path / "step")["version"] == 3
    # What a person reads of it is the same: the leaf that got no gradient, each pass
    assert [n for n, leaf in loaded.leaves.items() if not leaf.received] == [
        "cut.weight",
        "cut.bias",
    ]
    assert torch.equal(loaded.leaves["head.weight"].grad, log.leaves["head.weight"].grad)
    assert gradient_info(loaded) == gradient_info(log)  # the widget's backward view
    assert loaded.validate().checked == log.validate().checked
    round_trip(loaded, tmp_path / "again")  # a loaded step saves again


def test_a_backward_that_raised_comes_back_with_its_error(tmp_path):
    def twice(out: torch.Tensor) -> None:
        loss = out.exp().sum()
        loss.backward()
        loss.backward()  # the first pass freed exp's saved result

    torch.manual_seed(0)
    with pytest.raises(RuntimeError) as caught:
        lw.trace(nn.Linear(3, 3), (torch.randn(2, 3),), backward=twice)
    log = lw.partial_log(caught.value)
    loaded = round_trip(log, tmp_path / "failed")
    second = loaded.backward_passes[1]
    assert second.freed_by == 1 and "second time" in second.error
    assert second.error_op == log.backward_passes[1].error_op is not None


def test_a_forward_alone_writes_no_backward_and_version_1_files_still_load(tmp_path):
    torch.manual_seed(0)
    log = lw.trace(nn.Linear(3, 3), torch.randn(2, 3))
    log.save(tmp_path / "forward")
    assert "backward" not in read_doc(tmp_path / "forward")
    tampered(tmp_path / "forward", lambda d: d.update(version=1))
    loaded = lw.load(tmp_path / "forward")
    assert_same_log(log, loaded)
    assert loaded.leaves == {} and loaded.backward_graph.number_of_nodes() == 0


def _backward(document: dict) -> dict:
    return document["backward"]


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (
            lambda b: b["leaves"][0].update(label="nowhere"),
            r"backward.leaves\[0\].label: 'nowhere' is not a node",
        ),
        (
            lambda b: b["leaves"][0].update(grads=[]),
            r"backward.leaves\[0\]: 0 gradients for 2 backward passes",
        ),
        (lambda b: b["leaves"][0].update(grads=[10**6, None]), r"names tensor 1000000"),
        (lambda b: b["leaves"][0].update(kind="module"), r"kind: 'module' is not one of"),
        (lambda b: b["leaves"].append(dict(b["leaves"][0])), r"appears twice"),
        (
            lambda b: b["passes"][0]["nodes"].append("Evil_1"),
            r"passes\[0\]: nodes: 'Evil_1' is not a node of the backward graph",
        ),
        (lambda b: b["passes"][1].update(index=5), r"index is 5, but the pass is number 2"),
        (lambda b: b["passes"][1].update(freed_by=9), r"freed_by names pass 9 of 2"),
        (lambda b: b["passes"][0].update(call="eval"), r"call: 'eval' is not one of"),
        (
            lambda b: b["graph"]["edges"].append(["Evil_1", b["graph"]["nodes"][0]["id"]]),
            r"graph.edges\[\d+\]: joins an id that is not a graph node",
        ),
        (
            lambda b: b["graph"]["nodes"][0].update(forward_op="nowhere"),
            r"graph.nodes\[0\].forward_op: 'nowhere' is not a node",
        ),
        (
            lambda b: b["graph"]["nodes"][0].update(leaf="nobody"),
            r"leaf 'nobody' is not a leaf of the log",
        ),
        (lambda b: b["graph"]["nodes"][0].update(passes=[3]), r"backward pass 3 of 2"),
        (lambda b: b["recomputed"][0].update(op="nowhere"), r"recomputed\[0\].op: 'nowhere'"),
        (lambda b: b.update(extra=1), r"backward: unknown field\(s\) 'extra'"),
        (lambda b: b["graph"]["nodes"][0].update(order=-1), r"order: -1 is less than 0"),
        (lambda b: b["passes"][0].update(in_transform="yes"), r"in_transform: 'yes' is not"),
        # a gradient of another shape than its leaf, or than the op's output it flowed into
        (
            lambda b: b["leaves"][0].update(
                grads=next(x["grads"] for x in b["leaves"] if x["shape"] != b["leaves"][0]["shape"])
            ),
            r"backward.leaves\[0\]: a gradient's shape is not the leaf's shape",
        ),
    ],
)
def test_a_tampered_training_step_is_one_clear_error(tmp_path, change, match):
    traced_step().save(tmp_path / "step")
    tampered(tmp_path / "step", lambda d: change(_backward(d)))
    load_fails(tmp_path / "step", match)


def test_an_op_gradient_of_another_shape_is_refused(tmp_path):
    """A node's gradient flowed into its first output: it has that output's shape."""
    traced_step().save(tmp_path / "step")

    def swap(document: dict) -> None:
        nodes = [n for n in document["nodes"] if n.get("grads") and any(n["grads"])]
        a = nodes[0]
        b = next(n for n in nodes if n["shapes"][0] != a["shapes"][0])
        a["grads"] = b["grads"]

    tampered(tmp_path / "step", swap)
    load_fails(tmp_path / "step", r"a saved gradient's shape is not that of its output")
