"""The worker's motion gate: a frame in which nothing moved is not sent to Triton.

For the frames of producers that are not ours (`stream-worker produce`, a user's own), per camera
whose settings have `motion` enabled: the step between validation and batching decodes the
frame's small grey copy (cameras/thumbnails.py, luma only, DCT-scaled) and asks the camera's
`CameraMotion` (cameras/motion.py, the same gate the connector runs). A frame gated static gets an
event that says `examined: false` instead of a place in a batch; motion, post-roll and heartbeat
frames go on to Triton.

While a camera is static, only every `STATIC_STRIDE`th frame is decoded: the grey copy is most of
what a static frame costs (the Huffman decoding of the whole JPEG, ~2.8 CPU ms of 1080p), and
the broker's share of a frame does not shrink. A frame passed over is held until the camera's
next frame is decided: when that one shows motion, the held one is examined too (a pre-roll of
one frame, so the start of a motion is not lost); otherwise it is static with it. A held frame
whose camera sends nothing more for `HOLD_S` of wall time is decoded and decided alone. Holding
delays the events of its partition (they are published in offset order) by at most a frame
interval, or `HOLD_S`.

Frames of one camera arrive in order on one partition and this step runs on the main thread in
consumption order, so each camera's gate sees its frames in order. Its clock is the frame's
`captured_at`, or the time the worker consumed it when the camera sends none. Cameras with a
`source` are left alone: the connector reads and gates them already, and gating its output again
would throw away the pre-roll it published on purpose; its static markers (a record with no
image and the header `static`, standing for frames it found still) get their not-examined event.
A frame whose grey copy cannot be decoded goes to Triton, which says what is wrong with it (a dead
letter). Memory is bounded: the gates of at most `max_cameras` cameras, the least recently seen
dropped first (its next frame then starts a new background: a heartbeat), and one held frame per
camera.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Collection
from dataclasses import dataclass

from stream_worker.cameras.motion import CameraMotion, Decision
from stream_worker.cameras.thumbnails import gray_thumbnail, jpeg_size
from stream_worker.contracts.cameras import CameraSettings
from stream_worker.worker.offsets import Partition
from stream_worker.worker.validate import Frame

DEFAULT_MAX_CAMERAS = 4096  # a gate is ~130 KB (a 240x135 float32 background and its mask)
STATIC_STRIDE = 2  # while static, one frame in this many is decoded
HOLD_S = 1.0  # a frame passed over waits at most this long (wall clock) for its camera's next one


@dataclass(frozen=True, slots=True)
class NotExamined:
    """A frame gated static: its size (from the JPEG header) for its event."""

    width: int
    height: int


@dataclass(frozen=True, slots=True)
class Decided:
    """A frame's fate: to Triton (`static` None), or not examined."""

    frame: Frame
    static: NotExamined | None = None


@dataclass(slots=True)
class _Camera:
    settings: CameraSettings
    gate: CameraMotion
    last: Decision | None = None  # the last decoded frame's decision
    passed_over: int = 0  # frames passed over since the last one decoded
    held: tuple[Frame, float] | None = None  # a frame passed over, and when it was consumed


