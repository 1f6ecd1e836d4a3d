"""Language models from `transformers`: decoders, encoders, encoder-decoders (Whisper hears
audio), a state-space model.

Builders that take a `size` give the bench's realistic model at "bench" and the tests' tiny one
at "tiny"; where the two use different heads (noted), each size keeps the one it always had.
"""

from __future__ import annotations

from typing import Any

import torch
import transformers
from torch import nn
from transformers import (
    AlbertConfig,
    AlbertForMaskedLM,
    BartConfig,
    BartForConditionalGeneration,
    BertConfig,
    BertForSequenceClassification,
    BertModel,
    DistilBertConfig,
    DistilBertModel,
    GPT2Config,
    GPT2LMHeadModel,
    MambaConfig,
    MambaForCausalLM,
    T5Config,
    T5ForConditionalGeneration,
    WhisperConfig,
    WhisperForConditionalGeneration,
    WhisperModel,
)

from .case import (
    BATCH,
    SEQ,
    TINY_BERT_STYLE,
    TINY_SEQ2SEQ_STYLE,
    VOCAB,
    Size,
    ZooCase,
    bert_style,
    build,
    generator,
    padding_mask,
    seq2seq_style,
    token_ids,
)

BENCH_SEQ = 128  # one row of 128 tokens, unpadded


def _tiny_text_case(name: str, model: nn.Module, min_ops: int, *expected_ops: str) -> ZooCase:
    """Two rows of token ids, one padded, as the tests feed every tiny language model."""
    return ZooCase(
        name,
        model,
        (token_ids(),),
        {"attention_mask": padding_mask()},
        description=f"{type(model).__name__}, vocab {VOCAB}, {BATCH} rows of {SEQ} tokens",
        min_ops=min_ops,
        expected_ops=expected_ops,
    )


def gpt2(size: Size = "tiny") -> ZooCase:
    if size == "bench":
        cfg = GPT2Config(n_layer=12)  # GPT-2 small
    else:
        cfg = GPT2Config(
            vocab_size=VOCAB,
            n_positions=64,
            n_embd=32,
            n_layer=2,
            n_head=2,
            bos_token_id=1,
            eos_token_id=2,
        )
    model = build(lambda: GPT2LMHeadModel(cfg))
    if size == "tiny":
        return _tiny_text_case(
            "gpt2", model, 80, "arange", "embedding", "scaled_dot_product_attention"
        )
    ids = token_ids(cfg.vocab_size, BENCH_SEQ, batch=1)
    size_text = (
        f"GPT2LMHeadModel, {cfg.n_layer} layers, d={cfg.n_embd}, vocab {cfg.vocab_size}, "
        f"seq {BENCH_SEQ}"
    )
    return ZooCase("gpt2", model, (ids,), description=size_text)


def gpt2_deep() -> ZooCase:
    """GPT-2 of 12 layers (tiny widths) with a padded attention mask: the first view a person
    meets on a real decoder, mask helpers and all."""
    cfg = GPT2Config(
        vocab_size=VOCAB, n_positions=64, n_embd=32, n_layer=12, n_head=2, bos_token_id=1,
        eos_token_id=2,
    )  # fmt: skip
    model = build(lambda: GPT2LMHeadModel(cfg))
    return _tiny_text_case("gpt2_deep", model, 400, "arange", "scaled_dot_product_attention")


def gpt2_bf16() -> ZooCase:
    """GPT-2 in bfloat16: dtypes other than float32 all the way through."""
    case = gpt2()
    case.name = "gpt2_bf16"
    case.model = case.model.to(torch.bfloat16)
    return case


def _llama_like(name: str, config_class: str, model_class: str, **extra: Any) -> ZooCase:
    """Tiny Llama-family decoders (rotary, grouped-query attention) differ only in config."""
    cfg = getattr(transformers, config_class)(
        vocab_size=VOCAB,
        **{**TINY_BERT_STYLE, "num_attention_heads": 4},
        num_key_value_heads=2,
        max_position_embeddings=64,
        attention_dropout=0.1,
        **extra,
    )
    model = build(lambda: getattr(transformers, model_class)(cfg))
    return _tiny_text_case(name, model, 120, "arange", "scaled_dot_product_attention")


