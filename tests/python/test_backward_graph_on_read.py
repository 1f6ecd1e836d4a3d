"""A traced step's backward graph is built on its first read (log/graph_on_read.py): the
step's end keeps its ids, attributes and edges, not an autograd node, and the graph read
then is the one the capture saw."""

from __future__ import annotations

import gc
import threading

import networkx as nx
import torch
from torch import nn
from torch.autograd.graph import Node

import lens_widget as lw
from lens_widget.log.graph_on_read import GraphLater
from lens_widget.log.model_log import ModelLog


def _step() -> tuple[ModelLog, list[str]]:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    with lw.tracing(model, grads=True) as section:
        out = model(torch.randn(3, 4))
        loss = out.pow(2).mean()
        reached: dict[Node, None] = {}  # the autograd nodes from the loss
        todo = [loss.grad_fn]
        while todo:
            node = todo.pop()
            if node is not None and node not in reached:
                reached[node] = None
                todo.extend(child for child, _ in node.next_functions)
        loss.backward()
    return section.log, [node.name().rpartition("::")[2] for node in reached]


def _reaches(root: object, kind: type, depth: int = 4) -> bool:
    """Whether `root` refers to an object of `kind` within `depth` references."""
    seen, layer = {id(root)}, [root]
    for _ in range(depth):
        nxt = []
        for obj in layer:
            for ref in gc.get_referents(obj):
                if isinstance(ref, kind):
                    return True
                if id(ref) not in seen and not isinstance(ref, (type, torch.Tensor)):
                    seen.add(id(ref))
                    nxt.append(ref)
        layer = nxt
    return False


def test_the_graph_waits_for_its_first_read_and_holds_no_autograd_node() -> None:
    log, expected = _step()
    later = log.__dict__["_backward_graph_value"]
    assert type(later) is GraphLater
    assert not _reaches(later, Node)
    graph = log.backward_graph
    assert isinstance(graph, nx.DiGraph) and log.backward_graph is graph  # built once
    assert sorted(d["grad_fn"] for _, d in graph.nodes(data=True)) == sorted(expected)
    linear = log["2"]  # the last Linear's output: its grad_fn is the step's AddmmBackward
    addmm = [n for n, d in graph.nodes(data=True) if d["forward_op"] == linear.label]
    assert [graph.nodes[n]["grad_fn"] for n in addmm] == ["AddmmBackward0"]
    # gradients flow from the loss's node to the leaves' AccumulateGrad
    (root,) = [n for n in graph if graph.in_degree(n) == 0]
    leaves = {d["leaf"] for _, d in graph.nodes(data=True) if d["grad_fn"] == "AccumulateGrad"}
    assert leaves == {"0.weight", "0.bias", "2.weight", "2.bias"}
    assert all(nx.has_path(graph, root, n) for n in graph)
    # within_op: the transpose under the Linear's addmm belongs to that op
    inside = [d["within_op"] for _, d in graph.nodes(data=True) if d["grad_fn"] == "TBackward0"]
    assert linear.label in inside
    ran = log.backward_passes[0].nodes
    assert [graph.nodes[n]["order"] for n in ran] == list(range(len(graph)))


def test_threads_reading_the_graph_first_get_one_graph() -> None:
    log, _ = _step()
    got: list[nx.DiGraph] = []
    threads = [threading.Thread(target=lambda: got.append(log.backward_graph)) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(got) == 4 and all(graph is got[0] for graph in got) and len(got[0]) > 0


def test_a_log_without_a_backward_has_an_empty_graph_of_its_own() -> None:
    model = nn.Linear(2, 2)
    first = lw.trace(model, torch.randn(1, 2))
    second = lw.trace(model, torch.randn(1, 2))
    assert len(first.backward_graph) == 0
    first.backward_graph.add_node("x")
    assert len(second.backward_graph) == 0
