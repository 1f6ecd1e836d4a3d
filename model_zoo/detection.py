"""A small random two-stage detector in plain torch, shaped like torchvision's Faster R-CNN.

torchvision is not importable here, so this rebuilds the parts whose shapes and outputs a
person meets in the widget: a backbone whose body returns an OrderedDict of feature levels
("0", "1") and whose pyramid adds "pool"; a region proposal network; `roi_heads.box_predictor`
returning (class logits, box deltas) as a tuple; and `transform.postprocess`, a method called
as `self.transform.postprocess(...)` (not through `__call__`) that rescales the boxes with
loose tensor/div/unbind/mul/stack ops. The model returns a list of dicts with `boxes`,
`labels` and `scores`, one per image.
"""

from __future__ import annotations

from collections import OrderedDict

import torch
import torch.nn.functional as F
from torch import nn

from .case import ZooCase, build, generator

CHANNELS = 16
CLASSES = 5  # background and 4 object classes
PROPOSALS = 150
DETECTIONS = 10
IMAGE = 64
POOLED = 7


class Transform(nn.Module):
    """Normalises and resizes the images; `postprocess` scales boxes back to the input size."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size
        self.register_buffer("mean", torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1))
        self.register_buffer("std", torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1))

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        images = (images - self.mean) / self.std
        return F.interpolate(images, size=(self.size, self.size), mode="bilinear")

    def postprocess(
        self,
        detections: list[dict[str, torch.Tensor]],
        size: tuple[int, int],
        original: tuple[int, int],
    ) -> list[dict[str, torch.Tensor]]:
        for detection in detections:
            ratios = [
                torch.tensor(o, dtype=torch.float32) / torch.tensor(s, dtype=torch.float32)
                for s, o in zip(size, original, strict=True)
            ]
            ratio_height, ratio_width = ratios
            xmin, ymin, xmax, ymax = detection["boxes"].unbind(1)
            xmin = xmin * ratio_width
            xmax = xmax * ratio_width
            ymin = ymin * ratio_height
            ymax = ymax * ratio_height
            detection["boxes"] = torch.stack((xmin, ymin, xmax, ymax), dim=1)
        return detections


class Body(nn.Module):
    """Two stages of convolutions; returns the levels as torchvision's IntermediateLayerGetter."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, CHANNELS, 3, stride=2, padding=1), nn.ReLU())
        self.layer1 = nn.Sequential(
            nn.Conv2d(CHANNELS, CHANNELS, 3, stride=2, padding=1), nn.ReLU()
        )
        self.layer2 = nn.Sequential(
            nn.Conv2d(CHANNELS, 2 * CHANNELS, 3, stride=2, padding=1), nn.ReLU()
        )

    def forward(self, x: torch.Tensor) -> OrderedDict[str, torch.Tensor]:
        c1 = self.layer1(self.stem(x))
        return OrderedDict([("0", c1), ("1", self.layer2(c1))])


class Pyramid(nn.Module):
    """A feature pyramid: each level to CHANNELS channels, the top one added in, plus "pool"."""

    def __init__(self) -> None:
        super().__init__()
        self.inner = nn.ModuleList(
            [nn.Conv2d(CHANNELS, CHANNELS, 1), nn.Conv2d(2 * CHANNELS, CHANNELS, 1)]
        )
        self.layer = nn.ModuleList([nn.Conv2d(CHANNELS, CHANNELS, 3, padding=1) for _ in range(2)])

    def forward(self, levels: OrderedDict[str, torch.Tensor]) -> OrderedDict[str, torch.Tensor]:
        low, high = levels["0"], levels["1"]
        top = self.inner[1](high)
        merged = self.inner[0](low) + F.interpolate(top, size=low.shape[-2:], mode="nearest")
        out = OrderedDict([("0", self.layer[0](merged)), ("1", self.layer[1](top))])
        out["pool"] = F.max_pool2d(out["1"], 1, 2)
        return out


