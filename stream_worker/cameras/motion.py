"""Motion gating: which frames of a camera show something moving, decided on a small grey copy.

One pure module (numpy only, no I/O) for the two places that gate: the camera connector publishes
only the frames with motion, a pre-roll before and a post-roll after them, and a heartbeat while
the scene is static; the worker sends to Triton only those frames of producers that are not ours.

The idea is Frigate's (cheap change detection on a reduced greyscale frame against a running
background), the code our own. Per camera:

- `MotionDetector` keeps a background, an exponential average of past frames with a time
  constant of `BACKGROUND_S` seconds of stream time, and measures the share of the pixels outside
  the camera's masks that differ from it by more than `pixel_threshold` after a 3x3 blur (camera
  noise and JPEG blocks stay under it). A whole-scene change (lights on, a cloud, the camera
  moved: at least `SCENE_CHANGE_SHARE` changed) counts as motion once and replaces the background,
  so the gate does not stay open for the seconds an average would take to catch up. A change that
  stays (a vehicle that stops, a gate left open, a cut to another view) is taken into the
  background once the frames have stood still for `settle_s` (each within the pixel threshold of
  the frame that began the stillness, on at most `still_share` of the pixels): the average alone
  would take 8 to 10 s to fade a strong change under the threshold. Meanwhile only what differs
  from the background *and* from the frame that began the stillness is moving (the share the gate
  sees): a change that stands still is motion on its first frame only, not for the second it takes
  to settle (on bench gating's stream, 108 frames fewer published, the truck waiting at the gate
  among them), while something moving, however slowly, adds up against that frame until it counts
  again. The post-roll and the heartbeat still look at what stopped.
- `MotionGate` turns (stream time, changed share) into a `Decision` per frame: motion, post-roll
  (within `post_roll_s` after the last motion), heartbeat (one frame every `heartbeat_s` while
  static, and the first frame, which has no background yet), or static.
- `CameraMotion` is both for one camera, and starts again from nothing when the stream's time goes
  backwards or jumps forward by more than a heartbeat (a reconnect, a producer's pause: the
  background is stale), or when the frame size changes.
- The connector's ring of the static frames of the last `pre_roll_s` seconds, handed back in order
  when motion starts so that an approaching plate is not missed, is `connector.hold.StaticHold`.

Memory per camera is bounded: one float32 background, one still frame and one mask at the reduced
size.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

import numpy as np

from stream_worker.contracts.cameras import CameraSettings, MotionSettings

MIN_WIDTH = 160  # `reduce` keeps at least this many columns: a plate-carrying vehicle is still 10+ px
BACKGROUND_S = 5.0  # the background's time constant, seconds of stream time
SETTLE_S = 1.0  # a change still this long is taken into the background at once (see the module)
SCENE_CHANGE_SHARE = 0.5  # this share changed at once: lighting or the camera moved, not a vehicle
TIME_EPSILON_S = 1e-6  # timestamps in float seconds: 10 heartbeats of 1 s are 10 s, not 9.999...

Polygon = Sequence[Sequence[float]]


def reduce(gray: np.ndarray, min_width: int = MIN_WIDTH) -> np.ndarray:
    """A grey frame shrunk by the largest whole factor that keeps `min_width` columns (the mean of
    each factor x factor block), as uint8; frames already that narrow come back as they are."""
    if gray.ndim != 2:
        raise ValueError(f"a grey frame has 2 dimensions, not {gray.ndim}")
    factor = max(1, gray.shape[1] // min_width)
    if factor == 1:
        return np.ascontiguousarray(gray, dtype=np.uint8)
    height, width = (gray.shape[0] // factor) * factor, (gray.shape[1] // factor) * factor
    blocks = gray[:height, :width].reshape(height // factor, factor, width // factor, factor)
    return blocks.mean(axis=(1, 3), dtype=np.float32).round().astype(np.uint8)


def rasterise(masks: Sequence[Polygon], width: int, height: int) -> np.ndarray:
    """A (height, width) bool array, True for the pixels whose centre lies in any of `masks`
    (polygons normalised 0..1), by the even-odd rule of `cameras.geometry.point_in_polygon`."""
    masked = np.zeros((height, width), dtype=bool)
    xs = (np.arange(width, dtype=np.float64) + 0.5) / width
    ys = (np.arange(height, dtype=np.float64) + 0.5) / height
    for polygon in masks:
        inside = np.zeros((height, width), dtype=bool)
        x2, y2 = polygon[-1]
        for x1, y1 in polygon:
            if y1 != y2:
                spans = (ys > y1) != (ys > y2)  # rows whose centre line this edge crosses
                crossing = (x2 - x1) * (ys - y1) / (y2 - y1) + x1
                inside[spans] ^= xs[None, :] < crossing[spans, None]
            x2, y2 = x1, y1
        masked |= inside
    return masked


def _blur(frame: np.ndarray) -> np.ndarray:
    """3x3 box blur (edges repeated), float32: single-pixel noise averages down under the threshold."""
    padded = np.pad(frame.astype(np.float32), 1, mode="edge")
    rows = padded[:-2] + padded[1:-1] + padded[2:]
    return (rows[:, :-2] + rows[:, 1:-1] + rows[:, 2:]) / 9.0


class MotionDetector:
    """The changed share of one camera's frames against its running background (see the module)."""

    def __init__(
        self,
        pixel_threshold: int,
        masks: Sequence[Polygon] = (),
        background_s: float = BACKGROUND_S,
        settle_s: float | None = None,
        still_share: float = 0.0,
    ) -> None:
        """`settle_s` None: a change fades only by the running average (the detector alone);
        `CameraMotion` settles after `SETTLE_S`, still meaning at most `still_share` changed."""
        if background_s <= 0:
            raise ValueError("background_s must be positive")
        if settle_s is not None and settle_s <= 0:
            raise ValueError("settle_s must be positive (or None: never settle)")
        self.pixel_threshold = pixel_threshold
        self.masks = tuple(tuple(tuple(point) for point in polygon) for polygon in masks)
        self.background_s = background_s
        self.settle_s = settle_s
        self.still_share = still_share
        self._background: np.ndarray | None = None
        self._last_t = 0.0
        self._still: np.ndarray | None = None  # the frame the current stillness began with
        self._still_since = 0.0
        self._unmasked: np.ndarray | None = None  # True where measured, at the size of the frames
        self._unmasked_count = 0
        self.background_share: float | None = None  # the last frame's, before "moving" narrowed it

    def reset(self) -> None:
        """Forget the background: the next frame becomes it (and measures nothing)."""
        self._background = None
        self._still = None

    def measure(self, t: float, gray: np.ndarray) -> float | None:
        """The share (0..1) of the unmasked pixels of `gray` (a reduced uint8 frame, see `reduce`)
        that changed against the background (with `settle_s`, and against the frame the current
        stillness began with: see the module), which then takes in this frame; None when there was
        no background yet (the first frame, or the first after `reset` or a new frame size)."""
        if gray.ndim != 2:
            raise ValueError(f"a grey frame has 2 dimensions, not {gray.ndim}")
        frame = _blur(gray)
        background = self._background
        if background is None or background.shape != frame.shape:
            self._start(t, frame)
            self.background_share = None
            return None
        changed = self._changed_pixels(frame, background)
        share = self.background_share = self._share(changed)
        if self.settle_s is not None and self._still is not None and share > 0.0:
            # Only what also differs from the frame the stillness began with is moving: a change
            # standing still (a vehicle stopped, a cut to another view) is no longer motion from
            # its second frame on, though the background takes it in only after settle_s.
            changed &= self._changed_pixels(frame, self._still)
            moving = self._share(changed)
        else:
            moving = share
        if share >= SCENE_CHANGE_SHARE or (share > 0.0 and self._settled(t, frame)):
            self._background = frame
            self._still = frame
            self._still_since = t
        else:
            alpha = 1.0 - math.exp(-max(t - self._last_t, 0.0) / self.background_s)
            background += alpha * (frame - background)
        self._last_t = t
        return moving

    def _changed_pixels(self, frame: np.ndarray, other: np.ndarray) -> np.ndarray:
        return np.abs(frame - other) > self.pixel_threshold

    def _share(self, changed: np.ndarray) -> float:
        if self._unmasked_count == 0:
            return 0.0  # everything masked: nothing here can move
        return int(np.count_nonzero(changed & self._unmasked)) / self._unmasked_count

    def _changed(self, frame: np.ndarray, other: np.ndarray) -> float:
        return self._share(self._changed_pixels(frame, other))

    def _settled(self, t: float, frame: np.ndarray) -> bool:
        """Whether the frames have stood still for `settle_s` up to this one (see the module)."""
        if self.settle_s is None:
            return False
        still = self._still
        if still is None or self._changed(frame, still) > self.still_share:
            self._still, self._still_since = frame, t
            return False
        return t - self._still_since >= self.settle_s - TIME_EPSILON_S

    def _start(self, t: float, frame: np.ndarray) -> None:
        if self._unmasked is None or self._unmasked.shape != frame.shape:
            height, width = frame.shape
            self._unmasked = ~rasterise(self.masks, width, height)
            self._unmasked_count = int(np.count_nonzero(self._unmasked))
        self._background = frame
        self._last_t = t
        self._still, self._still_since = frame, t


