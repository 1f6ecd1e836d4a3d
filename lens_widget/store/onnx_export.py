"""log.to_onnx(path): the trace as an ONNX graph, to look at in Netron.

One ONNX node per node of the log: a standard ONNX op where the torch op maps directly
(onnx_ops.py), else an op of the custom domain "lens_widget.torch" named after the torch
function, its non-tensor arguments as attributes. Every edge carries its shape and dtype.
Node names are module paths ending in the op's label (``/transformer/h.0/attn/linear_3_7``);
doc_string and metadata_props hold label, function, module, pass and source line.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import torch

from lens_widget.log.records import OpRecord
from lens_widget.log.replay import TensorSlot
from lens_widget.store.onnx_ops import OUTPUT_SHAPE, STANDARD_OPS, Call, Standard, is_list_ref
from lens_widget.store.optional import require
from lens_widget.store.values_codec import dtype_from_name

OPSET = 20
CUSTOM_DOMAIN = "lens_widget.torch"
# Above this many bytes of initializers, weights go to an external file beside the model
# (a protobuf message stops at 2 GB).
_EXTERNAL_DATA_BYTES = 1 << 30

_ELEM_TYPES = {
    "float32": "FLOAT", "float64": "DOUBLE", "float16": "FLOAT16", "bfloat16": "BFLOAT16",
    "int64": "INT64", "int32": "INT32", "int16": "INT16", "int8": "INT8", "uint8": "UINT8",
    "uint16": "UINT16", "uint32": "UINT32", "uint64": "UINT64", "bool": "BOOL",
    "complex64": "COMPLEX64", "complex128": "COMPLEX128", "float8_e4m3fn": "FLOAT8E4M3FN",
    "float8_e4m3fnuz": "FLOAT8E4M3FNUZ", "float8_e5m2": "FLOAT8E5M2",
    "float8_e5m2fnuz": "FLOAT8E5M2FNUZ",
}  # fmt: skip


def export_onnx(
    nodes: list[OpRecord], model_class: str, path: str | os.PathLike[str], *, weights: bool
) -> Path:
    """Write a log's nodes as an ONNX model; see ModelLog.to_onnx."""
    onnx = require("onnx", "onnx")
    builder = _GraphBuilder(onnx, weights)
    model = builder.build(nodes, model_class)
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    if builder.initializer_bytes > _EXTERNAL_DATA_BYTES:
        onnx.save_model(
            model, str(target), save_as_external_data=True, location=f"{target.name}.data"
        )
    else:
        onnx.save_model(model, str(target))
    return target


def value_name(label: str, output_index: int) -> str:
    """The ONNX value of a node's output: its label, then label/1, label/2, ..."""
    return label if output_index == 0 else f"{label}/{output_index}"


def node_name(node: OpRecord) -> str:
    """Module path (each level named as in its parent) then the label."""
    parts, parent = [], ""
    for address, _ in node.module_stack:
        parts.append(address.removeprefix(f"{parent}.") if parent else address)
        parent = address
    return "/" + "/".join([*parts, node.label])


