"""What a demo run is asked to do (`DemoOptions`), and how it fails (`DemoError`, the exit codes)."""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

EXIT_OK = 0
EXIT_FAILED = 1  # a server or the worker failed, or frames went unaccounted for
EXIT_USAGE = 2  # nothing to publish, an unusable path, missing or corrupt weights
PICTURE_RUNS_KEPT = 5  # the default pictures folder keeps the newest runs' folders, not every run's


class DemoError(Exception):
    """The demo cannot go on; the message says what failed and what to do."""

    def __init__(self, message: str, exit_code: int = EXIT_FAILED) -> None:
        super().__init__(message)
        self.exit_code = exit_code


@dataclass(frozen=True)
class DemoOptions:
    inputs: Sequence[Path] = ()
    cameras: int = 3
    fps: float = 1.0
    duration_s: float = 10.0
    corrupt_frames: int = 1
    bootstrap_servers: str | None = None
    triton_url: str | None = None
    weights_dir: Path | None = None
    repository: Path = Path("model_repository")
    partitions: int = 3
    settle_timeout_s: float = 60.0
    plate_images: Path | None = None  # where the plate pictures go; None: `plate_images_dir`
    video_cameras: Sequence[Path] = ()  # clips read by the camera connector; none: the default clip
    video_camera: bool = True  # False: no video camera, no connector

    @property
    def frames_per_camera(self) -> int:
        return max(1, round(self.fps * self.duration_s))

    @property
    def planned_frames(self) -> int:
        return self.cameras * self.frames_per_camera + self.corrupt_frames

    @property
    def local_broker(self) -> bool:
        """The demo starts the embedded broker: its clients publish as that broker needs."""
        return self.bootstrap_servers is None

    @property
    def pass_gap_s(self) -> float:
        """The samples repeat every other frame (a corrupt frame may come between): the gap that
        makes each camera's repeated car one pass (for the sightings and the alerts)."""
        return min(20.0, max(1.5, 3.5 / self.fps))

    def plate_images_dir(self, run_id: str) -> Path:
        """The folder given, else a fresh one per run under `default_pictures_root`: the pictures
        outlive the demo (its scratch folder does not) and runs do not mix."""
        if self.plate_images is not None:
            return self.plate_images
        return default_pictures_root() / run_id


def default_pictures_root() -> Path:
    return Path(tempfile.gettempdir()) / "stream-worker-demo-plates"
