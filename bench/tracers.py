"""The contenders: a plain forward, a bare TorchFunctionMode floor, lens_widget and TorchLens.

Each Mode has an untimed `before`/`after` around the timed `call`, and `describe` that pulls
op counts and saved bytes out of one result (untimed).
"""

from __future__ import annotations

import sys
import weakref
from collections.abc import Iterable
from typing import Any

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_leaves

from lens_widget.capture.call_site import find_call_site, mark_module_call
from lens_widget.capture.model_names import ModelNames
from model_zoo import ZooCase


def distinct_storage_bytes(tensors: Iterable[Any], exclude: set[int]) -> int:
    """Bytes of the distinct storages behind `tensors`, skipping storages in `exclude`
    (the model's parameters, buffers and inputs: memory that exists without tracing)."""
    seen: set[int] = set()
    total = 0
    for t in tensors:
        if not isinstance(t, torch.Tensor) or t.is_meta:
            continue
        try:
            storage = t.untyped_storage()
        except (RuntimeError, NotImplementedError):
            continue
        ptr = storage.data_ptr()
        if ptr == 0 or ptr in seen or ptr in exclude:
            continue
        seen.add(ptr)
        total += storage.nbytes()
    return total


def preexisting_storages(case: ZooCase) -> set[int]:
    tensors = [*case.model.parameters(), *case.model.buffers()]
    tensors += [t for t in tree_leaves((case.args, case.kwargs)) if isinstance(t, torch.Tensor)]
    return {t.untyped_storage().data_ptr() for t in tensors}


class Mode:
    name = ""  # its key in a results row

    def available(self) -> str | None:
        """None when usable, else why not."""
        return None

    def before(self) -> None:
        pass

    def call(self, case: ZooCase) -> Any:
        raise NotImplementedError

    def after(self, result: Any) -> None:
        pass

    def describe(self, case: ZooCase, result: Any) -> dict[str, Any]:
        return {}


class Plain(Mode):
    name = "plain"

    def call(self, case: ZooCase) -> Any:
        return case.model(*case.args, **case.kwargs)


class KeepOutputs(TorchFunctionMode):
    """The floor of any TorchFunctionMode tracer: see every call, keep every output."""

    def __init__(self) -> None:
        super().__init__()
        self.outputs: list[Any] = []

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        self.outputs.append(out)
        return out


class KeepRows(TorchFunctionMode):
    """The floor of any tracer that records per op in Python: per call one row of what a
    record is made of (the function, its call site, which row produced each tensor input,
    the output's shape, dtype, device and requires_grad), and the output when saving. No
    records, labels, links, module tracking or replay templates: what it costs is below what
    any per-op record design can reach (bench/per_op.py's "rows floor")."""

    _METADATA = frozenset({"dim", "size", "numel", "shape", "dtype", "device", "__get__"})

    def __init__(self, keep_outputs: bool) -> None:
        super().__init__()
        self.keep_outputs = keep_outputs
        self.rows: list[tuple[Any, ...]] = []
        self._producers: dict[int, tuple[Any, int]] = {}  # id(tensor) -> (weakref, row)
        self._passed: dict[Any, bool] = {}  # func -> a metadata read, passed straight through

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        passed = self._passed.get(func)
        if passed is None:
            passed = self._passed[func] = getattr(func, "__name__", "") in self._METADATA
        if passed:
            return func(*args, **kwargs) if kwargs else func(*args)
        frame = sys._getframe(1)
        producers = self._producers
        inputs = []
        for value in args:
            kind = type(value)
            if kind is torch.Tensor or kind is torch.nn.Parameter:
                entry = producers.get(id(value))
                inputs.append(entry[1] if entry is not None and entry[0]() is value else -1)
        out = func(*args, **kwargs) if kwargs else func(*args)
        if type(out) is torch.Tensor:
            rows = self.rows
            producers[id(out)] = (weakref.ref(out), len(rows))
            rows.append(
                (func, id(frame.f_code) * (1 << 24) + frame.f_lasti, inputs, tuple(out.shape),
                 out.dtype, out.device, out.requires_grad, out if self.keep_outputs else None)
            )  # fmt: skip
        return out


