"""Image models from `transformers`: vision transformers, convnets, and CLIP (images and text).

Builders that take a `size` give the bench's realistic model at "bench" and the tests' tiny one
at "tiny"; at "bench" they are the bare backbones (no classifier head), as the bench has always
timed them.
"""

from __future__ import annotations

from transformers import (
    CLIPConfig,
    CLIPModel,
    ConvNextConfig,
    ConvNextForImageClassification,
    MobileNetV2Config,
    MobileNetV2ForImageClassification,
    ResNetConfig,
    ResNetForImageClassification,
    ResNetModel,
    SwinConfig,
    SwinForImageClassification,
    ViTConfig,
    ViTForImageClassification,
    ViTModel,
)

from .case import (
    IMG,
    TINY_BERT_STYLE,
    VOCAB,
    Size,
    ZooCase,
    build,
    padding_mask,
    pixels,
    token_ids,
)

# Tiny classifiers tell 5 classes apart.
TINY_LABELS = 5


def vit(size: Size = "tiny") -> ZooCase:
    if size == "bench":
        cfg = ViTConfig()  # ViT-Base/16 at 224x224
        model, images = build(lambda: ViTModel(cfg)), pixels(cfg.image_size, batch=1)
    else:
        cfg = ViTConfig(
            **TINY_BERT_STYLE,
            image_size=IMG,
            patch_size=8,
            num_labels=TINY_LABELS,
            hidden_dropout_prob=0.1,
            attention_probs_dropout_prob=0.1,
        )
        model, images = build(lambda: ViTForImageClassification(cfg)), pixels()
    size_text = (
        f"{type(model).__name__}, {cfg.num_hidden_layers} layers, d={cfg.hidden_size}, "
        f"{cfg.image_size}x{cfg.image_size}, patch {cfg.patch_size}"
    )
    return ZooCase(
        "vit",
        model,
        (images,),
        description=size_text,
        min_ops=40,
        expected_ops=("conv2d", "layer_norm"),
    )


def resnet(size: Size = "tiny") -> ZooCase:
    """tiny: two basic-block stages; bench: ResNet-50 (ResNetConfig's defaults: bottleneck
    blocks, depths 3-4-6-3) on one 224x224 image."""
    if size == "bench":
        cfg = ResNetConfig()
        model, name, images = build(lambda: ResNetModel(cfg)), "resnet50", pixels(224, batch=1)
    else:
        cfg = ResNetConfig(
            embedding_size=16,
            hidden_sizes=[16, 32],
            depths=[1, 1],
            layer_type="basic",
            num_labels=TINY_LABELS,
        )
        model, name, images = build(lambda: ResNetForImageClassification(cfg)), "resnet", pixels()
    side = images.shape[-1]
    # BatchNorm only: train mode uses batch statistics but draws no random numbers.
    return ZooCase(
        name,
        model,
        (images,),
        description=f"{type(model).__name__} depths {cfg.depths}, {side}x{side}",
        min_ops=18,
        expected_ops=("conv2d", "batch_norm"),
        random_in_train=False,
    )


def resnet_stages() -> ZooCase:
    """Three basic-block stages of widths 16, 32, 64 and depths 1, 3, 3: stages 2 and 3 run
    the same op sequence at different widths (they must not fold together), and the last two
    blocks of each are alike (they fold, ×2)."""
    cfg = ResNetConfig(
        embedding_size=16,
        hidden_sizes=[16, 32, 64],
        depths=[1, 3, 3],
        layer_type="basic",
        num_labels=TINY_LABELS,
    )
    model = build(lambda: ResNetForImageClassification(cfg))
    return ZooCase(
        "resnet_stages",
        model,
        (pixels(),),
        description=f"ResNetForImageClassification widths {cfg.hidden_sizes} depths {cfg.depths}",
        min_ops=40,
        expected_ops=("conv2d", "batch_norm"),
        random_in_train=False,
    )


def swin() -> ZooCase:
    cfg = SwinConfig(
        image_size=IMG,
        patch_size=4,
        embed_dim=16,
        depths=[1, 1],
        num_heads=[2, 2],
        window_size=4,
        num_labels=TINY_LABELS,
        hidden_dropout_prob=0.1,
        drop_path_rate=0.1,
    )
    model = build(lambda: SwinForImageClassification(cfg))
    return ZooCase(
        "swin", model, (pixels(),), min_ops=80, expected_ops=("conv2d",), train_ops=("rand",)
    )


def convnext() -> ZooCase:
    cfg = ConvNextConfig(
        hidden_sizes=[16, 32],
        depths=[1, 1],
        num_stages=2,
        num_labels=TINY_LABELS,
        drop_path_rate=0.5,  # drop-path is its only randomness: high enough to show
    )
    model = build(lambda: ConvNextForImageClassification(cfg))
    return ZooCase(
        "convnext",
        model,
        (pixels(),),
        min_ops=20,
        expected_ops=("conv2d", "layer_norm"),
        train_ops=("rand",),
    )


def mobilenet_v2() -> ZooCase:
    cfg = MobileNetV2Config(
        image_size=IMG, depth_multiplier=0.25, num_labels=TINY_LABELS, classifier_dropout_prob=0.1
    )
    model = build(lambda: MobileNetV2ForImageClassification(cfg))
    return ZooCase(
        "mobilenet_v2", model, (pixels(),), min_ops=150, expected_ops=("conv2d", "batch_norm")
    )


def clip() -> ZooCase:
    cfg = CLIPConfig(
        text_config={
            "vocab_size": VOCAB,
            **TINY_BERT_STYLE,
            "max_position_embeddings": 32,
            "attention_dropout": 0.1,
        },
        vision_config={
            **TINY_BERT_STYLE,
            "image_size": IMG,
            "patch_size": 8,
            "attention_dropout": 0.1,
        },
        projection_dim=16,
    )
    # Defaults point at ids of the real 49k vocabulary.
    cfg.text_config.bos_token_id, cfg.text_config.eos_token_id = 1, 2
    model = build(lambda: CLIPModel(cfg))
    kwargs = {"attention_mask": padding_mask(), "pixel_values": pixels()}
    return ZooCase(
        "clip", model, (token_ids(),), kwargs, min_ops=110, expected_ops=("arange", "conv2d")
    )
