"""The rebuilt STN and LPRNet: strict checkpoint loading, batch invariance, reading the sample plate."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from support import edit_distance

from stream_worker.nets.export import load_net
from stream_worker.nets.lprnet import (
    BLANK_INDEX,
    NUM_CLASSES,
    SEQUENCE_LENGTH,
    VOCABULARY,
    ChannelMaxPool,
    LPRNet,
)
from stream_worker.nets.stn import STNet

EXPECTED_PLATE = "B840CK197"


class WholeBatchLPRNet(LPRNet):
    """The original LPRNet's normalisation: one mean of squares over the whole batch."""

    @staticmethod
    def normalise(features: torch.Tensor) -> torch.Tensor:
        return features / features.pow(2).mean()


def greedy_ctc(logits: torch.Tensor) -> tuple[str, list[float]]:
    """Text and per-step max probability of `[23, 18]` logits: argmax, collapse repeats, drop blanks."""
    probabilities = torch.softmax(logits, dim=0)
    best = probabilities.argmax(dim=0).tolist()
    text = [VOCABULARY[c] for i, c in enumerate(best) if c != BLANK_INDEX and (i == 0 or c != best[i - 1])]
    return "".join(text), probabilities.max(dim=0).values.tolist()


@pytest.fixture(scope="module")
def stn(checkpoints: dict[str, Path]) -> STNet:
    return load_net("stn", checkpoints["stn"])


@pytest.fixture(scope="module")
def lprnet(checkpoints: dict[str, Path]) -> LPRNet:
    return load_net("lprnet", checkpoints["lprnet"])


@pytest.mark.parametrize("name", ["stn", "lprnet"])
def test_checkpoint_loads_strictly(name: str, checkpoints: dict[str, Path]) -> None:
    state = torch.load(checkpoints[name], map_location="cpu", weights_only=True)["net_state_dict"]
    module = {"stn": STNet, "lprnet": LPRNet}[name]()
    assert {k: v.shape for k, v in module.state_dict().items()} == {k: v.shape for k, v in state.items()}
    module.load_state_dict(state, strict=True)


def test_explicit_grid_equals_affine_grid(stn: STNet, other_crops: np.ndarray) -> None:
    batch = torch.from_numpy(other_crops)
    with torch.no_grad():
        theta = stn.fc_loc(stn.localization(batch).flatten(1)).view(-1, 2, 3)
        grid = F.affine_grid(theta, list(batch.shape), align_corners=True)
        expected = F.grid_sample(batch, grid, align_corners=True)
        assert (stn(batch) - expected).abs().max().item() < 1e-5


@pytest.mark.parametrize("stride", [(1, 1, 1), (2, 1, 2), (4, 1, 2)])
def test_channel_max_pool_is_the_original_5d_pool_bit_for_bit(stride: tuple[int, int, int]) -> None:
    """The 2-D pool + channel stride computes exactly what the original MaxPool3d on a 5-D view did."""
    x = torch.randn(3, 256, 18, 44, generator=torch.Generator().manual_seed(0))
    original = torch.nn.MaxPool3d(kernel_size=(1, 3, 3), stride=stride)(x.unsqueeze(1)).squeeze(1)
    assert torch.equal(ChannelMaxPool(kernel_size=(1, 3, 3), stride=stride)(x), original)


def _logits_alone_and_batched(
    model: LPRNet, crop: np.ndarray, others: np.ndarray
) -> tuple[torch.Tensor, ...]:
    position = len(others) // 2
    batch = np.concatenate([others[:position], crop[None], others[position:]])
    with torch.no_grad():
        alone = model(torch.from_numpy(crop[None]))[0]
        batched = model(torch.from_numpy(batch))[position]
    return alone, batched


def test_lprnet_is_batch_invariant(lprnet: LPRNet, plate_crop: np.ndarray, other_crops: np.ndarray) -> None:
    alone, batched = _logits_alone_and_batched(lprnet, plate_crop, other_crops)
    diff = (alone - batched).abs().max().item()
    print(f"batch invariance: max |alone - in batch of {len(other_crops) + 1}| = {diff:.3g}")
    assert diff < 1e-4


def test_original_whole_batch_normalisation_is_not_batch_invariant(
    lprnet: LPRNet, plate_crop: np.ndarray, other_crops: np.ndarray
) -> None:
    original = WholeBatchLPRNet()
    original.load_state_dict(lprnet.state_dict())
    original.eval()
    alone, batched = _logits_alone_and_batched(original, plate_crop, other_crops)
    diff = (alone - batched).abs().max().item()
    print(f"original normalisation: max |alone - in batch| = {diff:.3g}")
    assert diff > 1e-2
    # For a batch of one the fix changes nothing.
    with torch.no_grad():
        single = torch.from_numpy(plate_crop[None])
        assert (original(single) - lprnet(single)).abs().max().item() < 1e-5


def test_reads_the_sample_plate(stn: STNet, lprnet: LPRNet, plate_crop: np.ndarray) -> None:
    with torch.no_grad():
        logits = lprnet(stn(torch.from_numpy(plate_crop[None])))[0]
    text, step_probabilities = greedy_ctc(logits)
    print(f"read {text!r}; per-step max probability {[round(p, 2) for p in step_probabilities]}")
    assert logits.shape == (NUM_CLASSES, SEQUENCE_LENGTH) == (23, 18)
    assert edit_distance(text, EXPECTED_PLATE) <= 1