class KeepLogRows(KeepRows):
    """The rows floor plus what a log of lens_widget's content cannot rebuild after the pass,
    each done the cheapest way known: the module stack (torch's ``nn.Module._call_impl``
    given the code of a push and pop around ``forward``, as lens_widget's module calls are,
    and a row per module call with its output's producer), the
    call path up to the module call (lens_widget's own frame walk, `find_call_site`), a source
    row for each tensor first read, a replay template (the arguments with a slot per tensor,
    keywords included) and, when saving, the version of each input (a write since it was
    produced). No records, labels, links or features: the floor of a rows-then-records
    design of this log (docs/tracing-cost.md).

    `model`: also the one walk per trace that names its modules, parameters and buffers
    (lens_widget's `ModelNames`, as `lw.trace` makes on each call), and each source row
    the name it found: the per-trace part of this log's content, which no tracer of it can
    leave out (the model may have changed since the last trace)."""

    def __init__(self, keep_outputs: bool, model: torch.nn.Module | None = None) -> None:
        super().__init__(keep_outputs)
        self.modules: list[tuple[Any, ...]] = []  # (module, pass row, output's producer)
        self.stack: tuple[int, ...] = ()
        self._model = model
        self._names: dict[int, tuple[str, str]] = {}  # id(param or buffer) -> (name, kind)

    def __enter__(self) -> KeepLogRows:
        if self._model is not None:
            self._names = ModelNames(self._model).tensors
        # as lens_widget does (capture/module_calls.py): torch's function runs the stand-in's
        # code, which finds this mode under a name in torch's module; setting the class
        # attribute instead would reset every nn.Module subclass's attribute caches
        _TORCH_GLOBALS[_LOG_ROWS] = self
        _TORCH_CALL_IMPL.__code__ = _log_rows_call_impl.__code__
        super().__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        super().__exit__(*exc)
        _TORCH_CALL_IMPL.__code__ = _TORCH_CODE
        del _TORCH_GLOBALS[_LOG_ROWS]

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        # (KeepRows's first lines inlined: a call would cost the floor)
        passed = self._passed.get(func)
        if passed is None:
            passed = self._passed[func] = getattr(func, "__name__", "") in self._METADATA
        if passed:
            return func(*args, **kwargs) if kwargs else func(*args)
        frame = sys._getframe(1)
        producers = self._producers
        rows = self.rows
        keep = self.keep_outputs
        inputs: list[Any] = []
        template = list(args)
        for i, value in enumerate(args):
            kind = type(value)
            if kind is torch.Tensor or kind is torch.nn.Parameter:
                template[i] = _SLOT
                inputs.append(self._producer(value, producers, rows, keep, self._names))
        kwargs_template = None
        if kwargs:
            kwargs_template = dict(kwargs)
            for key, value in kwargs.items():
                kind = type(value)
                if kind is torch.Tensor or kind is torch.nn.Parameter:
                    kwargs_template[key] = _SLOT
                    inputs.append(self._producer(value, producers, rows, keep, self._names))
        out = func(*args, **kwargs) if kwargs else func(*args)
        if type(out) is torch.Tensor:
            path, source = find_call_site(frame)
            producers[id(out)] = (weakref.ref(out), len(rows), out._version)
            rows.append(
                (func, path, source, self.stack, inputs, tuple(template), kwargs_template,
                 tuple(out.shape), out.dtype, out.device, out.requires_grad,
                 out if keep else None)
            )  # fmt: skip
        return out

    @staticmethod
    def _producer(
        value: Any, producers: dict[int, Any], rows: list[Any], keep: bool, names: dict[int, Any]
    ) -> Any:
        entry = producers.get(id(value))
        if entry is not None and entry[0]() is value:
            if keep and value._version != entry[2]:
                return (entry[1], value.detach().clone())  # written since: its value now
            return entry[1]
        producers[id(value)] = (weakref.ref(value), len(rows), value._version)
        rows.append(
            ("source", names.get(id(value)), value.shape, value.dtype, value.device,
             value.requires_grad)
        )  # fmt: skip
        return len(rows) - 1