class Decision(StrEnum):
    """What a frame is to the gate; every one but `STATIC` is examined (published by the connector,
    sent to Triton by the worker)."""

    MOTION = "motion"  # changed share at or over min_changed_share
    POST_ROLL = "post_roll"  # within post_roll_s after the last motion
    HEARTBEAT = "heartbeat"  # static, but heartbeat_s since the last frame examined (or the first)
    STATIC = "static"  # nothing to look at

    @property
    def examined(self) -> bool:
        return self is not Decision.STATIC


class MotionGate:
    """Decisions from (stream time, changed share), in the order of the camera's frames."""

    def __init__(self, settings: MotionSettings) -> None:
        self.settings = settings
        self._last_motion: float | None = None
        self._last_examined: float | None = None

    def reset(self) -> None:
        self._last_motion = None
        self._last_examined = None

    def decide(self, t: float, share: float | None) -> Decision:
        """`share` None (no background to compare with) is examined as a heartbeat."""
        settings = self.settings
        if share is not None and share >= settings.min_changed_share:
            self._last_motion = self._last_examined = t
            return Decision.MOTION
        if self._last_motion is not None and t - self._last_motion <= settings.post_roll_s + TIME_EPSILON_S:
            self._last_examined = t
            return Decision.POST_ROLL
        if (
            share is None
            or self._last_examined is None
            or t - self._last_examined >= settings.heartbeat_s - TIME_EPSILON_S
        ):
            self._last_examined = t
            return Decision.HEARTBEAT
        return Decision.STATIC


