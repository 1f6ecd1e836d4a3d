"""ModelLog: the record of one forward pass, indexable by label, position or module.

The log is data: this module imports only `log/`. What users do *with* a log lives in the
layers above it (the networkx graphs in `graph/`, files in `store/`, the HTML page in
`widget/`), yet they call it as methods (`log.graph()`, `log.save(path)`, ...). Those
methods are a thin facade: each imports, inside its body, the one function it hands the
log to (FACADE below). tests/python/test_import_layers.py reads FACADE and allows exactly
these function-level imports, so the log module never loads the layers above at import
time and no registry or global wires them.
"""

from __future__ import annotations

import difflib
import operator
from collections.abc import Iterator, Mapping
from dataclasses import InitVar, dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import networkx as nx

from lens_widget.log.disk_values import DiskValues
from lens_widget.log.dispatch import DispatchCall
from lens_widget.log.distributed import CollectiveInfo, EngineCall, ParamPlacement
from lens_widget.log.filled_on_read import FilledOnRead
from lens_widget.log.gc_pause import gc_paused
from lens_widget.log.gradients import BackwardPass, LeafRecord, Recomputation
from lens_widget.log.graph_on_read import GraphOnRead
from lens_widget.log.held_error import HeldError
from lens_widget.log.nonfinite import first_nonfinite
from lens_widget.log.records import ModuleInfo, NodeKind, OpRecord, index_by_label
from lens_widget.log.recurrence import recurrent_layers
from lens_widget.log.repeated_blocks import find_repeated_blocks, folded_layers
from lens_widget.log.summary import summarize
from lens_widget.log.totals import ModuleTotals, module_totals
from lens_widget.log.validate import ValidationReport, validate_ops

if TYPE_CHECKING:
    import os

    import pandas as pd

DEFAULT_HTML_BYTES = 20_000_000

# ModelLog method -> the module (above the log) whose function it calls: the only imports
# from a layer above that the log makes, each inside that method's body.
FACADE = {
    "graph": "lens_widget.graph.unrolled",
    "rolled_graph": "lens_widget.graph.rolled",
    "save": "lens_widget.store.save",
    "to_onnx": "lens_widget.store.onnx_export",
    "to_pandas": "lens_widget.store.table",
    "to_html": "lens_widget.widget.html_export",
}


