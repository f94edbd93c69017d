"""The worker's motion gate: a frame in which nothing moved is not sent to Triton.

For the frames of producers that are not ours (`stream-worker produce`, a user's own), per camera
whose settings have `motion` enabled: the step between validation and batching decodes the
frame's small grey copy (cameras/thumbnails.py, about a fifteenth of a full frame's CPU) and asks
the camera's `CameraMotion` (cameras/motion.py, the same gate the connector runs). A frame gated
static gets an event that says `examined: false` instead of a place in a batch; motion, post-roll
and heartbeat frames go on to Triton as before.

Frames of one camera arrive in order on one partition and this step runs on the main thread in
consumption order, so each camera's gate sees its frames in order. Its clock is the frame's
`captured_at`, or the time the worker consumed it when the camera sends none. Cameras with a
`source` are left alone: the connector reads and gates them already, and gating its output again
would throw away the pre-roll it published on purpose. A frame whose grey copy cannot be decoded
goes to Triton, which says what is wrong with it (a dead letter). Memory is bounded: the gates of
at most `max_cameras` cameras, the least recently seen dropped first (its next frame then starts
a new background: a heartbeat).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from stream_worker.cameras.motion import CameraMotion
from stream_worker.cameras.thumbnails import gray_thumbnail, jpeg_size
from stream_worker.contracts.cameras import CameraSettings
from stream_worker.worker.validate import Frame

DEFAULT_MAX_CAMERAS = 4096  # a gate is ~100 KB (a 240x135 float32 background and its mask)


@dataclass(frozen=True, slots=True)
class NotExamined:
    """A frame gated static: its size (from the JPEG header) for its event."""

    width: int
    height: int


class MotionGating:
    """Per camera, whether each frame goes to Triton (`check` returns None) or not."""

    def __init__(
        self, settings_of: Callable[[str], CameraSettings], max_cameras: int = DEFAULT_MAX_CAMERAS
    ) -> None:
        self.settings_of = settings_of
        self.max_cameras = max_cameras
        self._gates: OrderedDict[str, tuple[CameraSettings, CameraMotion]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._gates)

    def check(self, frame: Frame) -> NotExamined | None:
        """None: send the frame to Triton; else it is static and not examined."""
        camera_id = frame.camera_id
        settings = self.settings_of(camera_id)
        motion = settings.motion
        if motion is None or not motion.enabled or settings.source is not None:
            self._gates.pop(camera_id, None)
            return None
        gate = self._gate(camera_id, settings)
        gray = gray_thumbnail(frame.image)
        size = jpeg_size(frame.image)
        if gray is None or size is None:
            return None
        captured = frame.captured_at
        t = captured.timestamp() if captured is not None else frame.record.received_at
        if gate.observe(t, gray).decision.examined:
            return None
        return NotExamined(*size)

    def _gate(self, camera_id: str, settings: CameraSettings) -> CameraMotion:
        """The camera's gate, new when its motion settings or masks changed (the follower hands out
        the same settings object until they change, so most frames cost an identity test)."""
        cached = self._gates.get(camera_id)
        if cached is not None and cached[0] is not settings:
            previous = cached[0]
            if previous.motion != settings.motion or previous.masks != settings.masks:
                cached = None
        if cached is None:
            assert settings.motion is not None
            cached = (settings, CameraMotion(settings.motion, settings.masks))
        elif cached[0] is not settings:
            cached = (settings, cached[1])  # another change (zones, ...): the same gate goes on
        self._gates[camera_id] = cached
        self._gates.move_to_end(camera_id)
        while len(self._gates) > self.max_cameras:
            self._gates.popitem(last=False)
        return cached[1]
