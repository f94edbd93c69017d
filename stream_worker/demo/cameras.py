"""The demo's simulated cameras: what each publishes (the inputs cycled, corrupt frames spread
among them on cam-1) and one producer thread per camera, counting the frames handed over."""

from __future__ import annotations

import itertools
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path

from stream_worker.demo.options import EXIT_USAGE, DemoError, DemoOptions
from stream_worker.tools.produce import (
    FrameSourceError,
    ProduceReport,
    check_sources,
    iter_frames,
    produce_frames,
)

CORRUPT_FRAME = b"this is not a JPEG: a corrupt frame to show the dead-letter path"


def resolve_inputs(paths: Sequence[Path], weights_dir: Path) -> list[Path]:
    """The paths given, else the JPEGs of `<weights dir>/../samples`; DemoError when neither."""
    if paths:
        try:
            check_sources(paths)
        except FrameSourceError as error:
            raise DemoError(str(error), EXIT_USAGE) from error
        return list(paths)
    samples = weights_dir.parent / "samples"
    jpegs = sorted(p for p in samples.glob("*") if p.suffix.lower() in {".jpg", ".jpeg"} and p.is_file())
    if not jpegs:
        raise DemoError(
            f"no frames to publish: give JPEG files, folders or videos as arguments, or set "
            f"LPR_WEIGHTS_DIR (or --weights-dir) so that its ../samples folder holds JPEGs "
            f"(looked in {samples})",
            EXIT_USAGE,
        )
    return jpegs


def camera_frames(
    inputs: Sequence[Path], camera_id: str, count: int, corrupt: int, stop: threading.Event
) -> Iterator[tuple[str, bytes]]:
    """`count` frames cycling through `inputs`, with `corrupt` corrupt frames spread evenly among
    them; ends early once `stop` is set."""
    corrupt_after = Counter(
        min(count, max(1, round((i + 1) * count / (corrupt + 1)))) for i in range(corrupt)
    )
    frames = itertools.islice(iter_frames(inputs, camera_id, repeat=count), count)
    corrupt_sent = 0
    for index, frame in enumerate(frames, start=1):
        if stop.is_set():
            return
        yield frame
        for _ in range(corrupt_after[index]):
            corrupt_sent += 1
            yield f"{camera_id}-corrupt-{corrupt_sent}", CORRUPT_FRAME


def camera_ids(count: int) -> list[str]:
    """The simulated cameras' ids (the frames' keys): cam-1 .. cam-N."""
    return [f"cam-{number}" for number in range(1, count + 1)]


class Cameras:
    """The cameras' producer threads; `start()` once, `stop()` (always) ends them early."""

    def __init__(self, options: DemoOptions, inputs: Sequence[Path], bootstrap: str, topic: str) -> None:
        self.options = options
        self._inputs = inputs
        self._bootstrap = bootstrap
        self._topic = topic
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._reports: dict[str, ProduceReport] = {}
        self._handed_over: Counter[str] = Counter()  # frames given to each camera's producer
        self._errors: list[BaseException] = []
        self.started_at: float | None = None

    def start(self) -> None:
        options = self.options
        self.started_at = time.monotonic()
        for number, camera_id in enumerate(camera_ids(options.cameras), start=1):
            corrupt = options.corrupt_frames if number == 1 else 0
            frames = camera_frames(self._inputs, camera_id, options.frames_per_camera, corrupt, self._stop)
            thread = threading.Thread(
                target=self._produce, args=(camera_id, frames), name=f"produce-{camera_id}", daemon=True
            )
            thread.start()
            self._threads.append(thread)

    def _produce(self, camera_id: str, frames: Iterator[tuple[str, bytes]]) -> None:
        try:
            self._reports[camera_id] = produce_frames(
                self._count(camera_id, frames),
                bootstrap_servers=self._bootstrap,
                topic=self._topic,
                camera_id=camera_id,
                fps=self.options.fps,
                local_broker=self.options.local_broker,
            )
        except Exception as error:  # reported by the main loop, which owns the exit status
            self._errors.append(error)

    def _count(self, camera_id: str, frames: Iterator[tuple[str, bytes]]) -> Iterator[tuple[str, bytes]]:
        for frame in frames:
            self._handed_over[camera_id] += 1
            yield frame

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join()

    def check(self) -> None:
        """DemoError when a producer failed."""
        if self._errors:
            raise DemoError(f"publishing frames failed: {self._errors[0]}")

    @property
    def producing(self) -> bool:
        return any(thread.is_alive() for thread in self._threads)

    @property
    def handed_over(self) -> int:
        return sum(self._handed_over.values())

    @property
    def sent(self) -> int:
        return sum(report.sent for report in self._reports.values())

    @property
    def failed(self) -> int:
        return sum(report.failed for report in self._reports.values())

    @property
    def seconds(self) -> float:
        return max((report.seconds for report in self._reports.values()), default=0.0)

    @property
    def first_error(self) -> str | None:
        return next((report.first_error for report in self._reports.values() if report.first_error), None)
