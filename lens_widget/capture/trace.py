"""`trace(model, inputs)`: run one forward pass under the recorder and build its log."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from typing import Any

import torch

from lens_widget.capture.distributed.distributed_capture import unwrap_data_parallel
from lens_widget.capture.interventions.interventions import InterventionFn
from lens_widget.capture.model_names import ModelNames
from lens_widget.capture.offload.offload import offload_spec
from lens_widget.capture.partial_log import attach_partial_log
from lens_widget.capture.save_policy import SaveSpec
from lens_widget.capture.session import Session
from lens_widget.log.model_log import ModelLog


def trace(
    model: torch.nn.Module,
    inputs: Any = (),
    kwargs: Mapping[str, Any] | None = None,
    *,
    save: SaveSpec = "all",
    timing: bool = False,
    intervene: Mapping[str, InterventionFn] | None = None,
    backward: Callable[[Any], Any] | None = None,
    offload: str | os.PathLike[str] | None = None,
    memory_budget: int | str | None = None,
) -> ModelLog:
    """Run ``model(*inputs, **kwargs)`` once and record every torch operation.

    ``inputs`` is a tensor (or any single object) or a tuple of positional inputs.
    ``save`` picks the activations to keep: "all", None (graph only), a list of op labels /
    module addresses / function names, or a predicate on the OpRecord.
    If the forward pass raises, the same exception object is raised, unchanged but for
    the partial log attached as ``err.lens_log`` and a note saying so. Exceptions that take
    no new attributes (frozen dataclasses, classes overriding ``__setattr__``) come back
    exactly as raised; ``lens_widget.partial_log(err)`` finds the partial log of any of
    them. The log does not keep its exception alive: dropping the exception (and the log)
    frees both at once, without the cyclic garbage collector. ``log.error`` is the
    exception while it lives where its class takes weak references; for Python's built-in
    classes (RuntimeError, ValueError...), which take none, and once the exception is gone,
    it is a copy without traceback (see lens_widget.log.held_error).

    ``timing=True`` sets each op's ``time_ms``: wall time around the torch call alone (not
    the tracer's bookkeeping). On CUDA every op is synchronised before and after, which
    perturbs the pass (no overlap of kernels, no asynchronous launches): the times say
    where the work is, not how long an untraced pass takes. Timed traces take the
    tracer's slower general path; the default costs nothing.

    ``intervene={target: fn}`` replaces outputs during the pass with ``fn(output)``, so
    everything downstream sees the new value. A target is an op label as this trace names
    it: ``"relu_1_2"`` (every pass) or ``"relu_1_2:3"`` (the 3rd pass only), or a module
    address: ``"transformer.h.3.attn"`` (every call) or ``"transformer.h.3.attn:2"``. For
    an op with several outputs, and a module returning a tuple, dict or ModelOutput, fn gets
    the first tensor (``tensor_leaves`` order) and its result takes that tensor's place. fn
    must return a tensor of the same shape and dtype; it runs outside the tracer (its own
    calls are not recorded, so labels match a clean trace's for ``lw.compare``). An op that
    writes in place (``relu_``, ``out=``) gets fn's value written into its result. The
    replaced op (for a module: the op that produced its output) has ``intervened=True``
    and its saved activation is the new value. A target that matched nothing raises
    ValueError after the pass, naming it and close matches.

    ``backward=fn`` follows the training step past the forward: ``fn(output)`` runs inside
    the recording (its ops are recorded at the top level, module ""), and if it returns a
    tensor, ``.backward()`` runs on it, recorded too; if it returns None it ran its own
    backward calls (several, ``retain_graph=True``, ``torch.autograd.grad``). Each backward
    call is one pass of ``log.backward_passes``; every saved op (same ``save`` selection)
    gets ``op.grads`` (one per pass) and ``op.grad``; ``log.leaves`` names each autograd
    leaf; ``log.backward_graph`` holds the autograd nodes that ran. The model's ``.grad``
    fields end as an untraced step leaves them.

    ``offload=path`` writes saved values (and a traced backward's gradients) past
    ``memory_budget`` bytes (an int, or "2GB", "512MiB"; default 0: all of them) into
    safetensors shards under `path` while the pass runs; the log reads them back,
    memory-mapped, when they are used, and ``log.save`` links the shards instead of copying
    them. The model's own parameters and buffers stay references. A path that cannot be
    written raises OffloadError before anything runs; a write that fails during the pass
    (a full disk) raises OffloadError after it, naming the path, with the partial log at
    ``err.lens_log`` (if the forward raised too, its exception is raised, with a note).
    """
    if not isinstance(model, torch.nn.Module):
        raise TypeError(
            f"lens_widget.trace needs a torch.nn.Module, got {type(model).__name__}; "
            "wrap a plain function in an nn.Module whose forward calls it"
        )
    original = getattr(model, "_orig_mod", None)
    if isinstance(original, torch.nn.Module):
        # torch.compile'd: dynamo would trace our recorder too; record the eager module.
        model = original
    if kwargs is None:
        kwargs = {}
    elif not isinstance(kwargs, Mapping):
        raise TypeError(f"kwargs must be a mapping of keyword inputs, got {type(kwargs).__name__}")
    if backward is not None and not callable(backward):  # else it fails after the forward
        raise TypeError(
            f"backward must be a function of the output (returning the loss), "
            f"got {type(backward).__name__}"
        )
    args = inputs if isinstance(inputs, tuple) else (inputs,)
    spec = offload_spec(offload, memory_budget)
    # DDP: traced as the model it wraps (same addresses); its wrapper's call is no module call
    inner, wrapper = unwrap_data_parallel(model)
    session = Session(
        ModelNames(inner), inner, type(inner).__name__, save=save, timing=timing,
        intervene=intervene, grads=backward is not None, offload=spec,
        wrappers=[wrapper] if wrapper is not None else None,
    )  # fmt: skip
    session.add_inputs(args, kwargs)

    output: Any = None
    error: BaseException | None = None
    session.start()
    try:
        output = model(*args, **kwargs)
        if backward is not None:
            _run_backward(backward, output, session)
    except BaseException as err:  # noqa: BLE001 - re-raised below with the log attached
        error = err
    log = session.finish(output, error, stacklevel=2)
    if error is None:
        return log
    attach_partial_log(error, log)
    try:
        raise error.with_traceback(error.__traceback__)
    finally:
        # This frame stays in the traceback: drop its references to the log and the error,
        # so they are freed with the exception instead of waiting for the cyclic collector.
        del error, log, session, output


def _run_backward(backward: Callable[[Any], Any], output: Any, session: Session) -> None:
    # the loss function's ops have call paths up to here, as a section's up to its code: the
    # function is their body (not a helper of whatever called trace()), and the walk is short
    session.recorder.top_frame = sys._getframe()
    loss = backward(output)
    if isinstance(loss, torch.Tensor):
        loss.backward()
    elif loss is not None:
        raise TypeError(
            f"lens_widget.trace: backward=fn returned {type(loss).__name__}; return the "
            "loss tensor (backward() is run on it) or None after running backward yourself"
        )
