"""The demo's video cameras: real clips read through the camera connector (`stream-worker connect`),
beside the simulated cameras.

Each is a camera whose `source` is a video file played in a loop, sampled to `VIDEO_FPS` and gated
by motion, exactly as a camera with an RTSP address is read in production. By default the demo
takes one clip of `<weights dir>/../videos`: the longest (by duration, then by name), so that one
loop shows a whole vehicle pass within the demo's 10 s; `--video-camera PATH` names clips instead
(one camera each), `--no-video-camera` leaves the connector out. The connector is stopped once
the simulated cameras are done and each clip has played once whole (its clips loop forever).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import KafkaException

from stream_worker.cameras.records import encode_settings
from stream_worker.contracts.cameras import CameraSettings, CameraSource, MotionSettings
from stream_worker.demo.options import EXIT_USAGE, DemoError
from stream_worker.service.compacted import CompactedTopicError, write_compacted

VIDEO_SUFFIXES = frozenset({".mp4", ".mov", ".mkv", ".avi", ".webm", ".m4v", ".ts"})
VIDEO_FPS = 4.0  # the clips' own rate (gate cameras): every frame, gated by motion


@dataclass(frozen=True)
class VideoCamera:
    camera_id: str
    path: Path
    seconds: float = 0.0  # the clip's duration: the demo shows it once whole

    @property
    def settings(self) -> CameraSettings:
        """The clip in a loop at `VIDEO_FPS`, motion gating on (its defaults), plate pictures on."""
        return CameraSettings(
            display_name=f"demo {self.camera_id} ({self.path.name})",
            plate_images=True,
            source=CameraSource(url=str(self.path.resolve()), fps=VIDEO_FPS, loop=True),
            motion=MotionSettings(),
        )


def clip_seconds(path: Path) -> float:
    """A clip's duration (0 when unreadable: it sorts last)."""
    import av  # heavy: only when the demo looks at its videos

    try:
        with av.open(str(path)) as container:
            return container.duration / 1_000_000 if container.duration else 0.0
    except (av.FFmpegError, OSError):
        return 0.0


def default_video(weights_dir: Path) -> Path | None:
    """The longest clip of `<weights dir>/../videos` (ties: the first by name), None when none."""
    folder = weights_dir.parent / "videos"
    clips = sorted(p for p in folder.glob("*") if p.suffix.lower() in VIDEO_SUFFIXES and p.is_file())
    if not clips:
        return None
    return max(clips, key=clip_seconds)  # the first of equals: by name


def video_cameras(paths: Sequence[Path], weights_dir: Path, enabled: bool) -> list[VideoCamera]:
    """`video-1..N` for the clips given, else for the default clip, none when disabled or absent;
    DemoError (usage) for a clip given that is not a readable file."""
    if not enabled:
        if paths:
            raise DemoError("--video-camera and --no-video-camera exclude each other", EXIT_USAGE)
        return []
    if not paths:
        found = default_video(weights_dir)
        paths = [found] if found is not None else []
    for path in paths:
        if not path.is_file():
            raise DemoError(f"--video-camera {path}: no such file", EXIT_USAGE)
    return [
        VideoCamera(f"video-{number}", path, clip_seconds(path)) for number, path in enumerate(paths, start=1)
    ]


def describe(cameras: Sequence[VideoCamera]) -> str:
    clips = ", ".join(f"{camera.camera_id}: {camera.path.name}" for camera in cameras)
    return f"setting up {clips} (looped, {VIDEO_FPS:g} fps, motion gating, read by the camera connector)"


def write_video_settings(bootstrap: str, topic: str, cameras: Sequence[VideoCamera]) -> None:
    records = [encode_settings(camera.camera_id, camera.settings) for camera in cameras]
    try:
        write_compacted(bootstrap, topic, records)
    except (CompactedTopicError, KafkaException) as error:
        raise DemoError(f"cannot write the camera settings to {topic}: {error}") from error
