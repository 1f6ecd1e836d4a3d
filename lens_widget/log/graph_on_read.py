"""`ModelLog.backward_graph`, which a trace may leave to be built on its first read.

A traced training step keeps, as it ends, what the graph of the autograd nodes that ran is
made of (plain ids, names and edges: no autograd node). Building the networkx graph from
them and marking which op's internals each node belongs to is ~15% of a traced step's
Python (BERT: ~310 nodes, ~700 of 4,700 bytecodes per forward op, `bench.bytecodes
--step`): a training loop that never looks at the graph, as `lw.Monitor` does not, does not
pay for it (issue #37), and the graph read is the same.

Building runs once: a second thread reading meanwhile waits for it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import networkx as nx

from lens_widget.log.filled_on_read import run_pending_fill


class GraphLater:
    """A graph's builder (a callable that takes nothing), run once on the first read. Unlike
    filled_on_read's DetailsLater, a build that raised runs again on the next read: it
    writes nothing but the graph it returns, where a fill that stopped halfway has written
    into the records."""

    __slots__ = ("_build", "_graph", "_lock")

    def __init__(self, build: Callable[[], nx.DiGraph]) -> None:
        self._build: Callable[[], nx.DiGraph] | None = build
        self._graph: nx.DiGraph | None = None
        self._lock = threading.Lock()

    def graph(self) -> nx.DiGraph:
        with self._lock:
            if self._build is not None:
                self._graph, self._build = self._build(), None
        assert self._graph is not None
        return self._graph


class GraphOnRead:
    """A dataclass field holding a networkx graph, given as one or as a `GraphLater`; an
    empty graph by default (None given)."""

    def __set_name__(self, owner: type, name: str) -> None:
        self._slot = f"_{name}_value"

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:  # on the class: the dataclass default, read as an empty graph
            return None
        attributes = obj.__dict__
        value = attributes.get(self._slot)
        if type(value) is GraphLater:
            run_pending_fill(obj)  # the graph names the records' final labels
            value = attributes[self._slot] = value.graph()
        elif value is None:
            value = attributes[self._slot] = nx.DiGraph()
        return value

    def __set__(self, obj: Any, value: nx.DiGraph | GraphLater | None) -> None:
        obj.__dict__[self._slot] = value