@dataclass(eq=False, kw_only=True)
class ModelLog:
    """Everything one forward pass did. ``print(log)`` summarises it.

    ``log[i]`` is the i-th op, ``log["linear_2_7:3"]`` an op (or source/sink) by label,
    ``log["encoder.layer.3"]`` the node that produced that module's output (its last pass;
    ``"encoder.layer.3:1"`` for a given pass).
    """

    model_class: str
    # A descriptor (filled_on_read.py): a trace may leave the records' links, source lines and
    # output metadata to be filled when they are first read.
    nodes: list[OpRecord] = FilledOnRead()  # pyright: ignore[reportAssignmentType]
    # The same: a plain trace labels the outputs of each module call on the first read.
    modules: dict[str, ModuleInfo] = FilledOnRead()  # pyright: ignore[reportAssignmentType]
    output: Any
    # A descriptor (held_error.py) holding the exception weakly; its __get__ gives this type.
    error: BaseException | None = HeldError()  # pyright: ignore[reportAssignmentType]
    failed_op: str | None
    elapsed: float
    n_params: int
    param_bytes: int
    # Filled when the traced section ran a backward (``lw.tracing(..., grads=True)``):
    # every autograd leaf reached or expected, by name; the backward calls in order; the
    # autograd nodes that ran (node attrs: grad_fn, forward_op, within_op, order,
    # backward_pass, passes, grad_shapes, leaf). Descriptors (filled_on_read.py,
    # graph_on_read.py): a traced step may leave them to the first read.
    leaves: dict[str, LeafRecord] = FilledOnRead(dict)  # pyright: ignore[reportAssignmentType]
    backward_passes: list[BackwardPass] = FilledOnRead(list)  # pyright: ignore[reportAssignmentType]
    backward_graph: nx.DiGraph = GraphOnRead()  # pyright: ignore[reportAssignmentType]
    # Forward ops that gradient checkpointing ran again inside backward, in the order they
    # ran; they are not in ``ops`` (see gradients.Recomputation).
    recomputed: list[Recomputation] = FilledOnRead(list)  # pyright: ignore[reportAssignmentType]
    # Saved values that live in safetensors files (``trace(..., offload=path)``, or a
    # loaded log): which file holds which mapped storage (disk_values.py). None: all in memory.
    disk_values: DiskValues | None = None
    # A dispatched model's device hooks (accelerate): each call, in order; their own torch
    # calls are not ops of the model (log/dispatch.py). Empty for any other model.
    dispatch: list[DispatchCall] = field(default_factory=list)
    # Under torch.distributed (log/distributed.py): this process's rank and the world's
    # size (None outside it); each collective op by label; each sharded parameter by name;
    # the engines' own bookkeeping calls, which are not ops of the model.
    rank: int | None = None
    world_size: int | None = None
    collectives: dict[str, CollectiveInfo] = field(default_factory=dict)
    placements: dict[str, ParamPlacement] = field(default_factory=dict)
    engine_calls: list[EngineCall] = field(default_factory=list)
    # What the trace could not run as an untraced forward would, one sentence each (a
    # fast path of torch it could not keep: capture/fast_paths.py); also warned.
    notes: list[str] = field(default_factory=list)
    _by_label: dict[str, OpRecord] = field(init=False, repr=False)
    # Every node by label, when the builder has one already (else it is made here).
    label_index: InitVar[dict[str, OpRecord] | None] = None

    def __post_init__(self, label_index: dict[str, OpRecord] | None) -> None:
        self._by_label = index_by_label(self.nodes) if label_index is None else label_index

    def _filled_by_label(self) -> dict[str, OpRecord]:
        """The label index, once the records it leads to are filled (reading nodes fills
        them)."""
        self.nodes  # noqa: B018 - read for the fill it runs
        return self._by_label

    # ---- views of the nodes -----------------------------------------------------------

    @cached_property
    def ops(self) -> list[OpRecord]:
        """Operations in execution order (sources and outputs excluded)."""
        return [n for n in self.nodes if n.kind == "op"]

    @property
    def inputs(self) -> list[OpRecord]:
        return [n for n in self.nodes if n.kind == "input"]

    @property
    def outputs(self) -> list[OpRecord]:
        return [n for n in self.nodes if n.kind == "output"]

    @property
    def by_label(self) -> Mapping[str, OpRecord]:
        """Every node by its exact label (sources and outputs included)."""
        return self._filled_by_label()

    @property
    def labels(self) -> list[str]:
        return [n.label for n in self.ops]

    def __len__(self) -> int:
        return len(self.ops)

    def __iter__(self) -> Iterator[OpRecord]:
        return iter(self.ops)

    def __contains__(self, key: object) -> bool:
        try:
            self[key]  # pyright: ignore[reportArgumentType]  # any key: __getitem__ raises KeyError for the wrong type
        except (KeyError, IndexError, TypeError):
            return False
        return True

    def __getitem__(self, key: int | str) -> OpRecord:
        if isinstance(key, str):
            node = self._filled_by_label().get(key)
            if node is not None:
                return node
            return self._pass_of_layer(key) or self._module_output(key)
        try:
            position = operator.index(key)  # ints, numpy ints
        except TypeError:
            raise TypeError(
                f"index a ModelLog by position (int) or name (str), not {type(key).__name__}"
            ) from None
        if not -len(self.ops) <= position < len(self.ops):
            raise IndexError(
                f"op position {position} out of range: the log has {len(self.ops)} ops"
            )
        return self.ops[position]

    def _pass_of_layer(self, key: str) -> OpRecord | None:
        """ "linear_1_1:1" for an op that ran once; a layer name that ran more than once."""
        layer, _, pass_text = key.rpartition(":")
        if pass_text == "1" and self._by_label.get(layer, None) is not None:
            return self._by_label[layer]
        passes = [n.label for n in self.ops if n.layer == key and n.n_passes > 1]
        if passes:
            raise KeyError(
                f"layer {key!r} ran {len(passes)} times: pick a pass, {passes[0]!r} to "
                f"{passes[-1]!r} (log.rolled_graph.nodes[{key!r}] holds them all)"
            )
        return None

    def _module_output(self, key: str) -> OpRecord:
        # the whole key first: a module may have ":" in its name (ModuleDict({"relu:out": ...}))
        split = ":" in key and key not in self.modules
        address, _, pass_text = key.rpartition(":") if split else (key, "", "")
        info = self.modules.get(address)
        if info is None or not info.outputs:
            raise KeyError(self._unknown(key))
        if pass_text:
            if not pass_text.isdigit() or int(pass_text) not in info.outputs:
                raise KeyError(
                    f"module {address!r} ran {info.n_passes} time(s); no pass {pass_text!r}"
                )
            labels = info.outputs[int(pass_text)]
        else:
            labels = info.outputs[max(info.outputs)]
        if not labels:
            raise KeyError(f"module {address!r} returned no tensor produced in the trace")
        return self._by_label[labels[0]]

    def _unknown(self, key: str) -> str:
        names = list(self._by_label) + [a for a in self.modules if a]
        close = difflib.get_close_matches(key, names, n=3)
        hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
        return f"{key!r} is not an op label, source, output or module address of this log{hint}"

    # ---- derived structures --------------------------------------------------------------

    @cached_property
    def graph(self) -> nx.DiGraph:
        """Unrolled graph: one node per label, sources and outputs included."""
        from lens_widget.graph.unrolled import build_unrolled_graph

        with gc_paused():
            return build_unrolled_graph(
                self.nodes, model_class=self.model_class, by_label=self._by_label
            )

    @cached_property
    def repeated_blocks(self) -> list[list[str]]:
        """Chains of sibling modules of one class running the same op sequence, such as
        ``["transformer.h.0", …, "transformer.h.23"]``, each a list of module addresses."""
        return find_repeated_blocks(self.nodes, self.modules)

    @cached_property
    def folded_layers(self) -> dict[str, str]:
        """Layer -> the layer of the first block it folds into, for every repeat of a
        repeated block after the first (shared by `rolled_graph` and the widget payload)."""
        return folded_layers(self.nodes, self.repeated_blocks)

    @cached_property
    def rolled_graph(self) -> nx.DiGraph:
        """Passes of the same layer folded into one node; edges list their passes. The
        repeats of each repeated block fold onto its first block (node ids are its layers)."""
        from lens_widget.graph.rolled import build_rolled_graph

        with gc_paused():
            return build_rolled_graph(
                self.nodes,
                model_class=self.model_class,
                by_label=self._by_label,
                fold=self.folded_layers,
            )

    @property
    def saved_bytes(self) -> int:
        """Bytes held by saved activations, each distinct tensor storage counted once."""
        seen: dict[int, int] = {}
        for node in self.nodes:
            if node.kind in ("op", "output") and node.activations is not None:
                for t in node.activations:
                    storage = t.untyped_storage()
                    seen[storage.data_ptr()] = storage.nbytes()
        return sum(seen.values())

    @cached_property
    def recurrent_layers(self) -> list[str]:
        """The layers whose later pass depends on their own earlier pass (a cycle through
        data: an RNN cell, a block fed its own output), in execution order; a layer that ran
        twice on independent data is not one (log/recurrence.py)."""
        return recurrent_layers(self.ops, self._by_label)

    @property
    def structure(self) -> str:
        """ "recurrent" (a layer's later pass depends on its earlier pass:
        `recurrent_layers`), "branching" or "feedforward"."""
        if self.recurrent_layers:
            return "recurrent"
        # A value used by two ops branches; a weight shared by two ops does not.
        if any(
            sum(1 for c in n.children if self._by_label[c].kind == "op") > 1
            for n in self.nodes
            if n.kind in ("op", "input", "const")
        ):
            return "branching"
        return "feedforward"

    # ---- metrics ---------------------------------------------------------------------------

    @property
    def flops(self) -> int | None:
        """FLOPs of the whole forward (ops with a formula), as ``FlopCounterMode`` counts with
        the extra attention formulas of ``flop_formulas.py``."""
        known = [op.flops for op in self.ops if op.flops is not None]
        return sum(known) if known else None

    @cached_property
    def module_totals(self) -> dict[str, ModuleTotals]:
        """address -> FLOPs, parameters, bytes and time of the ops inside that module."""
        kinds: dict[str, NodeKind] = {node.label: node.kind for node in self.nodes}
        return module_totals(self.ops, self.modules, kinds)

    def compute_metrics(self) -> ModelLog:
        """Compute every op's FLOPs and activation statistics now (otherwise each is computed
        on first use); the statistics in one batch, one host copy per device."""
        OpRecord.compute_stats(self.ops)
        for op in self.ops:
            _ = op.flops
        return self

    def first_nonfinite(self) -> OpRecord | None:
        """The op that produced the first NaN/Inf: the first, in execution order, whose
        output is non-finite while all it read was finite; None when no op did.
        Needs saved activations (raises ValueError on a log traced with save=None)."""
        OpRecord.compute_stats(self.ops)
        return first_nonfinite(self.ops, self._by_label.__getitem__)

    def validate(self, *, rtol: float = 1e-5, atol: float = 1e-6) -> ValidationReport:
        """Replay every op from its saved inputs; raise on the first that differs."""
        return validate_ops(self.ops, rtol=rtol, atol=atol)

    # ---- keeping and sharing ----------------------------------------------------------

    def save(self, path: str | os.PathLike[str], *, weights: bool = True) -> Path:
        """Write the log to the directory `path`: log.json (every node, edge, module and
        field, documented in docs/log-format.md) and tensors.safetensors (every saved
        tensor; tensors sharing memory are written once). Open it with `lens_widget.load`.

        `weights=False` leaves parameter and buffer values out (validate() then skips the
        ops that read them). A previous save in `path` is replaced.
        """
        from lens_widget.store.save import save_log

        return save_log(self, path, weights=weights)

    def to_onnx(self, path: str | os.PathLike[str], weights: bool = False) -> Path:
        """Write the trace as an ONNX model to look at in Netron.

        It is a picture of the trace, not a runnable model: one ONNX node per op (standard
        ONNX ops where a torch op maps directly, else the custom domain "lens_widget.torch"
        named after the torch function), shapes and dtypes on every edge, module paths and
        labels in node names, label/module/pass/source in doc strings and metadata_props.
        Parameters are graph inputs; `weights=True` stores their values as initializers.
        Needs `pip install lens_widget[onnx]`.
        """
        from lens_widget.store.onnx_export import export_onnx

        return export_onnx(self.nodes, self.model_class, path, weights=weights)

    def to_pandas(self) -> pd.DataFrame:
        """One row per node (sources, ops, outputs): label, kind, func, module, pass, shape,
        dtype, device, bytes, params, parents, children, source, ... Needs
        `pip install lens_widget[pandas]`."""
        from lens_widget.store.table import nodes_table

        return nodes_table(self.nodes)

    def to_html(
        self,
        path: str | os.PathLike[str],
        max_bytes: int = DEFAULT_HTML_BYTES,
        *,
        weights: bool = False,
    ) -> Path:
        """Write one self-contained HTML page of this trace to `path`: the interactive graph
        and activation plots, no Jupyter and no network needed to open it. Activations are
        pooled (or, past that, left out) so the file stays under `max_bytes`; `weights=True`
        adds plots of parameters and buffers (slower). See `LensWidget.save_html`."""
        from lens_widget.widget.html_export import write_log_html

        return write_log_html(self, path, max_bytes=max_bytes, weights=weights)

    def __str__(self) -> str:
        # pyright matches no cached_property to a Protocol's property; the members are there.
        return summarize(self)  # pyright: ignore[reportArgumentType]

    def __repr__(self) -> str:
        state = f", partial: {type(self.error).__name__}" if self.error is not None else ""
        return f"<ModelLog {self.model_class}: {len(self.ops)} ops{state}>"
