"""LPRNet: reads the characters of a 94x24 plate crop as 18 time steps of 23-class logits.

The layer names match the published `lprnet.pth` checkpoint. Two deliberate departures from the
original code, neither changing a batch of one:

* The global-context features are divided by the mean of their squares PER SAMPLE. The original
  took that mean over the whole batch, so a plate's logits depended on its batch neighbours,
  which is wrong under Triton's dynamic batching.
* The channel-subsampling `MaxPool3d` (a kernel of one channel) runs as what it computes: a 2-D
  max pool of every channel, then every `channel_stride`-th channel. Max pooling is exact, so the
  outputs are bit-identical to the 5-D pool; the graph keeps ONNX Runtime's blocked (NCHWc)
  convolution layout through the pools, where a 5-D `MaxPool` made it convert every tap to plain
  NCHW and back (LPRNet cost about 0.9x the CPU time on an AVX-512 CPU, docs/performance.md).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from stream_worker.contracts.plate_formats import LPRNET, RECOGNIZER_ALPHABETS

NUM_CLASSES = 23
SEQUENCE_LENGTH = 18
# Class index -> character; the last class (22) is the CTC blank. Latin look-alikes of the
# Cyrillic letters allowed on Russian plates. Used by the tests; serving decodes in the BLS model
# (model_repository/plate_recognition/1/frames.py keeps its own copy: it imports nothing of ours).
VOCABULARY = RECOGNIZER_ALPHABETS[LPRNET]
BLANK_INDEX = NUM_CLASSES - 1
# Backbone indices whose outputs feed the global context (after ReLUs 2, 6, 13, 22).
_CONTEXT_TAPS = (2, 6, 13, 22)


class SmallBasicBlock(nn.Module):
    """Bottleneck: 1x1 reduce, 3x1 and 1x3 convolutions, 1x1 expand."""

    def __init__(self, ch_in: int, ch_out: int) -> None:
        super().__init__()
        mid = ch_out // 4
        self.block = nn.Sequential(
            nn.Conv2d(ch_in, mid, kernel_size=1),
            nn.ReLU(),
            nn.Conv2d(mid, mid, kernel_size=(3, 1), padding=(1, 0)),
            nn.ReLU(),
            nn.Conv2d(mid, mid, kernel_size=(1, 3), padding=(0, 1)),
            nn.ReLU(),
            nn.Conv2d(mid, ch_out, kernel_size=1),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.block(x)


class ChannelMaxPool(nn.Module):
    """The original's `MaxPool3d` over (channel, height, width) of a 4-D `[B, C, H, W]` tensor, whose
    channel kernel is 1: a 2-D max pool, then every `stride[0]`-th channel (pooling first keeps the
    exported graph in ONNX Runtime's blocked layout up to the small pooled tensor)."""

    def __init__(self, kernel_size: tuple[int, int, int], stride: tuple[int, int, int]) -> None:
        super().__init__()
        if kernel_size[0] != 1:
            raise ValueError(f"a channel kernel of 1 is all LPRNet uses, not {kernel_size[0]}")
        self.channel_stride = stride[0]
        self.pool = nn.MaxPool2d(kernel_size=kernel_size[1:], stride=stride[1:])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pooled = self.pool(x)
        return pooled if self.channel_stride == 1 else pooled[:, :: self.channel_stride]


class LPRNet(nn.Module):
    """Plate crop `[B, 3, 24, 94]` (normalised) -> logits `[B, 23, 18]`."""

    def __init__(self, dropout_rate: float = 0.1) -> None:
        super().__init__()
        self.backbone = nn.Sequential(
            nn.Conv2d(3, 64, kernel_size=3, stride=1),  # 0
            nn.BatchNorm2d(64),
            nn.ReLU(),  # 2: tap A
            ChannelMaxPool(kernel_size=(1, 3, 3), stride=(1, 1, 1)),
            SmallBasicBlock(64, 128),  # 4
            nn.BatchNorm2d(128),
            nn.ReLU(),  # 6: tap B
            ChannelMaxPool(kernel_size=(1, 3, 3), stride=(2, 1, 2)),
            SmallBasicBlock(64, 256),  # 8
            nn.BatchNorm2d(256),
            nn.ReLU(),  # 10
            SmallBasicBlock(256, 256),  # 11
            nn.BatchNorm2d(256),
            nn.ReLU(),  # 13: tap C
            ChannelMaxPool(kernel_size=(1, 3, 3), stride=(4, 1, 2)),
            nn.Dropout(dropout_rate),
            nn.Conv2d(64, 256, kernel_size=(1, 4), stride=1),  # 16
            nn.BatchNorm2d(256),
            nn.ReLU(),  # 18
            nn.Dropout(dropout_rate),
            nn.Conv2d(256, NUM_CLASSES, kernel_size=(13, 1), stride=1),  # 20
            nn.BatchNorm2d(NUM_CLASSES),
            nn.ReLU(),  # 22: tap D
        )
        self.container = nn.Conv2d(64 + 128 + 256 + NUM_CLASSES, NUM_CLASSES, kernel_size=1)

    @staticmethod
    def normalise(features: torch.Tensor) -> torch.Tensor:
        """Divide by the mean of squares of each sample (over channel, height, width)."""
        return features / features.pow(2).mean(dim=(1, 2, 3), keepdim=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        taps = []
        for index, layer in enumerate(self.backbone):
            x = layer(x)
            if index in _CONTEXT_TAPS:
                taps.append(x)
        tap_a, tap_b, tap_c, tap_d = taps
        context = [
            F.avg_pool2d(tap_a, kernel_size=5, stride=5),
            F.avg_pool2d(tap_b, kernel_size=5, stride=5),
            F.avg_pool2d(tap_c, kernel_size=(4, 10), stride=(4, 2)),
            tap_d,
        ]
        features = torch.cat([self.normalise(f) for f in context], dim=1)
        return self.container(features).mean(dim=2)
