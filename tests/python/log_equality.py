"""Two ModelLogs are the same log: records, tensors (bit for bit), graphs, modules, summary."""

from __future__ import annotations

import dataclasses

import torch

from lens_widget.log.records import OpRecord

# Fields compared separately: tensors (activations, grads) bit for bit, replays by what
# validate() makes of them; _flops and _stats are metrics computed on use.
NOT_PLAIN = {"activations", "replay", "_flops", "_stats", "grads"}


def tensor_bytes(tensor: torch.Tensor) -> bytes:
    """The values' bits, in logical order (conjugate/negative views resolved)."""
    # standard strides: a one-element tensor can be "contiguous" with a stride of 8
    t = (
        tensor.resolve_conj()
        .resolve_neg()
        .detach()
        .cpu()
        .clone(memory_format=torch.contiguous_format)
    )
    if t.is_complex():
        t = torch.view_as_real(t)
    return t.reshape(-1).view(torch.uint8).numpy().tobytes()


def assert_same_tensor(a: torch.Tensor, b: torch.Tensor, what: str) -> None:
    assert b.layout == a.layout, what
    if a.layout == torch.sparse_coo:  # the same indices and values, in the same order
        assert b.shape == a.shape and b.is_coalesced() == a.is_coalesced(), what
        assert_same_tensor(a._indices(), b._indices(), f"{what} indices")
        assert_same_tensor(a._values(), b._values(), f"{what} values")
        return
    assert b.dtype == a.dtype, what
    assert b.shape == a.shape, what
    assert b.stride() == a.stride(), what
    assert b.storage_offset() == a.storage_offset(), what
    assert b.is_conj() == a.is_conj() and b.is_neg() == a.is_neg(), what
    assert tensor_bytes(b) == tensor_bytes(a), what
    try:
        has_nan = (a.is_floating_point() or a.is_complex()) and bool(torch.isnan(a).any())
        if not has_nan:
            assert torch.equal(a, b), what
    except (NotImplementedError, RuntimeError):  # dtypes torch cannot compare (complex32)
        pass


def assert_same_tensors(a: tuple | None, b: tuple | None, what: str) -> None:
    assert (a is None) == (b is None), what
    if a is not None:
        assert len(a) == len(b), what
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same_tensor(x, y, f"{what} output {i}")


def sharing(log) -> list[list[tuple[str, int]]]:
    """Which saved tensors share memory: groups of (label, output index), by storage."""
    groups: dict[int, list[tuple[str, int]]] = {}
    for node in log.nodes:
        for i, t in enumerate(node.activations or ()):
            if t.layout == torch.sparse_coo:
                t = t._values()
            storage = t.untyped_storage()
            if storage.nbytes():
                groups.setdefault(storage.data_ptr(), []).append((node.label, i))
    return sorted(groups.values())


def _plain(value):
    if isinstance(value, OpRecord):
        return value.label
    if isinstance(value, list) and value and isinstance(value[0], OpRecord):
        return [r.label for r in value]
    return value


def graph_data(graph) -> tuple:
    nodes = [(n, {k: _plain(v) for k, v in d.items()}) for n, d in graph.nodes(data=True)]
    edges = [(u, v, d) for u, v, d in graph.edges(data=True)]
    return dict(graph.graph), nodes, edges


def assert_same_nodes(original, other) -> None:
    """The same nodes in the same order: every plain field, and saved tensors bit for bit."""
    assert [n.label for n in other.nodes] == [n.label for n in original.nodes]
    for a, b in zip(original.nodes, other.nodes, strict=True):
        for f in dataclasses.fields(OpRecord):
            if f.name not in NOT_PLAIN:
                assert getattr(b, f.name) == getattr(a, f.name), (a.label, f.name)
        assert_same_tensors(a.activations, b.activations, a.label)
        assert_same_grads(a.grads, b.grads, f"{a.label} grads")


def assert_same_grads(a: tuple | None, b: tuple | None, what: str) -> None:
    """Gradients per backward pass, None where a pass did not reach."""
    assert (a is None) == (b is None), what
    if a is not None:
        assert [g is None for g in b] == [g is None for g in a], what
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            if x is not None:
                assert_same_tensor(x, y, f"{what} pass {i + 1}")


def assert_same_training_step(original, loaded) -> None:
    """Leaves (with gradients), backward passes, the autograd graph, recomputed ops."""
    assert list(loaded.leaves) == list(original.leaves)
    for name, leaf in original.leaves.items():
        other = loaded.leaves[name]
        for f in dataclasses.fields(leaf):
            if f.name != "grads":
                assert getattr(other, f.name) == getattr(leaf, f.name), (name, f.name)
        assert_same_grads(leaf.grads, other.grads, f"leaf {name}")
    assert [dataclasses.astuple(p) for p in loaded.backward_passes] == [
        dataclasses.astuple(p) for p in original.backward_passes
    ]
    assert graph_data(loaded.backward_graph) == graph_data(original.backward_graph)
    assert [dataclasses.astuple(r) for r in loaded.recomputed] == [
        dataclasses.astuple(r) for r in original.recomputed
    ]


def assert_same_log(original, loaded) -> None:
    assert_same_nodes(original, loaded)
    assert list(loaded.modules) == list(original.modules)
    assert loaded.modules == original.modules
    for name in ("model_class", "failed_op", "elapsed", "n_params", "param_bytes", "rank",
                 "world_size", "collectives", "placements", "engine_calls"):  # fmt: skip
        assert getattr(loaded, name) == getattr(original, name), name
    assert loaded.structure == original.structure
    assert loaded.saved_bytes == original.saved_bytes
    assert sharing(loaded) == sharing(original)
    assert str(loaded) == str(original)
    assert graph_data(loaded.graph) == graph_data(original.graph)
    assert graph_data(loaded.rolled_graph) == graph_data(original.rolled_graph)
    assert_same_training_step(original, loaded)