def llama(size: Size = "tiny") -> ZooCase:
    if size == "tiny":
        return _llama_like("llama", "LlamaConfig", "LlamaForCausalLM")
    # A small-but-real Llama: GQA (12 query heads, 4 kv heads), SwiGLU, RoPE, 32k vocab.
    cfg = transformers.LlamaConfig(
        vocab_size=32000,
        **bert_style(hidden=768, layers=4, heads=12, ffn=2048),
        num_key_value_heads=4,
    )
    ids = token_ids(cfg.vocab_size, BENCH_SEQ, batch=1)
    size_text = (
        f"LlamaForCausalLM, {cfg.num_hidden_layers} layers, d={cfg.hidden_size}, "
        f"ffn {cfg.intermediate_size}, {cfg.num_attention_heads}q/{cfg.num_key_value_heads}kv "
        f"heads, vocab {cfg.vocab_size}, seq {BENCH_SEQ}"
    )
    model = build(lambda: transformers.LlamaForCausalLM(cfg))
    return ZooCase("llama", model, (ids,), description=size_text)


def mistral() -> ZooCase:
    return _llama_like("mistral", "MistralConfig", "MistralForCausalLM", sliding_window=8)


def qwen2() -> ZooCase:
    return _llama_like("qwen2", "Qwen2Config", "Qwen2ForCausalLM")


# BERT's tiny shape; the tests' two BERTs differ in head and attention implementation.
_TINY_BERT = {"vocab_size": VOCAB, **TINY_BERT_STYLE, "max_position_embeddings": 64}


def bert(size: Size = "tiny") -> ZooCase:
    """tiny: the sequence classifier, with token types; bench: bert-base's bare encoder."""
    if size == "bench":
        cfg = BertConfig()
        ids = token_ids(cfg.vocab_size, BENCH_SEQ, batch=1)
        mask = torch.ones(1, BENCH_SEQ, dtype=torch.long)
        size_text = (
            f"BertModel, {cfg.num_hidden_layers} layers, d={cfg.hidden_size}, seq {BENCH_SEQ}"
        )
        model = build(lambda: BertModel(cfg))
        return ZooCase("bert", model, (ids,), {"attention_mask": mask}, description=size_text)
    cfg = BertConfig(**_TINY_BERT, num_labels=3)
    # BERT-family models take positions from a buffer: the `arange` of transformers 5's mask
    # code is no op transformers 4.45 runs, so bert/albert/distilbert expect none.
    case = _tiny_text_case(
        "bert", build(lambda: BertForSequenceClassification(cfg)), 60, "embedding", "layer_norm"
    )
    case.kwargs["token_type_ids"] = torch.zeros(BATCH, SEQ, dtype=torch.long)
    return case


def bert_all_outputs() -> ZooCase:
    """BERT returning every hidden state and attention map: many output leaves, and the
    eager attention path instead of scaled_dot_product_attention."""
    cfg = BertConfig(**_TINY_BERT, attn_implementation="eager")
    case = _tiny_text_case("bert_all_outputs", build(lambda: BertModel(cfg)), 60, "softmax")
    case.kwargs |= {"output_hidden_states": True, "output_attentions": True}
    return case


def albert() -> ZooCase:
    """ALBERT shares one layer across depth: the same modules run once per layer."""
    cfg = AlbertConfig(
        **{**_TINY_BERT, "num_hidden_layers": 3},
        embedding_size=16,
        hidden_dropout_prob=0.1,  # ALBERT's defaults are 0
        attention_probs_dropout_prob=0.1,
    )
    return _tiny_text_case("albert", build(lambda: AlbertForMaskedLM(cfg)), 60, "embedding")


