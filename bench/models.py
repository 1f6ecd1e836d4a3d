"""Realistic-size models with random weights, built from configs (never downloaded).

Each builder takes `quick`; quick=True gives a tiny version of the same architecture so the
smoke test exercises every code path in seconds. Inputs come from fixed seeds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn


@dataclass
class BenchCase:
    name: str
    size: str  # the configuration in words, for the report
    model: nn.Module
    args: tuple[Any, ...]
    kwargs: dict[str, Any] = field(default_factory=dict)


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _build(factory: Callable[[], nn.Module]) -> nn.Module:
    torch.manual_seed(0)
    return factory().eval()


def gpt2(quick: bool) -> BenchCase:
    from transformers import GPT2Config, GPT2LMHeadModel

    layers, seq = (1, 16) if quick else (12, 128)
    cfg = GPT2Config(n_layer=layers) if not quick else GPT2Config(n_layer=1, n_embd=64, n_head=2)
    ids = torch.randint(0, cfg.vocab_size, (1, seq), generator=_gen(1))
    size = f"GPT2LMHeadModel, {layers} layers, d={cfg.n_embd}, vocab {cfg.vocab_size}, seq {seq}"
    return BenchCase("gpt2", size, _build(lambda: GPT2LMHeadModel(cfg)), (ids,))


def bert(quick: bool) -> BenchCase:
    from transformers import BertConfig, BertModel

    if quick:
        cfg = BertConfig(
            num_hidden_layers=1, hidden_size=64, num_attention_heads=2, intermediate_size=128
        )
        seq = 16
    else:
        cfg, seq = BertConfig(), 128
    ids = torch.randint(0, cfg.vocab_size, (1, seq), generator=_gen(1))
    mask = torch.ones(1, seq, dtype=torch.long)
    size = f"BertModel, {cfg.num_hidden_layers} layers, d={cfg.hidden_size}, seq {seq}"
    return BenchCase("bert", size, _build(lambda: BertModel(cfg)), (ids,), {"attention_mask": mask})


def llama(quick: bool) -> BenchCase:
    from transformers import LlamaConfig, LlamaForCausalLM

    # A small-but-real Llama: GQA (12 query heads, 4 kv heads), SwiGLU, RoPE, 32k vocab.
    if quick:
        cfg = LlamaConfig(
            vocab_size=256,
            hidden_size=64,
            intermediate_size=128,
            num_hidden_layers=1,
            num_attention_heads=4,
            num_key_value_heads=2,
        )
        seq = 16
    else:
        cfg = LlamaConfig(
            vocab_size=32000,
            hidden_size=768,
            intermediate_size=2048,
            num_hidden_layers=4,
            num_attention_heads=12,
            num_key_value_heads=4,
        )
        seq = 128
    ids = torch.randint(0, cfg.vocab_size, (1, seq), generator=_gen(1))
    size = (
        f"LlamaForCausalLM, {cfg.num_hidden_layers} layers, d={cfg.hidden_size}, "
        f"ffn {cfg.intermediate_size}, {cfg.num_attention_heads}q/{cfg.num_key_value_heads}kv "
        f"heads, vocab {cfg.vocab_size}, seq {seq}"
    )
    return BenchCase("llama", size, _build(lambda: LlamaForCausalLM(cfg)), (ids,))


def resnet50(quick: bool) -> BenchCase:
    from transformers import ResNetConfig, ResNetModel

    # ResNetConfig() defaults are ResNet-50 (bottleneck, depths 3-4-6-3).
    cfg = (
        ResNetConfig(depths=[1, 1, 1, 1], hidden_sizes=[16, 32, 64, 128], embedding_size=16)
        if quick
        else ResNetConfig()
    )
    img = 32 if quick else 224
    x = torch.randn(1, 3, img, img, generator=_gen(2))
    size = f"ResNetModel depths {cfg.depths}, {img}x{img}"
    return BenchCase("resnet50", size, _build(lambda: ResNetModel(cfg)), (x,))


def vit(quick: bool) -> BenchCase:
    from transformers import ViTConfig, ViTModel

    if quick:
        cfg = ViTConfig(
            num_hidden_layers=1,
            hidden_size=64,
            num_attention_heads=2,
            intermediate_size=128,
            image_size=32,
            patch_size=16,
        )
    else:
        cfg = ViTConfig()
    x = torch.randn(1, 3, cfg.image_size, cfg.image_size, generator=_gen(2))
    size = (
        f"ViTModel, {cfg.num_hidden_layers} layers, d={cfg.hidden_size}, "
        f"{cfg.image_size}x{cfg.image_size}, patch {cfg.patch_size}"
    )
    return BenchCase("vit", size, _build(lambda: ViTModel(cfg)), (x,))


def whisper(quick: bool) -> BenchCase:
    from transformers import WhisperConfig, WhisperModel

    # Whisper-tiny sizes; the full 30 s window (3000 mel frames) and 16 decoder tokens.
    d, layers, frames, tokens = (64, 1, 200, 4) if quick else (384, 4, 3000, 16)
    cfg = WhisperConfig(
        d_model=d,
        encoder_layers=layers,
        decoder_layers=layers,
        encoder_attention_heads=6 if not quick else 2,
        decoder_attention_heads=6 if not quick else 2,
        encoder_ffn_dim=4 * d,
        decoder_ffn_dim=4 * d,
        num_mel_bins=80,
        max_source_positions=frames // 2,
    )
    feats = torch.randn(1, 80, frames, generator=_gen(3))
    dec = torch.randint(0, cfg.vocab_size, (1, tokens), generator=_gen(1))
    size = (
        f"WhisperModel, {layers}+{layers} layers, d={d}, 80 mel x {frames} frames, "
        f"{tokens} decoder tokens"
    )
    return BenchCase(
        "whisper", size, _build(lambda: WhisperModel(cfg)), (feats,), {"decoder_input_ids": dec}
    )


class _LSTMNet(nn.Module):
    def __init__(self, vocab: int, dim: int, hidden: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.lstm = nn.LSTM(dim, hidden, num_layers=2, batch_first=True)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        out, _ = self.lstm(self.embed(ids))
        return self.head(out[:, -1])


def lstm(quick: bool) -> BenchCase:
    vocab, dim, hidden, batch, seq = (50, 16, 32, 2, 8) if quick else (10000, 256, 512, 8, 100)
    ids = torch.randint(0, vocab, (batch, seq), generator=_gen(1))
    size = (
        f"embed {dim} -> 2-layer LSTM hidden {hidden} -> linear {vocab}, batch {batch}, seq {seq}"
    )
    return BenchCase("lstm", size, _build(lambda: _LSTMNet(vocab, dim, hidden)), (ids,))


class _Block(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fc = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + torch.relu(self.fc(self.norm(x)))


class _Looped(nn.Module):
    """One block applied N times: the rolled view should fold it into one node per op."""

    def __init__(self, dim: int, times: int) -> None:
        super().__init__()
        self.block = _Block(dim)
        self.times = times

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for _ in range(self.times):
            x = self.block(x)
        return x


def looped(quick: bool) -> BenchCase:
    dim, batch, times = (16, 2, 3) if quick else (512, 64, 20)
    x = torch.randn(batch, dim, generator=_gen(2))
    size = f"one LayerNorm+Linear({dim})+ReLU+residual block applied {times}x, batch {batch}"
    return BenchCase("looped", size, _build(lambda: _Looped(dim, times)), (x,))


REALISTIC: dict[str, Callable[[bool], BenchCase]] = {
    "gpt2": gpt2,
    "bert": bert,
    "llama": llama,
    "resnet50": resnet50,
    "vit": vit,
    "whisper": whisper,
    "lstm": lstm,
    "looped": looped,
}


class _Chain(nn.Module):
    """`blocks` tiny two-op blocks, in modules of 10: a graph of ~2*blocks ops, cheap to run."""

    def __init__(self, blocks: int) -> None:
        super().__init__()
        self.groups = nn.ModuleList(
            nn.Sequential(*(nn.Sequential(nn.Linear(8, 8), nn.ReLU()) for _ in range(10)))
            for _ in range(max(1, blocks // 10))
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for group in self.groups:
            x = group(x)
        return x


def chain(n_ops: int) -> BenchCase:
    """A synthetic model with about `n_ops` traced ops (linear + relu per block)."""
    model = _build(lambda: _Chain(n_ops // 2))
    return BenchCase(
        f"chain{n_ops}",
        f"{n_ops // 2} Linear(8,8)+ReLU blocks",
        model,
        (torch.randn(4, 8, generator=_gen(2)),),
    )