class _GraphBuilder:
    def __init__(self, onnx: Any, weights: bool) -> None:
        self.onnx = onnx
        self.weights = weights
        self.nodes: list[Any] = []
        self.inputs: list[Any] = []
        self.outputs: list[Any] = []
        self.initializers: list[Any] = []
        self.value_info: list[Any] = []
        self.elem_types: dict[str, int] = {}  # value name -> ONNX element type
        self.initializer_bytes = 0

    def build(self, nodes: list[OpRecord], model_class: str) -> Any:
        helper = self.onnx.helper
        n_ops = sum(1 for n in nodes if n.kind == "op")
        by_label = {n.label: n for n in nodes}
        for node in nodes:
            if node.kind == "op":
                self._op(node, by_label)
            elif node.kind == "output":
                self._sink(node, by_label)
            else:
                self._source(node)
        graph = helper.make_graph(
            self.nodes,
            model_class,
            self.inputs,
            self.outputs,
            initializer=self.initializers,
            value_info=self.value_info,
            doc_string=f"lens_widget trace of {model_class}: {n_ops} ops",
        )
        model = helper.make_model(
            graph,
            opset_imports=[helper.make_opsetid("", OPSET), helper.make_opsetid(CUSTOM_DOMAIN, 1)],
            producer_name="lens_widget",
            doc_string=(
                "A picture of a lens_widget trace (one node per recorded op), not a runnable "
                f"model. Ops of the domain {CUSTOM_DOMAIN} are torch functions by name."
            ),
        )
        helper.set_model_props(model, {"model_class": model_class, "ops": str(n_ops)})
        return model

    # ---- values ----

    def _value_info(self, name: str, dtype: str | None, shape: tuple[int, ...] | None) -> Any:
        elem = self._elem_type(dtype)
        self.elem_types[name] = elem
        return self.onnx.helper.make_tensor_value_info(
            name, elem, list(shape) if shape is not None else None
        )

    def _elem_type(self, dtype: str | None) -> int:
        name = _ELEM_TYPES.get(dtype or "")
        return getattr(self.onnx.TensorProto, name) if name else self.onnx.TensorProto.UNDEFINED

    def _initializer(self, name: str, tensor: torch.Tensor) -> None:
        raw = _raw_bytes(tensor)
        proto = self.onnx.helper.make_tensor(
            name, self._elem_type(str(tensor.dtype).removeprefix("torch.")),
            list(tensor.shape), raw, raw=True,
        )  # fmt: skip
        self.initializers.append(proto)
        self.elem_types[name] = proto.data_type
        self.initializer_bytes += len(raw)

    def _constant(self, name: str, value: Any, dtype: torch.dtype) -> str:
        self._initializer(name, torch.tensor(value, dtype=dtype))
        return name

    # ---- nodes ----

    def _source(self, node: OpRecord) -> None:
        saved = node.activations
        if self.weights and node.kind != "input" and saved:
            self._initializer(node.label, saved[0])
        else:
            self.inputs.append(self._value_info(node.label, node.dtype, node.shape))

    def _sink(self, node: OpRecord, by_label: dict[str, OpRecord]) -> None:
        arg = node.parent_args[0]
        source = value_name(arg.parent, arg.output_index)
        self._add_node(node, "Identity", "", [source], {})
        self.outputs.append(self._value_info(node.label, node.dtype, node.shape))

    def _op(self, node: OpRecord, by_label: dict[str, OpRecord]) -> None:
        call = Call(node)
        # an op that raised made no output: a standard op without one is not valid ONNX
        spec = STANDARD_OPS.get(node.func) if not node.failed else None
        if spec is not None and call.known and spec.min_opset <= OPSET:
            attributes = spec.attributes(call) if spec.attributes else {}
            inputs = self._standard_inputs(node, call, spec) if attributes is not None else None
            if spec.op_type == "Cast" and attributes is not None:
                to = self._elem_type(attributes["to"])
                attributes = {"to": to} if to else None
            if attributes is not None and inputs is not None:
                self._add_node(node, spec.op_type, "", inputs, attributes)
                self._describe_outputs(node)
                return
        inputs = [value_name(a.parent, a.output_index) for a in node.parent_args]
        self._add_node(node, node.func, CUSTOM_DOMAIN, inputs, _custom_attributes(call))
        self._describe_outputs(node)

    def _describe_outputs(self, node: OpRecord) -> None:
        saved = node.activations or ()
        for i, shape in enumerate(node.shapes):
            dtype = str(saved[i].dtype).removeprefix("torch.") if i < len(saved) else node.dtype
            self.value_info.append(self._value_info(value_name(node.label, i), dtype, shape))

    def _standard_inputs(self, node: OpRecord, call: Call, spec: Standard) -> list[str] | None:
        """ONNX inputs from the recorded arguments; None when they do not fit the op (a
        tensor argument the ONNX op has no input for, a value where a tensor must be)."""
        parents = node.parent_args
        names: list[str] = []
        used: set[int] = set()
        numbers: list[tuple[int, Any]] = []  # (input position, Python number)
        for item in spec.inputs:
            if item == OUTPUT_SHAPE:
                names.append(
                    self._constant(f"{node.label}/shape", list(node.shape or ()), torch.int64)
                )
                continue
            if is_list_ref(item):
                values = call.arg(*item[1])
                if not isinstance(values, (list, tuple)) or not values:
                    return None
            else:
                values = [call.arg(*item)]
            for value in values:
                if isinstance(value, TensorSlot) and value.index < len(parents):
                    arg = parents[value.index]
                    names.append(value_name(arg.parent, arg.output_index))
                    used.add(value.index)
                elif value is None and item != spec.inputs[0]:
                    names.append("")  # an optional input left out (a linear without bias)
                elif spec.numbers and isinstance(value, (int, float)) and math.isfinite(value):
                    numbers.append((len(names), value))
                    names.append("")
                else:
                    return None
        if used != set(range(len(parents))) or len(used) == 0:
            return None
        for position, number in numbers:
            dtype = self._operand_dtype(names)
            names[position] = self._constant(f"{node.label}/const{position}", number, dtype)
        while names and names[-1] == "":
            names.pop()
        return names

    def _operand_dtype(self, names: list[str]) -> torch.dtype:
        """A scalar operand gets the element type of the tensor beside it."""
        for name in names:
            elem = self.elem_types.get(name)
            if elem:
                dtype_text = _dtype_text(self.onnx, elem)
                if dtype_text is not None:
                    return dtype_from_name(dtype_text, "onnx export")
        return torch.float32

    def _add_node(
        self,
        node: OpRecord,
        op_type: str,
        domain: str,
        inputs: list[str],
        attributes: dict[str, Any],
    ) -> None:
        outputs = [value_name(node.label, i) for i in range(len(node.shapes))]
        if node.kind == "output":
            outputs = [node.label]
        onnx_node = self.onnx.helper.make_node(
            op_type, inputs, outputs, name=node_name(node), domain=domain or None,
            doc_string=_doc(node), **attributes,
        )  # fmt: skip
        for key, value in _metadata(node).items():
            entry = onnx_node.metadata_props.add()
            entry.key, entry.value = key, value
        self.nodes.append(onnx_node)


