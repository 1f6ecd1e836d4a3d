"""payload: the GraphPayload built from a real trace matches the log it came from."""

import json

import pytest
import torch
from torch import nn

import lens_widget as lw
from lens_widget.graph.unrolled import shape_text
from lens_widget.widget.payload import build_payload


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.lin(x))


class Twice(nn.Module):
    """One block run twice (2 passes), a parameter read directly, a constant created inside."""

    def __init__(self) -> None:
        super().__init__()
        self.block = Block()
        self.scale = nn.Parameter(torch.ones(8))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.block(self.block(x))
        return h * self.scale + torch.ones(8)


class Fails(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.lin(x))
        return h @ torch.ones(5, 2)  # 3 vs 5: raises


@pytest.fixture(scope="module")
def twice():
    torch.manual_seed(0)
    log = lw.trace(Twice().eval(), torch.randn(2, 8))
    return log, build_payload(log)


def test_payload_is_plain_json(twice):
    _, payload = twice
    text = json.dumps(payload, allow_nan=False)
    assert json.loads(text) == payload


def test_unrolled_nodes_are_the_log_nodes_in_order(twice):
    log, payload = twice
    nodes = payload["unrolled"]["nodes"]
    assert [n["id"] for n in nodes] == [r.label for r in log.nodes]
    assert payload["nOps"] == len(log.ops)
    assert payload["modelClass"] == "Twice"
    assert payload["error"] is None and payload["failedOp"] is None
    for node, record in zip(nodes, log.nodes, strict=True):
        assert node["kind"] == record.kind and node["func"] == record.func
        assert node["shape"] == (list(record.shape) if record.shape is not None else None)
        assert node["passes"] == [record.label] and node["nPasses"] == 1
        assert node["saved"] == record.saved
        assert node["params"] == [[p.name, list(p.shape)] for p in record.params]


def test_groups_are_module_passes_outermost_first(twice):
    log, payload = twice
    by_id = {n["id"]: n for n in payload["unrolled"]["nodes"]}
    linears = [r for r in log.ops if r.func == "linear"]
    assert len(linears) == 2
    for k, record in enumerate(linears, start=1):
        assert by_id[record.label]["groups"] == [f"block:{k}", f"block.lin:{k}"]
        assert by_id[record.label]["module"] == "block.lin"
    relus = [r for r in log.ops if r.func == "relu"]
    assert [by_id[r.label]["groups"] for r in relus] == [["block:1"], ["block:2"]]
    # the multiply by self.scale runs in the root model: no group
    mul = next(r for r in log.ops if r.func in ("__mul__", "mul"))
    assert by_id[mul.label]["groups"] == []
    assert by_id[mul.label]["hasParams"] is True


def test_sources_sit_in_their_first_consumers_groups(twice):
    log, payload = twice
    by_id = {n["id"]: n for n in payload["unrolled"]["nodes"]}
    params = [r for r in log.nodes if r.kind == "param"]
    assert params, "the tracer records parameters as source nodes"
    for record in params:
        first = min((log[c] for c in record.children), key=lambda c: c.index)
        assert by_id[record.label]["groups"] == by_id[first.label]["groups"]
    weight = next(r for r in params if r.func.endswith("lin.weight") or "lin.weight" in r.label)
    assert by_id[weight.label]["groups"] == ["block:1", "block.lin:1"]
    for record in log.nodes:
        if record.kind in ("input", "output"):
            assert by_id[record.label]["groups"] == []


def test_unrolled_edges_match_the_graph_with_shapes(twice):
    log, payload = twice
    edges = payload["unrolled"]["edges"]
    assert {(e["source"], e["target"]) for e in edges} == set(log.graph.edges)
    assert len(edges) == log.graph.number_of_edges()
    for e in edges:
        assert e["passes"] == []
        src = log[e["source"]]
        if src.kind == "op" and len(src.shapes) <= 1:
            assert e["shape"] == shape_text(src.shape)
    lin = next(r for r in log.ops if r.func == "linear")
    assert any(e["source"] == lin.label and e["shape"] == "2x8" for e in edges)


def test_rolled_view_folds_passes(twice):
    log, payload = twice
    rolled = payload["rolled"]
    assert [n["id"] for n in rolled["nodes"]] == list(log.rolled_graph.nodes)
    by_id = {n["id"]: n for n in rolled["nodes"]}
    linears = [r for r in log.ops if r.func == "linear"]
    assert len({r.layer for r in linears}) == 1
    node = by_id[linears[0].layer]
    assert node["nPasses"] == 2
    assert node["passes"] == [r.label for r in linears]
    assert node["groups"] == ["block", "block.lin"]
    pairs = {(e["source"], e["target"]): e for e in rolled["edges"]}
    assert set(pairs) == set(log.rolled_graph.edges)
    for (src, dst), data in log.rolled_graph.edges.items():
        assert pairs[(src, dst)]["passes"] == list(data["passes"])
    relu = next(r for r in log.ops if r.func == "relu")
    assert pairs[(linears[0].layer, relu.layer)]["passes"] == [1, 2]
    assert pairs[(linears[0].layer, relu.layer)]["shape"] == "2x8"


def test_module_list_parents_first(twice):
    _, payload = twice
    modules = payload["modules"]
    addresses = [m["address"] for m in modules]
    assert set(addresses) >= {"", "block", "block.lin"}
    for i, m in enumerate(modules):
        if m["parent"] is not None:
            assert addresses.index(m["parent"]) < i
    by_address = {m["address"]: m for m in modules}
    assert by_address[""]["parent"] is None and by_address[""]["className"] == "Twice"
    assert by_address["block"]["className"] == "Block" and by_address["block"]["nPasses"] == 2
    assert by_address["block.lin"]["parent"] == "block"
    assert by_address["block.lin"]["nOps"] == 2  # one linear per pass
    assert by_address["block"]["nOps"] == 4


def test_partial_log_carries_error_and_failed_op():
    with pytest.raises(RuntimeError) as info:
        lw.trace(Fails(), torch.randn(2, 4))
    log = info.value.lens_log
    payload = build_payload(log)
    assert payload["error"].startswith("RuntimeError: ")
    assert payload["failedOp"] == log.failed_op is not None
    failed = [n for n in payload["unrolled"]["nodes"] if n["failed"]]
    assert [n["id"] for n in failed] == [log.failed_op]
    assert any(n["failed"] for n in payload["rolled"]["nodes"])
    assert json.dumps(payload, allow_nan=False)


def test_unsaved_trace_marks_nodes_unsaved():
    log = lw.trace(Twice(), torch.randn(2, 8), save=None)
    payload = build_payload(log)
    assert not any(n["saved"] for n in payload["unrolled"]["nodes"] if n["kind"] == "op")


@pytest.mark.parametrize(
    ("shape", "text"), [((1, 128, 768), "1x128x768"), ((), "scalar"), (None, ""), ([3], "3")]
)
def test_shape_text(shape, text):
    assert shape_text(shape) == text
