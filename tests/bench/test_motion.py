"""bench motion's accounting: static shares and plate frames kept, on a clip made here, and a real
clip decoded with PyAV (from ../shared/videos)."""

from __future__ import annotations

import numpy as np
from support import require

from bench.motion import VIDEOS, Clip, clip_rows, load_clips, sweep_rows
from stream_worker.contracts.cameras import MotionSettings


def made_clip() -> Clip:
    """10 s still at 4 frames/s after 5 s of lead-in, then a block crossing for 2 s, then still."""
    still = np.full((120, 160), 100, np.uint8)
    grays, times = [], []
    for i in range(20 + 60):
        t = -5.0 + 0.25 * i
        frame = still.copy()
        if 10.0 <= t < 12.0:
            x = int((t - 10.0) * 60)
            frame[40:80, x : x + 30] = 250
        grays.append(frame)
        times.append(t)
    return Clip("made-A123BC77", "A123BC77", times, grays, [b""] * 60, lead=20)


def test_static_shares_and_plate_frames_kept():
    clip = made_clip()
    plates = {clip.name: {20 + 4 * 10, 20 + 4 * 10 + 3}}  # at 10.0 s and 10.75 s: while it moves
    motion = MotionSettings(pre_roll_s=1.0, post_roll_s=1.0, heartbeat_s=10.0)
    [row] = clip_rows([clip], plates, motion, 5.0)
    assert row["lead_in_frames"] == 20 and row["static_lead_in"] == 0.95  # only the first frame
    # examined: the heartbeat at 5 s (10 s after the lead-in's first), the motion 10 .. 11.75 s, 1 s
    # of post-roll; the connector would also publish the 1 s of pre-roll before the motion, but
    # those frames are the background to a pixel (nothing was there), so it publishes the same
    assert row["static_worker"] == round(1 - (1 + 8 + 4) / 60, 3)
    assert row["static_connector"] == row["static_worker"]
    assert (row["plate_frames"], row["plate_examined"], row["plate_published"]) == (2, 2, 2)
    [first, *_] = sweep_rows([clip], plates, motion)
    assert first["passes_read"] == 1


def test_a_real_clip_decodes_and_gates():
    require(VIDEOS.is_dir(), "../shared/videos is not here")
    clips = load_clips(VIDEOS, lead_in_s=2.0)
    assert {c.plate for c in clips} >= {"H133OE123", "Y663YO750", "T404YA47"}
    rows = clip_rows(clips, None, MotionSettings(), 5.0)
    for clip, row in zip(clips, rows, strict=True):
        assert len(clip.jpegs) == row["frames"] == len(clip.grays) - clip.lead
        assert clip.grays[0].shape[1] >= 160 and row["static_lead_in"] is not None