_SLOT = object()  # where a tensor was in a replay template
_TORCH_CALL_IMPL: Any = torch.nn.Module.__dict__["_call_impl"]
_TORCH_CODE = _TORCH_CALL_IMPL.__code__
_TORCH_GLOBALS = _TORCH_CALL_IMPL.__globals__
_LOG_ROWS = "_lens_widget_log_rows"  # the KeepLogRows running, in torch's module meanwhile


def _log_rows_call_impl(module: torch.nn.Module, *args: Any, **kwargs: Any) -> Any:
    # runs as torch's _call_impl, with its globals: finds the mode by the name set there
    mode = _lens_widget_log_rows  # noqa: F821 # pyright: ignore[reportUndefinedVariable]
    stack = mode.stack
    mode.stack = (*stack, id(module))
    try:
        out = module.forward(*args, **kwargs)
    finally:
        mode.stack = stack
    entry = mode._producers.get(id(out)) if type(out) is torch.Tensor else None
    mode.modules.append((id(module), len(mode.rows), entry[1] if entry else -1))
    return out


mark_module_call(_log_rows_call_impl.__code__)


class Floor(Mode):
    """What any TorchFunctionMode tracer pays at least: see every call, keep every output."""

    name = "floor"

    def call(self, case: ZooCase) -> Any:
        mode = KeepOutputs()
        with mode:
            case.model(*case.args, **case.kwargs)
        return mode.outputs

    def describe(self, case: ZooCase, result: Any) -> dict[str, Any]:
        return {
            "calls": len(result),
            "output_bytes": distinct_storage_bytes(tree_leaves(result), preexisting_storages(case)),
        }


class LensWidget(Mode):
    def __init__(self, save: str | None) -> None:
        self.save = save
        self.name = "lw_all" if save == "all" else "lw_none"

    def available(self) -> str | None:
        try:
            import lens_widget

            lens_widget.trace  # noqa: B018
        except Exception as err:  # the tracer is still being written: report, don't crash
            return f"{type(err).__name__}: {err}"
        return None

    def call(self, case: ZooCase) -> Any:
        import lens_widget

        return lens_widget.trace(case.model, case.args, case.kwargs, save=self.save)

    def describe(self, case: ZooCase, result: Any) -> dict[str, Any]:
        saved = [t for rec in result.ops if rec.activations for t in rec.activations]
        return {
            "ops": len(result.ops),
            # TorchLens counts each output of a multi-output op (split, lstm) as a layer.
            "outputs": sum(len(rec.shapes) or 1 for rec in result.ops),
            "nodes": len(result.nodes),
            "saved_ops": sum(1 for rec in result.ops if rec.activations is not None),
            "saved_bytes": distinct_storage_bytes(saved, preexisting_storages(case)),
        }


class TorchLens(Mode):
    """torchlens.trace. Its torch wrappers are installed before and removed after each timed
    call (untimed): a user pays the ~0.2 s install once per process, and leaving them in place
    would slow every other contender in this process."""

    def __init__(self, save_all: bool) -> None:
        self.save_all = save_all
        self.name = "tl_all" if save_all else "tl_none"

    def available(self) -> str | None:
        try:
            import torchlens  # noqa: F401
        except Exception as err:
            return f"{type(err).__name__}: {err}"
        return None

    def before(self) -> None:
        from torchlens.backends.torch.wrappers import wrap_torch

        wrap_torch()

    def call(self, case: ZooCase) -> Any:
        import torchlens
        from torchlens.options import CaptureOptions

        capture = CaptureOptions(layers_to_save="all" if self.save_all else None)
        return torchlens.trace(case.model, list(case.args), dict(case.kwargs), capture=capture)

    def after(self, result: Any) -> None:
        from torchlens.backends.torch.wrappers import unwrap_torch

        unwrap_torch()

    def describe(self, case: ZooCase, result: Any) -> dict[str, Any]:
        saved = [op.out for op in result.layer_list if op.has_saved_activation]
        return {
            "ops": int(result.num_ops),
            "saved_ops": int(result.num_saved_ops),
            "saved_bytes": distinct_storage_bytes(saved, preexisting_storages(case)),
            "reported_saved_bytes": int(result.saved_activation_memory),
        }


def all_modes() -> list[Mode]:
    return [
        Plain(),
        Floor(),
        LensWidget(None),
        LensWidget("all"),
        TorchLens(False),
        TorchLens(True),
    ]