def _dtype_text(onnx: Any, elem: int) -> str | None:
    for dtype, name in _ELEM_TYPES.items():
        if getattr(onnx.TensorProto, name) == elem:
            return dtype
    return None


def _raw_bytes(tensor: torch.Tensor) -> bytes:
    tensor = tensor.detach().cpu().contiguous()
    if tensor.is_complex():
        tensor = torch.view_as_real(tensor.resolve_conj())
    return tensor.reshape(-1).view(torch.uint8).numpy().tobytes()


def _doc(node: OpRecord) -> str:
    lines = [f"{node.label}: {node.func} ({node.kind})"]
    if node.module:
        lines.append(f"module {node.module}, pass {node.pass_label}")
    if node.n_passes > 1:
        lines.append(f"pass {node.pass_index} of {node.n_passes} of layer {node.layer}")
    if node.source:
        lines.append(f"{node.source}: {node.source_code}".rstrip(": "))
    if node.failed:
        lines.append(f"raised {node.error}")
    return "\n".join(lines)


def _metadata(node: OpRecord) -> dict[str, str]:
    return {
        "label": node.label,
        "func": node.func,
        "module": node.module,
        "module_stack": " > ".join(f"{a}:{p}" for a, p in node.module_stack),
        "pass": f"{node.pass_index}/{node.n_passes}",
        "source": node.source,
    }


def _custom_attributes(call: Call) -> dict[str, Any]:
    """The call's non-tensor arguments, so Netron shows them (dim=-1, eps=1e-05)."""
    named = [(f"arg{i}", v) for i, v in enumerate(call.args)] + list(call.kwargs.items())
    attributes: dict[str, Any] = {}
    for name, value in named:
        converted = _attribute(value)
        if converted is not None:
            attributes[name] = converted
    return attributes


def _attribute(value: Any) -> Any:
    if value is None or isinstance(value, TensorSlot) or _holds_tensor(value):
        return None
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value if -(2**63) <= value < 2**63 else str(value)
    if isinstance(value, (float, str)):
        return value
    if isinstance(value, (list, tuple)) and value:
        if all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            return list(value)
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
            return [float(v) for v in value]
    return repr(value)


def _holds_tensor(value: Any) -> bool:
    if isinstance(value, (list, tuple)):
        return any(isinstance(v, TensorSlot) or _holds_tensor(v) for v in value)
    if isinstance(value, dict):
        return any(_holds_tensor(v) for v in value.values())
    return False