class Backbone(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = Body()
        self.fpn = Pyramid()

    def forward(self, x: torch.Tensor) -> OrderedDict[str, torch.Tensor]:
        return self.fpn(self.body(x))


class RPNHead(nn.Module):
    def __init__(self, anchors: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(CHANNELS, CHANNELS, 3, padding=1)
        self.cls_logits = nn.Conv2d(CHANNELS, anchors, 1)
        self.bbox_pred = nn.Conv2d(CHANNELS, 4 * anchors, 1)

    def forward(self, levels: list[torch.Tensor]) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        logits, deltas = [], []
        for level in levels:
            t = F.relu(self.conv(level))
            logits.append(self.cls_logits(t))
            deltas.append(self.bbox_pred(t))
        return logits, deltas


class RegionProposalNetwork(nn.Module):
    """Scores an anchor box per cell and size, moves it by its deltas, keeps the best."""

    def __init__(self) -> None:
        super().__init__()
        self.sizes = (8.0, 16.0, 32.0)
        self.head = RPNHead(len(self.sizes))

    def forward(self, image_size: int, levels: OrderedDict[str, torch.Tensor]) -> torch.Tensor:
        logits, deltas = self.head(list(levels.values()))
        boxes, scores = [], []
        for logit, delta in zip(logits, deltas, strict=True):
            n, a, h, w = logit.shape
            stride = image_size / h
            ys, xs = torch.meshgrid(
                torch.arange(h) * stride, torch.arange(w) * stride, indexing="ij"
            )
            half = torch.tensor(self.sizes) / 2
            centres = torch.stack((xs, ys), dim=-1).reshape(1, h * w, 2) + stride / 2
            anchors = torch.cat(
                (centres - half.view(a, 1, 1), centres + half.view(a, 1, 1)), dim=-1
            ).reshape(-1, 4)
            moved = anchors + delta.reshape(n, a, 4, h, w).permute(0, 1, 3, 4, 2).reshape(n, -1, 4)
            boxes.append(moved.clamp(0, image_size))
            scores.append(logit.reshape(n, -1))
        all_boxes, all_scores = torch.cat(boxes, dim=1), torch.cat(scores, dim=1)
        best = all_scores.topk(PROPOSALS, dim=1).indices
        return torch.gather(all_boxes, 1, best.unsqueeze(-1).expand(-1, -1, 4))[0]


class TwoMLPHead(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.fc6 = nn.Linear(CHANNELS * POOLED * POOLED, width)
        self.fc7 = nn.Linear(width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(self.fc7(F.relu(self.fc6(x.flatten(start_dim=1)))))


class FastRCNNPredictor(nn.Module):
    def __init__(self, width: int, classes: int) -> None:
        super().__init__()
        self.cls_score = nn.Linear(width, classes)
        self.bbox_pred = nn.Linear(width, classes * 4)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.cls_score(x), self.bbox_pred(x)


class RoIHeads(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.box_head = TwoMLPHead(32)
        self.box_predictor = FastRCNNPredictor(32, CLASSES)

    def pool(self, level: torch.Tensor, boxes: torch.Tensor, image_size: int) -> torch.Tensor:
        """Each box's square of the level, resampled to POOLED x POOLED (RoIAlign's role)."""
        unit = boxes / image_size * 2 - 1
        centre = (unit[:, :2] + unit[:, 2:]) / 2
        half = ((unit[:, 2:] - unit[:, :2]) / 2).clamp(min=1e-2)
        zeros = torch.zeros_like(half[:, 0])
        theta = torch.stack(
            (
                torch.stack((half[:, 0], zeros, centre[:, 0]), dim=1),
                torch.stack((zeros, half[:, 1], centre[:, 1]), dim=1),
            ),
            dim=1,
        )
        count = boxes.shape[0]
        grid = F.affine_grid(theta, [count, CHANNELS, POOLED, POOLED], align_corners=False)
        return F.grid_sample(level.expand(count, -1, -1, -1), grid, align_corners=False)

    def forward(
        self, levels: OrderedDict[str, torch.Tensor], proposals: torch.Tensor, image_size: int
    ) -> list[dict[str, torch.Tensor]]:
        features = self.box_head(self.pool(levels["0"], proposals, image_size))
        class_logits, box_deltas = self.box_predictor(features)
        scores = F.softmax(class_logits, -1)
        boxes = proposals.unsqueeze(1) + box_deltas.reshape(-1, CLASSES, 4)
        # drop the background class, keep the best boxes over all classes
        best, index = scores[:, 1:].flatten().topk(DETECTIONS)
        return [
            {
                "boxes": boxes[:, 1:].reshape(-1, 4)[index],
                "labels": index % (CLASSES - 1) + 1,
                "scores": best,
            }
        ]


class FasterRCNNLike(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.transform = Transform(IMAGE)
        self.backbone = Backbone()
        self.rpn = RegionProposalNetwork()
        self.roi_heads = RoIHeads()

    def forward(self, images: torch.Tensor) -> list[dict[str, torch.Tensor]]:
        original = (images.shape[-2], images.shape[-1])
        resized = self.transform(images)
        levels = self.backbone(resized)
        proposals = self.rpn(IMAGE, levels)
        detections = self.roi_heads(levels, proposals, IMAGE)
        return self.transform.postprocess(detections, (IMAGE, IMAGE), original)


def faster_rcnn_like() -> ZooCase:
    """One 48x48 image through the detector: 150 proposals, 5 classes, 10 detections."""
    images = torch.rand(1, 3, 48, 48, generator=generator(3))
    return ZooCase(
        name="faster_rcnn_like",
        model=build(FasterRCNNLike),
        args=(images,),
        description=(
            f"Faster R-CNN-like, {CHANNELS} channels, {PROPOSALS} proposals, {CLASSES} classes"
        ),
        min_ops=40,
        expected_ops=("conv2d", "grid_sample", "topk", "softmax", "unbind", "stack"),
        random_in_train=False,
    )
