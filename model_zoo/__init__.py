"""One model zoo for tests and bench: real architectures with random weights, in two sizes.

`TEST_MODELS`: the tiny models the tests trace (name -> builder, no arguments).
`STRUCTURE_MODELS`: the tiny models whose first view and structure the tests check.
`BENCH_MODELS`: the bench's rows (name -> builder taking a `Size`: "bench" for the timed
rows, "tiny" for `--quick`). `chain(n_ops)`: a synthetic model of about n_ops ops.
"""

from __future__ import annotations

from collections.abc import Callable

from .case import Size, ZooCase
from .diffusion import autoencoder_kl, unet2d_condition
from .language import (
    albert,
    bart,
    bert,
    bert_all_outputs,
    distilbert,
    gpt2,
    gpt2_bf16,
    gpt2_deep,
    llama,
    mamba,
    mistral,
    qwen2,
    t5,
    whisper,
)
from .torch_nn import chain, gru_cell_lm, looped, lstm, small_cnn, transformer_encoder
from .vision import clip, convnext, mobilenet_v2, resnet, resnet_stages, swin, vit

TEST_MODELS: dict[str, Callable[[], ZooCase]] = {
    b.__name__: b
    for b in (
        gpt2,
        llama,
        mistral,
        qwen2,
        bert,
        bert_all_outputs,
        albert,
        gpt2_bf16,
        distilbert,
        t5,
        bart,
        whisper,
        clip,
        vit,
        swin,
        resnet,
        convnext,
        mobilenet_v2,
        mamba,
        lstm,
        transformer_encoder,
        small_cnn,
        looped,
    )
}

# The models of the first views a person meets (issue #24): what they must show, each tested
# in tests/python/test_model_structure.py and the browser tests; kept out of TEST_MODELS so
# the tests of every model do not grow.
STRUCTURE_MODELS: dict[str, Callable[[], ZooCase]] = {
    b.__name__: b for b in (gpt2_deep, gru_cell_lm, resnet_stages, gpt2, bert, t5)
}

# diffusers models (their outputs are registered with pytree without key functions), tested
# in tests/python/test_diffusion_models.py.
DIFFUSION_MODELS: dict[str, Callable[[], ZooCase]] = {
    b.__name__: b for b in (unet2d_condition, autoencoder_kl)
}

BENCH_MODELS: dict[str, Callable[[Size], ZooCase]] = {
    "gpt2": gpt2,
    "bert": bert,
    "llama": llama,
    "resnet50": resnet,
    "vit": vit,
    "whisper": whisper,
    "lstm": lstm,
    "looped": looped,
}

__all__ = [
    "BENCH_MODELS",
    "DIFFUSION_MODELS",
    "STRUCTURE_MODELS",
    "TEST_MODELS",
    "Size",
    "ZooCase",
    "chain",
]
