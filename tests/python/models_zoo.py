"""Tiny real models with random weights, built from configs (never downloaded).

Each builder returns a `ZooCase`: the model, its positional inputs and keyword inputs, a lower
bound on the number of ops a full trace must see, and ops the model is known to call, factory
ops among them (`torch.arange`, `torch.zeros`: the tracer must see them though no tensor flows
into them).
Inputs are made from a fixed generator so a case is the same every time it is built.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

SEQ = 12
BATCH = 2
VOCAB = 96
IMG = 32


@dataclass
class ZooCase:
    name: str
    model: nn.Module
    args: tuple[Any, ...]
    kwargs: dict[str, Any] = field(default_factory=dict)
    min_ops: int = 10
    # Op names (OpRecord.func) a trace must contain; train_ops only in train mode.
    expected_ops: tuple[str, ...] = ()
    train_ops: tuple[str, ...] = ()
    # Whether train mode draws random numbers (dropout, drop-path), so seeds matter.
    random_in_train: bool = True


def _gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _ids(vocab: int = VOCAB, seq: int = SEQ, seed: int = 1) -> torch.Tensor:
    return torch.randint(0, vocab, (BATCH, seq), generator=_gen(seed))


def _mask(seq: int = SEQ) -> torch.Tensor:
    mask = torch.ones(BATCH, seq, dtype=torch.long)
    mask[1, -3:] = 0  # one padded row, so masking code paths run
    return mask


def _pixels(channels: int = 3, size: int = IMG, seed: int = 2) -> torch.Tensor:
    return torch.randn(BATCH, channels, size, size, generator=_gen(seed))


def _build(factory: Callable[[], nn.Module]) -> nn.Module:
    torch.manual_seed(0)  # weights are random but the same on every build
    return factory().eval()


def gpt2() -> ZooCase:
    from transformers import GPT2Config, GPT2LMHeadModel

    cfg = GPT2Config(
        vocab_size=VOCAB,
        n_positions=64,
        n_embd=32,
        n_layer=2,
        n_head=2,
        bos_token_id=1,
        eos_token_id=2,
    )
    model = _build(lambda: GPT2LMHeadModel(cfg))
    return ZooCase(
        "gpt2",
        model,
        (_ids(),),
        {"attention_mask": _mask()},
        min_ops=80,
        expected_ops=("arange", "embedding", "scaled_dot_product_attention"),
    )


def _llama_like(name: str, config_class: str, model_class: str, **extra: Any) -> ZooCase:
    """Llama-family decoders (rotary, grouped-query attention) differ only in their config."""
    import transformers

    cfg = getattr(transformers, config_class)(
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
        attention_dropout=0.1,
        **extra,
    )
    model = _build(lambda: getattr(transformers, model_class)(cfg))
    return ZooCase(
        name,
        model,
        (_ids(),),
        {"attention_mask": _mask()},
        min_ops=120,
        expected_ops=("arange", "scaled_dot_product_attention"),
    )


def llama() -> ZooCase:
    return _llama_like("llama", "LlamaConfig", "LlamaForCausalLM")


def mistral() -> ZooCase:
    return _llama_like("mistral", "MistralConfig", "MistralForCausalLM", sliding_window=8)


def qwen2() -> ZooCase:
    return _llama_like("qwen2", "Qwen2Config", "Qwen2ForCausalLM")


def bert() -> ZooCase:
    from transformers import BertConfig, BertForSequenceClassification

    cfg = BertConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
        num_labels=3,
    )
    model = _build(lambda: BertForSequenceClassification(cfg))
    kwargs = {
        "attention_mask": _mask(),
        "token_type_ids": torch.zeros(BATCH, SEQ, dtype=torch.long),
    }
    return ZooCase(
        "bert", model, (_ids(),), kwargs, min_ops=60, expected_ops=("arange", "layer_norm")
    )


def bert_all_outputs() -> ZooCase:
    """BERT returning every hidden state and attention map: many output leaves, and the
    eager attention path instead of scaled_dot_product_attention."""
    from transformers import BertConfig, BertModel

    cfg = BertConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
        attn_implementation="eager",
    )
    model = _build(lambda: BertModel(cfg))
    kwargs = {"attention_mask": _mask(), "output_hidden_states": True, "output_attentions": True}
    return ZooCase(
        "bert_all_outputs", model, (_ids(),), kwargs, min_ops=60, expected_ops=("softmax",)
    )


def albert() -> ZooCase:
    """ALBERT shares one layer across depth: the same modules run once per layer."""
    from transformers import AlbertConfig, AlbertForMaskedLM

    cfg = AlbertConfig(
        vocab_size=VOCAB,
        embedding_size=16,
        hidden_size=32,
        num_hidden_layers=3,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
        hidden_dropout_prob=0.1,  # ALBERT's defaults are 0
        attention_probs_dropout_prob=0.1,
    )
    model = _build(lambda: AlbertForMaskedLM(cfg))
    return ZooCase(
        "albert",
        model,
        (_ids(),),
        {"attention_mask": _mask()},
        min_ops=60,
        expected_ops=("arange",),
    )


def gpt2_bf16() -> ZooCase:
    """GPT-2 in bfloat16: dtypes other than float32 all the way through."""
    case = gpt2()
    case.name = "gpt2_bf16"
    case.model = case.model.to(torch.bfloat16)
    return case


def distilbert() -> ZooCase:
    from transformers import DistilBertConfig, DistilBertModel

    cfg = DistilBertConfig(
        vocab_size=VOCAB, dim=32, n_layers=2, n_heads=2, hidden_dim=64, max_position_embeddings=64
    )
    model = _build(lambda: DistilBertModel(cfg))
    return ZooCase(
        "distilbert",
        model,
        (_ids(),),
        {"attention_mask": _mask()},
        min_ops=50,
        expected_ops=("arange", "layer_norm"),
    )


def t5() -> ZooCase:
    from transformers import T5Config, T5ForConditionalGeneration

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
    model = _build(lambda: T5ForConditionalGeneration(cfg))
    kwargs = {
        "attention_mask": _mask(),
        "decoder_input_ids": _ids(seq=6, seed=3),
    }
    return ZooCase(
        "t5", model, (_ids(),), kwargs, min_ops=250, expected_ops=("arange", "embedding")
    )


def bart() -> ZooCase:
    from transformers import BartConfig, BartForConditionalGeneration

    cfg = BartConfig(
        vocab_size=VOCAB,
        d_model=32,
        encoder_layers=2,
        decoder_layers=2,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        encoder_ffn_dim=64,
        decoder_ffn_dim=64,
        max_position_embeddings=64,
    )
    model = _build(lambda: BartForConditionalGeneration(cfg))
    kwargs = {"attention_mask": _mask(), "decoder_input_ids": _ids(seq=6, seed=3)}
    return ZooCase(
        "bart", model, (_ids(),), kwargs, min_ops=150, expected_ops=("arange", "layer_norm")
    )


def whisper() -> ZooCase:
    from transformers import WhisperConfig, WhisperForConditionalGeneration

    mel_frames = 32  # encoder downsamples by 2: 16 source positions
    cfg = WhisperConfig(
        vocab_size=VOCAB,
        num_mel_bins=16,
        d_model=32,
        encoder_layers=2,
        decoder_layers=2,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        encoder_ffn_dim=64,
        decoder_ffn_dim=64,
        max_source_positions=mel_frames // 2,
        max_target_positions=32,
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=2,
        decoder_start_token_id=1,
        dropout=0.1,
    )
    model = _build(lambda: WhisperForConditionalGeneration(cfg))
    features = torch.randn(BATCH, 16, mel_frames, generator=_gen(4))
    kwargs = {"decoder_input_ids": _ids(seq=6, seed=3)}
    return ZooCase(
        "whisper", model, (features,), kwargs, min_ops=140, expected_ops=("conv1d", "arange")
    )


def clip() -> ZooCase:
    from transformers import CLIPConfig, CLIPModel

    cfg = CLIPConfig(
        text_config={
            "vocab_size": VOCAB,
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "max_position_embeddings": 32,
            "attention_dropout": 0.1,
        },
        vision_config={
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "image_size": IMG,
            "patch_size": 8,
            "attention_dropout": 0.1,
        },
        projection_dim=16,
    )
    # Defaults point at ids of the real 49k vocabulary.
    cfg.text_config.bos_token_id, cfg.text_config.eos_token_id = 1, 2
    model = _build(lambda: CLIPModel(cfg))
    kwargs = {"attention_mask": _mask(), "pixel_values": _pixels()}
    return ZooCase("clip", model, (_ids(),), kwargs, min_ops=110, expected_ops=("arange", "conv2d"))


def vit() -> ZooCase:
    from transformers import ViTConfig, ViTForImageClassification

    cfg = ViTConfig(
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        image_size=IMG,
        patch_size=8,
        num_labels=5,
        hidden_dropout_prob=0.1,
        attention_probs_dropout_prob=0.1,
    )
    model = _build(lambda: ViTForImageClassification(cfg))
    return ZooCase("vit", model, (_pixels(),), min_ops=40, expected_ops=("conv2d", "layer_norm"))


def swin() -> ZooCase:
    from transformers import SwinConfig, SwinForImageClassification

    cfg = SwinConfig(
        image_size=IMG,
        patch_size=4,
        embed_dim=16,
        depths=[1, 1],
        num_heads=[2, 2],
        window_size=4,
        num_labels=5,
        hidden_dropout_prob=0.1,
        drop_path_rate=0.1,
    )
    model = _build(lambda: SwinForImageClassification(cfg))
    return ZooCase(
        "swin", model, (_pixels(),), min_ops=80, expected_ops=("conv2d",), train_ops=("rand",)
    )


def resnet() -> ZooCase:
    from transformers import ResNetConfig, ResNetForImageClassification

    cfg = ResNetConfig(
        embedding_size=16,
        hidden_sizes=[16, 32],
        depths=[1, 1],
        layer_type="basic",
        num_labels=5,
    )
    model = _build(lambda: ResNetForImageClassification(cfg))
    # BatchNorm only: train mode uses batch statistics but draws no random numbers.
    return ZooCase(
        "resnet",
        model,
        (_pixels(),),
        random_in_train=False,
        min_ops=18,
        expected_ops=("conv2d", "batch_norm"),
    )


def convnext() -> ZooCase:
    from transformers import ConvNextConfig, ConvNextForImageClassification

    cfg = ConvNextConfig(
        hidden_sizes=[16, 32],
        depths=[1, 1],
        num_stages=2,
        num_labels=5,
        drop_path_rate=0.5,  # drop-path is its only randomness: high enough to show
    )
    model = _build(lambda: ConvNextForImageClassification(cfg))
    return ZooCase(
        "convnext",
        model,
        (_pixels(),),
        min_ops=20,
        expected_ops=("conv2d", "layer_norm"),
        train_ops=("rand",),
    )


def mobilenet_v2() -> ZooCase:
    from transformers import MobileNetV2Config, MobileNetV2ForImageClassification

    cfg = MobileNetV2Config(
        image_size=IMG, depth_multiplier=0.25, num_labels=5, classifier_dropout_prob=0.1
    )
    model = _build(lambda: MobileNetV2ForImageClassification(cfg))
    return ZooCase(
        "mobilenet_v2", model, (_pixels(),), min_ops=150, expected_ops=("conv2d", "batch_norm")
    )


def mamba() -> ZooCase:
    from transformers import MambaConfig, MambaForCausalLM

    cfg = MambaConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        state_size=8,
        num_hidden_layers=2,
        expand=2,
        conv_kernel=4,
        use_mambapy=False,
    )
    model = _build(lambda: MambaForCausalLM(cfg))
    # Mamba has no dropout; its slow (pure torch) path runs on CPU without CUDA kernels.
    return ZooCase(
        "mamba",
        model,
        (_ids(),),
        random_in_train=False,
        min_ops=250,
        expected_ops=("conv1d", "softplus", "zeros"),
    )


class LSTMTagger(nn.Module):
    """Embedding -> 2-layer LSTM -> linear, the classic sequence tagger."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, 32)
        self.lstm = nn.LSTM(32, 32, num_layers=2, batch_first=True, dropout=0.2)
        self.drop = nn.Dropout(0.2)
        self.head = nn.Linear(32, 7)

    def forward(self, ids: torch.Tensor) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        out, state = self.lstm(self.embed(ids))
        return self.head(self.drop(out)), state