@dataclass(frozen=True, slots=True)
class Observation:
    decision: Decision
    share: float | None  # moving; None: no background yet (first frame, after a reset, a new size)
    background_share: float | None = None  # differing from the background at all, moving or not

    @property
    def unchanged(self) -> bool:
        """Not one pixel differs from the background: nothing is here that the background lacks
        (so, as pre-roll, this frame cannot hold the vehicle that is about to move)."""
        return self.background_share == 0.0


class CameraMotion:
    """One camera's detector and gate: `observe` each frame in stream order."""

    def __init__(
        self,
        settings: MotionSettings,
        masks: Sequence[Polygon] = (),
        background_s: float = BACKGROUND_S,
        settle_s: float | None = SETTLE_S,
    ) -> None:
        self.settings = settings
        self.detector = MotionDetector(
            settings.pixel_threshold, masks, background_s, settle_s, settings.min_changed_share
        )
        self.gate = MotionGate(settings)
        self._last_t: float | None = None
        self.resets = 0  # times the stream's time went backwards or jumped (not the first frame)

    @classmethod
    def for_camera(cls, settings: CameraSettings) -> CameraMotion | None:
        """The gate a camera's settings ask for, or None when they examine every frame."""
        if settings.motion is None or not settings.motion.enabled:
            return None
        return cls(settings.motion, settings.masks)

    def reset(self) -> None:
        self.detector.reset()
        self.gate.reset()
        self._last_t = None

    def observe(self, t: float, gray: np.ndarray) -> Observation:
        """The decision for the frame taken at `t` (seconds of stream time; any origin) whose
        reduced grey copy is `gray`. Time going backwards, or a gap of more than `heartbeat_s`,
        starts again from nothing: the frame is then a heartbeat."""
        if not math.isfinite(t):
            raise ValueError("stream time must be finite")
        last = self._last_t
        if last is not None and (t < last or t - last > self.settings.heartbeat_s):
            self.reset()
            self.resets += 1
        self._last_t = t
        share = self.detector.measure(t, gray)
        if share is None:
            self.gate.reset()  # a new background (e.g. a new frame size): nothing before it counts
        return Observation(self.gate.decide(t, share), share, self.detector.background_share)
