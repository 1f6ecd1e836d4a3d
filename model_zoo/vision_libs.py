"""Image models from timm and torchvision, built as their users build them, tiny and random.

timm and torchvision are not lens_widget dependencies (the `vision` extra): each builder
imports its library when called, so this module imports without them, and `LIBRARY_OF` names
the package a test must find (pytest.importorskip) before it calls a builder. No weights are
ever downloaded: `pretrained=False` / `weights=None`, and `weights_backbone=None` too.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from .case import BATCH, IMG, ZooCase, build, generator, pixels

# Tiny classifiers and the detector tell 5 classes apart (the detector's 0 is background).
TINY_LABELS = 5
# The detector's images: two of different sizes, as a detection batch often is.
DETECTION_SIZES = ((3, 64, 80), (3, 72, 64))


def timm_vit() -> ZooCase:
    """timm's ViT (`create_model`, the registry path users take): 2 blocks of width 32 on
    32x32 images in 8x8 patches, with dropout and drop-path so train mode draws numbers."""
    import timm

    model = build(
        lambda: timm.create_model(
            "vit_tiny_patch16_224",
            pretrained=False,
            img_size=IMG,
            patch_size=8,
            embed_dim=32,
            depth=2,
            num_heads=2,
            num_classes=TINY_LABELS,
            drop_rate=0.1,
            drop_path_rate=0.1,
        )
    )
    return ZooCase(
        "timm_vit",
        model,
        (pixels(),),
        description="timm VisionTransformer, 2 blocks, d=32, 32x32, patch 8",
        min_ops=40,
        expected_ops=("conv2d", "layer_norm", "scaled_dot_product_attention"),
        train_ops=("dropout",),
    )


def timm_efficientnet() -> ZooCase:
    """timm's EfficientNet-B0 (depthwise convs, squeeze-excite, SiLU), random weights, on
    32x32 images; drop-path makes train mode random."""
    import timm

    model = build(
        lambda: timm.create_model(
            "efficientnet_b0",
            pretrained=False,
            num_classes=TINY_LABELS,
            drop_rate=0.1,
            drop_path_rate=0.1,
        )
    )
    return ZooCase(
        "timm_efficientnet",
        model,
        (pixels(),),
        description="timm EfficientNet-B0, 32x32",
        min_ops=150,
        expected_ops=("conv2d", "batch_norm", "silu", "sigmoid"),
    )


def tv_resnet() -> ZooCase:
    """torchvision's ResNet-18 (`models.resnet18`), random weights, on 32x32 images."""
    from torchvision.models import resnet18

    model = build(lambda: resnet18(weights=None, num_classes=TINY_LABELS))
    # BatchNorm only: train mode uses batch statistics but draws no random numbers.
    return ZooCase(
        "tv_resnet",
        model,
        (pixels(),),
        description="torchvision resnet18, 32x32",
        min_ops=50,
        expected_ops=("conv2d", "batch_norm", "max_pool2d", "adaptive_avg_pool2d"),
        random_in_train=False,
    )


def detection_images() -> list[torch.Tensor]:
    return [torch.rand(size, generator=generator(5 + k)) for k, size in enumerate(DETECTION_SIZES)]


def detection_targets() -> list[dict[str, torch.Tensor]]:
    """One box per image (x1, y1, x2, y2 inside it) with a class in 1..4: train mode's input."""
    boxes = [torch.tensor([[8.0, 10.0, 40.0, 50.0]]), torch.tensor([[20.0, 4.0, 60.0, 30.0]])]
    return [{"boxes": b, "labels": torch.tensor([k + 1])} for k, b in enumerate(boxes)]


def tv_fasterrcnn() -> ZooCase:
    """torchvision's Faster R-CNN with a MobileNetV3-FPN backbone, random weights: a list of
    images of two sizes in; in eval mode a list of dicts (boxes, labels, scores) out, through
    the resize/normalise transform, the region proposals, NMS and RoIAlign. A score threshold
    of 0 keeps random weights' detections. Train mode takes `train_kwargs` (the targets),
    samples proposals at random and returns a dict of losses."""
    from torchvision.models.detection import fasterrcnn_mobilenet_v3_large_fpn

    model = build(
        lambda: fasterrcnn_mobilenet_v3_large_fpn(
            weights=None,
            weights_backbone=None,
            num_classes=TINY_LABELS,
            min_size=64,
            max_size=96,
            box_score_thresh=0.0,
            box_detections_per_img=8,
            rpn_pre_nms_top_n_test=64,
            rpn_post_nms_top_n_test=16,
            rpn_pre_nms_top_n_train=64,
            rpn_post_nms_top_n_train=16,
            box_batch_size_per_image=16,
        )
    )
    assert len(DETECTION_SIZES) == BATCH
    return ZooCase(
        "tv_fasterrcnn",
        model,
        (detection_images(),),
        description="torchvision fasterrcnn_mobilenet_v3_large_fpn, 64-96 px",
        min_ops=150,
        expected_ops=("conv2d", "interpolate", "nms", "roi_align"),
        train_kwargs={"targets": detection_targets()},
    )


# name -> builder, and the package each needs (pytest.importorskip it first)
LIBRARY_MODELS: dict[str, Callable[[], ZooCase]] = {
    b.__name__: b for b in (timm_vit, timm_efficientnet, tv_resnet, tv_fasterrcnn)
}
LIBRARY_OF: dict[str, str] = {
    "timm_vit": "timm",
    "timm_efficientnet": "timm",
    "tv_resnet": "torchvision",
    "tv_fasterrcnn": "torchvision",
}