def lstm() -> ZooCase:
    model = _build(LSTMTagger)
    return ZooCase("lstm", model, (_ids(),), min_ops=5, expected_ops=("lstm", "zeros"))


class TinyEncoder(nn.Module):
    """nn.TransformerEncoder with a learned position table and a padding mask."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, 32)
        self.pos = nn.Parameter(torch.randn(64, 32) * 0.02)
        layer = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.1, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
        self.head = nn.Linear(32, 3)

    def forward(self, ids: torch.Tensor, pad_mask: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(ids.shape[1], device=ids.device)
        h = self.embed(ids) + self.pos[positions]
        h = self.encoder(h, src_key_padding_mask=pad_mask)
        return self.head(h.mean(dim=1))


def transformer_encoder() -> ZooCase:
    model = _build(TinyEncoder)
    pad = _mask() == 0
    return ZooCase(
        "transformer_encoder",
        model,
        (_ids(), pad),
        min_ops=25,
        expected_ops=("arange", "multi_head_attention_forward"),
    )


class SmallCNN(nn.Module):
    """Conv-BN-ReLU stack with dropout: train mode updates BatchNorm running stats."""

    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1),
            nn.BatchNorm2d(8),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1),
            nn.BatchNorm2d(16),
            nn.ReLU(inplace=True),
        )
        self.drop = nn.Dropout(0.3)
        self.head = nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.features(x).flatten(2).mean(-1)
        return self.head(self.drop(h))


def small_cnn() -> ZooCase:
    model = _build(SmallCNN)
    return ZooCase(
        "small_cnn",
        model,
        (_pixels(),),
        min_ops=9,
        expected_ops=("conv2d", "batch_norm", "dropout"),
    )


BUILDERS: dict[str, Callable[[], ZooCase]] = {
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
    )
}
