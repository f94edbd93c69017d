"""A folder of video clips, each named after the one plate it shows (`gate-van-H133OE123.mov`, the
layout of ../shared/videos): every frame is read as a photo whose only label is that text, so the
figures say in how many frames the plate was read exactly, and two runs compare frame by frame.

Frames are decoded with OpenCV and re-encoded as JPEG (quality 95) before any server starts; a
clip is a few hundred frames at most here, so they are held in memory.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from stream_worker.contracts.watchlist import normalise_plate
from stream_worker.evaluation.labels import MAX_LISTED, LabelsError
from stream_worker.media import (
    REENCODED_JPEG_QUALITY,
    VIDEO_SUFFIXES,
    MediaError,
    MediaSupportMissing,
    video_jpegs,
)


@dataclass(frozen=True)
class ClipFrame:
    name: str  # `<clip file>#<frame index>`
    plate: str  # the clip's plate
    jpeg: bytes


def clip_paths(folder: Path) -> list[Path]:
    return sorted(path for path in folder.iterdir() if path.suffix.lower() in VIDEO_SUFFIXES)


def clip_plate(clip: Path) -> str | None:
    """The plate the clip's name ends with (after its last dash), normalised; None without one."""
    head, dash, tail = clip.stem.rpartition("-")
    plate = normalise_plate(tail)
    return plate if dash and head and plate.isalnum() and any(c.isdigit() for c in plate) else None


def load_clip_frames(folder: Path) -> list[ClipFrame]:
    """Every frame of every clip, clips in name order; LabelsError for a clip without a plate in its
    name or one that cannot be decoded."""
    clips = clip_paths(folder)
    unlabelled = [clip.name for clip in clips if clip_plate(clip) is None]
    if unlabelled:
        listed = ", ".join(unlabelled[:MAX_LISTED])
        raise LabelsError(f"clips whose name does not end with -PLATE (as gate-van-H133OE123.mov): {listed}")
    frames: list[ClipFrame] = []
    for clip in clips:
        plate = clip_plate(clip) or ""
        try:
            jpegs = list(video_jpegs(clip, REENCODED_JPEG_QUALITY, "eval on video clips"))
        except (MediaError, MediaSupportMissing) as error:
            raise LabelsError(str(error)) from error
        if not jpegs:
            raise LabelsError(f"{clip}: no frame could be decoded")
        frames.extend(ClipFrame(f"{clip.name}#{index:04d}", plate, jpeg) for index, jpeg in enumerate(jpegs))
    return frames
