"""What re-running a traced model needs: the same starting state, and a save spec that
adds the activations asked for since."""

from __future__ import annotations

import contextlib
import random
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

from lens_widget.capture.save_policy import SaveSpec
from lens_widget.log.records import OpRecord


class WorldState:
    """The global RNG states (torch's, Python's `random`, numpy's) and copies of a model's
    buffers at one moment.

    Train-mode forwards advance BatchNorm statistics and draw new dropout masks (some from
    numpy: the SpecAugment masks of wav2vec2); restoring this before a re-run makes the
    re-run trace the same pass, and restoring the state from just before it afterwards
    leaves the user's model and RNG as they were.
    """

    def __init__(
        self,
        rng: torch.Tensor,
        cuda_rng: list[torch.Tensor] | None,
        buffers: dict[str, torch.Tensor],
        host_rng: tuple[Any, dict[str, Any]] | None = None,
        grad_mode: tuple[bool, bool] = (True, False),
    ) -> None:
        self.rng = rng
        self.cuda_rng = cuda_rng
        self.buffers = buffers
        # (random.getstate(), np.random.get_state(legacy=False)); None: left as they are
        self.host_rng = host_rng
        # (grad enabled, inference mode): torch's fast paths run only without grad, so a
        # re-run under another mode would trace another pass (capture/fast_paths.py)
        self.grad_mode = grad_mode

    @classmethod
    def capture(cls, model: torch.nn.Module) -> WorldState:
        # An uninitialised CUDA has an untouched RNG; asking for it would start CUDA.
        cuda_rng = torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None
        buffers = {name: b.detach().clone() for name, b in model.named_buffers()}
        host_rng = (random.getstate(), np.random.get_state(legacy=False))
        grad_mode = (torch.is_grad_enabled(), torch.is_inference_mode_enabled())
        return cls(torch.get_rng_state(), cuda_rng, buffers, host_rng, grad_mode)

    def grad_context(self) -> contextlib.AbstractContextManager[Any]:
        """The grad mode the state was captured in, to run a re-run under."""
        grad_enabled, inference = self.grad_mode
        return torch.inference_mode() if inference else torch.set_grad_enabled(grad_enabled)

    def restore(self, model: torch.nn.Module) -> None:
        torch.set_rng_state(self.rng)
        if self.host_rng is not None:
            random.setstate(self.host_rng[0])
            np.random.set_state(self.host_rng[1])
        if self.cuda_rng is not None:
            torch.cuda.set_rng_state_all(self.cuda_rng)
        current = dict(model.named_buffers())
        with torch.no_grad():
            for name, saved in self.buffers.items():
                buf = current.get(name)
                # copy_ in place: the model (and the user) keep the same buffer objects.
                if buf is not None and buf.shape == saved.shape:
                    buf.copy_(saved)


def save_also(spec: SaveSpec, names: Sequence[str]) -> SaveSpec:
    """`spec` extended to also keep `names` (op labels or layers), in the form it came in."""
    extra = list(names)
    if spec == "all" or not extra:
        return spec
    if spec is None:
        return extra
    if callable(spec):
        wanted = set(extra)
        keeps: Callable[[OpRecord], bool] = spec
        return lambda r: r.label in wanted or r.layer in wanted or bool(keeps(r))
    return [*spec, *extra]