class MotionGating:
    """Per camera, which frames go to Triton and which are not examined (see the module)."""

    def __init__(
        self,
        settings_of: Callable[[str], CameraSettings],
        max_cameras: int = DEFAULT_MAX_CAMERAS,
        stride: int = STATIC_STRIDE,
        hold_s: float = HOLD_S,
    ) -> None:
        if stride < 1:
            raise ValueError("stride must be at least 1")
        self.settings_of = settings_of
        self.max_cameras = max_cameras
        self.stride = stride
        self.hold_s = hold_s
        self._cameras: OrderedDict[str, _Camera] = OrderedDict()
        self._holding: dict[str, _Camera] = {}  # the cameras with a held frame

    def __len__(self) -> int:
        return len(self._cameras)

    def held(self) -> int:
        return len(self._holding)

    def check(self, frame: Frame, now: float) -> list[Decided]:
        """The frames decided by this one's arrival, in offset order: none (it is held), itself, or
        the camera's held frame and itself. `now`: monotonic seconds."""
        camera_id = frame.camera_id
        settings = self.settings_of(camera_id)
        motion = settings.motion
        if frame.static is not None:  # the connector's static marker: its frames were gated there
            return [Decided(frame, NotExamined(*frame.static))]
        if motion is None or not motion.enabled or settings.source is not None:
            camera = self._cameras.pop(camera_id, None)
            held = self._decide_alone(camera) if camera is not None and camera.held else []
            self._holding.pop(camera_id, None)
            return [*held, Decided(frame)]
        camera = self._camera(camera_id, settings)
        if camera.held is None and camera.last is Decision.STATIC and camera.passed_over + 1 < self.stride:
            camera.passed_over += 1
            camera.held = (frame, now)
            self._holding[camera_id] = camera
            return []
        held, camera.held = camera.held, None
        self._holding.pop(camera_id, None)
        decided = self._decide(camera, frame)
        if held is None:
            return [decided]
        if decided.static is None and camera.last is Decision.MOTION:
            return [Decided(held[0]), decided]  # the held frame is the motion's pre-roll
        size = jpeg_size(held[0].image)
        if size is None:  # not a JPEG after all: Triton says so
            return [Decided(held[0]), decided]
        return [Decided(held[0], NotExamined(*size)), decided]

    def due(self, now: float) -> list[Decided]:
        """The held frames that waited `hold_s` for their camera's next frame, decided alone."""
        decided: list[Decided] = []
        for camera_id, camera in list(self._holding.items()):
            if camera.held is not None and now - camera.held[1] >= self.hold_s:
                decided += self._decide_alone(camera)
                del self._holding[camera_id]
        return decided

    def drop(self, partitions: Collection[Partition] | None = None) -> None:
        """Forget the held frames (of `partitions`, or all): they stay uncommitted, read again by
        whoever reads their partition next."""
        for camera_id, camera in list(self._holding.items()):
            if camera.held is not None and (partitions is None or camera.held[0].partition in partitions):
                camera.held = None
                del self._holding[camera_id]

    def _decide_alone(self, camera: _Camera) -> list[Decided]:
        assert camera.held is not None
        frame, _ = camera.held
        camera.held = None
        return [self._decide(camera, frame)]

    def _decide(self, camera: _Camera, frame: Frame) -> Decided:
        camera.passed_over = 0
        gray = gray_thumbnail(frame.image)
        size = jpeg_size(frame.image)
        if gray is None or size is None:
            return Decided(frame)
        captured = frame.captured_at
        t = captured.timestamp() if captured is not None else frame.record.received_at
        camera.last = camera.gate.observe(t, gray).decision
        return Decided(frame) if camera.last.examined else Decided(frame, NotExamined(*size))

    def _camera(self, camera_id: str, settings: CameraSettings) -> _Camera:
        """The camera's state, with a new gate when its motion settings or masks changed (the
        follower hands out the same settings object until they change, so most frames cost an
        identity test)."""
        camera = self._cameras.get(camera_id)
        if camera is not None and camera.settings is not settings:
            previous, camera.settings = camera.settings, settings
            if previous.motion != settings.motion or previous.masks != settings.masks:
                camera.gate = CameraMotion(settings.motion, settings.masks)  # type: ignore[arg-type]
                camera.last = None
        if camera is None:
            assert settings.motion is not None
            camera = self._cameras[camera_id] = _Camera(
                settings, CameraMotion(settings.motion, settings.masks)
            )
        self._cameras.move_to_end(camera_id)
        excess = len(self._cameras) - self.max_cameras
        if excess > 0:  # the least recently seen go, but not one holding a frame (it is due soon)
            idle = [key for key, state in self._cameras.items() if state.held is None and key != camera_id]
            for key in idle[:excess]:
                del self._cameras[key]
        return camera
