"""bench gating --offline's accounting: the connector's gate, hold and marker thinning over frames
made here (no servers)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from bench.gating import gate_offline, settings_of


def still_then_block(seconds: float = 20.0, fps: float = 10.0) -> list[tuple[float, np.ndarray]]:
    """A still grey scene with a block crossing it from 10 s to 11 s."""
    frames = []
    for i in range(int(seconds * fps)):
        t = i / fps
        frame = np.full((90, 160), 100, np.uint8)
        if 10.0 <= t < 11.0:
            x = int((t - 10.0) * 120)
            frame[30:60, x : x + 30] = 250
        frames.append((t, frame))
    return frames


def test_ungated_publishes_every_frame_and_gated_the_motion_with_its_rolls_and_fewer_markers():
    frames = still_then_block()
    path = Path("/streams/cam.mp4")
    assert gate_offline(frames, settings_of("ungated", path, 10.0), 1.0) == [(i, True) for i in range(200)]
    records = gate_offline(frames, settings_of("gated", path, 10.0), 1.0)
    assert [i for i, _ in records] == sorted(i for i, _ in records)  # in order, each at most once
    examined = [i for i, is_examined in records if is_examined]
    # the first frame, the block (100-109) and 1 s of post-roll (110-119), the defaults; no 1 s of
    # pre-roll (90-99): those frames are the background to a pixel; no heartbeat: the stream ends
    # 8 s after the last examined frame
    assert examined == [0, *range(100, 120)]
    markers = [i for i, is_examined in records if not is_examined]
    # a marker a second, and the static frame just before the block
    assert markers == [10, 20, 30, 40, 50, 60, 70, 80, 90, 99, 129, 139, 149, 159, 169, 179, 189, 199]
    every = gate_offline(frames, settings_of("gated", path, 10.0), 0.0)
    assert [i for i, e in every if e] == examined and len(every) == 200  # interval 0: one per frame