def distilbert() -> ZooCase:
    cfg = DistilBertConfig(
        vocab_size=VOCAB, dim=32, n_layers=2, n_heads=2, hidden_dim=64, max_position_embeddings=64
    )
    model = build(lambda: DistilBertModel(cfg))
    return _tiny_text_case("distilbert", model, 50, "embedding", "layer_norm")


def _encoder_decoder_case(name: str, model: nn.Module, min_ops: int, *expected: str) -> ZooCase:
    """Padded token rows into the encoder, 6 decoder tokens."""
    case = _tiny_text_case(name, model, min_ops, *expected)
    case.kwargs["decoder_input_ids"] = token_ids(seq=6, seed=3)
    return case


def t5() -> ZooCase:
    cfg = T5Config(
        vocab_size=VOCAB,
        d_model=32,
        d_kv=8,
        d_ff=64,
        num_layers=2,
        num_decoder_layers=2,
        num_heads=4,
        relative_attention_num_buckets=8,
        decoder_start_token_id=0,
        pad_token_id=0,
    )
    model = build(lambda: T5ForConditionalGeneration(cfg))
    return _encoder_decoder_case("t5", model, 250, "arange", "embedding")


def bart() -> ZooCase:
    cfg = BartConfig(vocab_size=VOCAB, **TINY_SEQ2SEQ_STYLE, max_position_embeddings=64)
    model = build(lambda: BartForConditionalGeneration(cfg))
    return _encoder_decoder_case("bart", model, 150, "arange", "layer_norm")


def whisper(size: Size = "tiny") -> ZooCase:
    """tiny: the full speech-to-text model; bench: Whisper-tiny's encoder-decoder without the
    vocabulary head, on the full 30 s window (3000 mel frames) and 16 decoder tokens."""
    if size == "bench":
        d, layers, frames, tokens = 384, 4, 3000, 16
        cfg = WhisperConfig(
            **seq2seq_style(width=d, layers=layers, heads=6, ffn=4 * d),
            num_mel_bins=80,
            max_source_positions=frames // 2,
        )
        features = torch.randn(1, 80, frames, generator=generator(3))
        decoder_ids = token_ids(cfg.vocab_size, tokens, batch=1)
        size_text = (
            f"WhisperModel, {layers}+{layers} layers, d={d}, 80 mel x {frames} frames, "
            f"{tokens} decoder tokens"
        )
        model = build(lambda: WhisperModel(cfg))
        return ZooCase("whisper", model, (features,), {"decoder_input_ids": decoder_ids}, size_text)
    mel_frames = 32  # encoder downsamples by 2: 16 source positions
    cfg = WhisperConfig(
        vocab_size=VOCAB,
        num_mel_bins=16,
        **TINY_SEQ2SEQ_STYLE,
        max_source_positions=mel_frames // 2,
        max_target_positions=32,
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=2,
        decoder_start_token_id=1,
        dropout=0.1,
    )
    return ZooCase(
        "whisper",
        build(lambda: WhisperForConditionalGeneration(cfg)),
        (torch.randn(BATCH, 16, mel_frames, generator=generator(4)),),
        {"decoder_input_ids": token_ids(seq=6, seed=3)},
        description=f"WhisperForConditionalGeneration, 16 mel x {mel_frames} frames",
        min_ops=140,
        expected_ops=("conv1d", "arange"),
    )


def mamba() -> ZooCase:
    cfg = MambaConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        state_size=8,
        num_hidden_layers=2,
        expand=2,
        conv_kernel=4,
        use_mambapy=False,
    )
    # Mamba takes no attention mask and has no dropout; its slow (pure torch) path runs on
    # CPU without CUDA kernels.
    return ZooCase(
        "mamba",
        build(lambda: MambaForCausalLM(cfg)),
        (token_ids(),),
        description=f"MambaForCausalLM, vocab {VOCAB}, {BATCH} rows of {SEQ} tokens",
        min_ops=250,
        expected_ops=("conv1d", "softplus", "zeros"),
        random_in_train=False,
    )
