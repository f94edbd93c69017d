"""Spatial Transformer that straightens a 94x24 plate crop before LPRNet reads it.

The layer names match the published `stn.pth` checkpoint. The sampling grid is built explicitly
(a constant base grid times `theta`) instead of with `affine_grid`, so the ONNX graph has no
`AffineGrid` node (opset >= 20, unclear TensorRT support); the result is the same.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

INPUT_HEIGHT = 24
INPUT_WIDTH = 94


def _base_grid(height: int, width: int) -> torch.Tensor:
    """Homogeneous output-pixel coordinates `[H*W, 3]` as (x, y, 1) in [-1, 1], align_corners=True."""
    ys = torch.linspace(-1.0, 1.0, height)
    xs = torch.linspace(-1.0, 1.0, width)
    grid_y, grid_x = torch.meshgrid(ys, xs, indexing="ij")
    return torch.stack([grid_x, grid_y, torch.ones_like(grid_x)], dim=-1).reshape(height * width, 3)


class STNet(nn.Module):
    """Predicts an affine transform per crop and resamples the crop with it (same shape out)."""

    def __init__(self) -> None:
        super().__init__()
        self.localization = nn.Sequential(
            nn.Conv2d(3, 32, kernel_size=3),
            nn.MaxPool2d(2, stride=2),
            nn.ReLU(),
            nn.Conv2d(32, 32, kernel_size=5),
            nn.MaxPool2d(3, stride=3),
            nn.ReLU(),
        )
        self.fc_loc = nn.Sequential(nn.Linear(32 * 2 * 14, 32), nn.ReLU(), nn.Linear(32, 6))
        # Not persistent: derived from the input size, never part of the checkpoint.
        self.register_buffer("base_grid", _base_grid(INPUT_HEIGHT, INPUT_WIDTH), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        theta = self.fc_loc(self.localization(x).flatten(1)).unflatten(1, (2, 3))
        # [H*W, 3] @ [B, 3, 2] -> [B, H*W, 2]: source (x, y) for every output pixel.
        grid = torch.matmul(self.base_grid, theta.transpose(1, 2))
        grid = grid.reshape(-1, INPUT_HEIGHT, INPUT_WIDTH, 2)
        return F.grid_sample(x, grid, align_corners=True)
