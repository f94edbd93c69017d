"""One camera's reader: a thread that opens its source, decodes, samples to `fps`, gates by motion,
encodes JPEG and queues the frames for the producer; it never touches another camera.

A failure to open is classified (states.py) and tried again after a capped exponential backoff
with jitter; a stream that gives no frame for the stall timeout is closed and opened again; a
file source with `loop` starts again at its end, without it the camera ends. A live stream that
ends (the camera or its server closed it) is `ended` and opened again after the backoff; it stays
`ended` while its server answers that the stream is not there, until it streams again (a server
that does not answer is `unreachable`). Secrets: the URL is
resolved from the environment only here, for `av.open`; every error message goes through
`redact`, and logs name the source as stored (with its ${NAME} references).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import Enum
from typing import Any

from stream_worker.cameras.motion import MIN_WIDTH, CameraMotion, Decision
from stream_worker.connector.backoff import backoff_s
from stream_worker.connector.clock import StreamClock
from stream_worker.connector.encoding import JpegEncoder
from stream_worker.connector.frame_queue import DropOldestQueue
from stream_worker.connector.hold import MarkerThinner, StaticHold
from stream_worker.connector.sampler import FpsSampler, StreamTime
from stream_worker.connector.shedding import RateGate
from stream_worker.connector.states import CameraState, NotVideo, Stalled, classify, not_there
from stream_worker.contracts.cameras import CameraSettings, CameraSource, MotionSettings, Polygon
from stream_worker.contracts.credentials import MissingCredential, is_file, redact, resolve

log = logging.getLogger("stream_worker.connector")

# Demuxers whose timestamps are made up (MJPEG over HTTP: one frame per 1/25 s, whatever the
# camera sends): a live source of these is timed by the frames' arrival instead.
ARRIVAL_TIMED_FORMATS = frozenset({"mpjpeg", "mjpeg", "jpeg_pipe", "image2pipe"})
# Delivered in bursts, a segment at a time (HLS: seconds of video downloaded at once, then a wait for
# the next): paced by their own clock as a file is, so that frames go out as a camera sends them and
# `captured_at` never runs seconds ahead of the wall clock, then jumps back when the drift check
# re-anchors it.
BURST_FORMATS = frozenset({"hls"})
MAX_PRE_ROLL_FRAMES = 64  # decoded frames held for the pre-roll at most (about 3 MB each at 1080p)


def iso_utc(epoch_s: float) -> str:
    """ISO-8601 UTC with milliseconds, as `captured_at` carries it."""
    return datetime.fromtimestamp(epoch_s, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class ReaderSpec:
    """What a camera's reader is built from: a change of any of it restarts the reader."""

    camera_id: str
    source: CameraSource
    motion: MotionSettings | None = None  # None: every sampled frame is published
    masks: tuple[Polygon, ...] = ()  # left out of the motion measure (only with motion)

    @classmethod
    def of(cls, camera_id: str, settings: CameraSettings) -> ReaderSpec | None:
        """The reader a camera's settings ask for; None without a source."""
        if settings.source is None:
            return None
        motion = settings.motion if settings.motion is not None and settings.motion.enabled else None
        return cls(camera_id, settings.source, motion, settings.masks if motion is not None else ())


@dataclass(frozen=True)
class ReaderOptions:
    stall_timeout_s: float = 5.0
    open_timeout_s: float = 10.0
    backoff_base_s: float = 0.5
    backoff_cap_s: float = 8.0
    queue_frames: int = 20
    decode_threads: int = 1
    static_key_frames_s: float = 0.0  # with motion: static this long, decode key frames only (0: off)
    static_markers: bool = True  # with motion: a static frame is published as a marker (no image)
    static_marker_interval_s: float = 1.0  # one marker per this while static (0: one per static frame)
    hwaccel: str | None = None
    environ: Mapping[str, str] = field(default_factory=dict)


@dataclass
class CameraStats:
    """A camera's figures: the reader thread writes all but `published`/`delivery_errors` (the
    producer's delivery callbacks); others only read them."""

    state: CameraState = CameraState.CONNECTING
    state_since: float = field(default_factory=time.time)
    last_error: str | None = None
    decoded: int = 0  # frames decoded
    sampled: int = 0  # frames kept by the sampler
    motion: int = 0  # sampled frames with motion
    static: int = 0  # sampled frames the gate held back (not published unless as pre-roll)
    queued: int = 0  # records handed to the queue (frames and static markers)
    offered: int = 0  # frames with their image that were to be published, before shedding
    shed: int = 0  # of those, left out because the workers are behind (shedding.py)
    published: int = 0  # frames (with their image) the broker acknowledged
    markers: int = 0  # static markers the broker acknowledged
    delivery_errors: int = 0
    reconnects: int = 0  # opens after the first (a file's loop is not one)
    sessions: int = 0  # streams opened
    last_frame_at: float | None = None  # wall clock of the last decoded frame
    last_frame_mono: float | None = None


@dataclass(frozen=True, slots=True)
class OutFrame:
    camera_id: str
    frame_id: str
    captured_at: str
    jpeg: bytes  # empty for a static marker
    stats: CameraStats
    static: str | None = None  # a static marker: the frame's size, "WIDTHxHEIGHT"
    captured_s: float = 0.0  # `captured_at` in epoch seconds


class _End(Enum):
    STOP = "stop"  # asked to stop
    ENDED = "ended"  # a file without loop reached its end
    LOOP = "loop"  # a file with loop reached its end
    RETRY = "retry"  # failed or lost: try again after the backoff


class CameraReader:
    """One camera's thread (see the module). `start`, `stop` (asks; the thread ends within the
    stall timeout), `join`."""

    def __init__(
        self, spec: ReaderSpec, options: ReaderOptions, on_frame: Callable[[], None] = lambda: None
    ) -> None:
        self.spec = spec
        self.camera_id = spec.camera_id
        self.options = options
        self.queue: DropOldestQueue[OutFrame] = DropOldestQueue(options.queue_frames)
        self.stats = CameraStats()
        self._on_frame = on_frame
        self._stop = threading.Event()
        self._is_file = is_file(spec.source.url)
        self._encoder = JpegEncoder(spec.source.jpeg_quality)
        self._sampler = FpsSampler(spec.source.fps)
        self._clock = StreamClock()
        self._times = StreamTime(1.0 / spec.source.fps)
        self._motion = CameraMotion(spec.motion, spec.masks) if spec.motion is not None else None
        held = 0
        if spec.motion is not None:
            held = min(MAX_PRE_ROLL_FRAMES, int(spec.motion.pre_roll_s * spec.source.fps) + 1)
        self._hold: StaticHold[tuple[Any, float]] = StaticHold(
            spec.motion.pre_roll_s if spec.motion is not None else 0.0, held
        )
        self._markers: MarkerThinner[tuple[Any, float]] = MarkerThinner(options.static_marker_interval_s)
        self._session = ""
        self._sequence = 0
        self._arrival_timed = False
        self._paced = self._is_file  # frames wait for their stream time (files; HLS, see BURST_FORMATS)
        self._use_hwaccel = bool(options.hwaccel)
        self._secrets: list[str] = []  # the resolved URL's, for `redact`
        self._codec: Any = None
        self._static_since: float | None = None  # stream time the current static stretch began
        self.key_frames_only = False
        self.shed_fps: float | None = None  # set by the connector's loop: frames a second allowed
        self._gate = RateGate()
        self._thread = threading.Thread(target=self._run, name=f"camera-{spec.camera_id}", daemon=True)

    # --- control ---------------------------------------------------------------------------

    def start(self) -> CameraReader:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def join(self, timeout_s: float | None = None) -> bool:
        """True once the thread has ended."""
        self._thread.join(timeout_s)
        return not self._thread.is_alive()

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    # --- the thread ------------------------------------------------------------------------

    def _run(self) -> None:
        attempt = 0
        looping = False
        try:
            while not self._stop.is_set():
                try:
                    end, streamed = self._read_once(looping)
                except Exception as error:  # a surprise: this camera alone tries again, after a backoff
                    self._fail(CameraState.ERROR, error, self._secrets)
                    end, streamed = _End.RETRY, False
                looping = end is _End.LOOP
                if end is _End.STOP:
                    break
                if end is _End.ENDED:
                    self._let_go(self._hold.clear(), end=True)  # the frames held at the end: static
                    self._set_state(CameraState.ENDED)
                    log.info("camera ended", extra=self._where())
                    return
                if end is _End.LOOP:
                    attempt = 0
                    continue
                if streamed:
                    attempt = 0
                delay = backoff_s(attempt, self.options.backoff_base_s, self.options.backoff_cap_s)
                attempt += 1
                if self._stop.wait(delay):
                    break
                self.stats.reconnects += 1
        finally:
            if self._stop.is_set():
                self._set_state(CameraState.STOPPED)

    def _read_once(self, looping: bool) -> tuple[_End, bool]:
        """Open the source, read it until it ends, fails or the reader is stopped; (how it ended,
        whether frames came). `looping`: a file opened again at its end, same session."""
        import av

        if not (self.stats.state.failed or self.stats.state is CameraState.ENDED):
            self._set_state(CameraState.CONNECTING)  # a failure or an end stays shown while tried again
        try:
            url, secrets = resolve(self.spec.source.url, self.options.environ)
            self._secrets = secrets
        except MissingCredential as error:
            self._fail(CameraState.MISSING_CREDENTIALS, error, [])
            return _End.RETRY, False
        started = time.monotonic()
        try:
            container = av.open(
                url,
                options=self._open_options(),
                timeout=(self.options.open_timeout_s, self.options.stall_timeout_s),
                **self._hwaccel(),
            )
        except Exception as error:
            timed_out = time.monotonic() - started >= self.options.open_timeout_s * 0.95
            state = classify(error, opening=True, timed_out=timed_out)
            if state is CameraState.ERROR and self._use_hwaccel:
                # No such device here (FFmpeg says "Operation not permitted" for a missing CUDA):
                # software decoding, at once, rather than a camera that never opens.
                self._use_hwaccel = False
                log.warning(
                    "hardware decoding unavailable: decoding in software",
                    extra={
                        **self._where(),
                        "hwaccel": self.options.hwaccel,
                        "error": redact(str(error), secrets),
                    },
                )
                return self._read_once(looping)
            self._fail(state, error, secrets)
            return _End.RETRY, False
        self.stats.sessions += 1
        decoded_before = self.stats.decoded
        streamed = False
        try:
            with container:
                if not container.streams.video:
                    raise NotVideo("the source has no video stream")
                stream = container.streams.video[0]
                stream.codec_context.thread_count = self.options.decode_threads
                if self.options.decode_threads != 1:
                    stream.thread_type = "AUTO"
                self._begin_session(container, stream, new=not looping)
                (log.debug if looping else log.info)(
                    "camera opened",
                    extra={
                        **self._where(),
                        "codec": stream.codec_context.name,
                        "width": stream.codec_context.width,
                        "height": stream.codec_context.height,
                        "session": self._session,
                    },
                )
                streamed = self._decode(container, stream)
        except Exception as error:
            streamed = self.stats.decoded > decoded_before
            if self._stop.is_set():
                return _End.STOP, streamed
            last = self.stats.last_frame_mono
            timed_out = last is not None and time.monotonic() - last >= self.options.stall_timeout_s * 0.95
            self._fail(classify(error, opening=not streamed, timed_out=timed_out), error, secrets)
            return _End.RETRY, streamed
        if self._stop.is_set():
            return _End.STOP, streamed
        if self._is_file:
            if not streamed:
                self._fail(CameraState.NOT_VIDEO, NotVideo("the file has no decodable frame"), [])
                return _End.RETRY, False
            return (_End.LOOP if self.spec.source.loop else _End.ENDED), streamed
        self._fail(CameraState.ENDED, EOFError("the stream ended"), [])
        return _End.RETRY, streamed

    def _open_options(self) -> dict[str, str]:
        url = self.spec.source.url.lower()
        options: dict[str, str] = {}
        if url.startswith(("rtsp://", "rtsps://")):
            transport = self.spec.source.rtsp_transport
            options["rtsp_transport"] = transport.value if transport is not None else "tcp"
        return options

    def _hwaccel(self) -> dict[str, Any]:
        if not self._use_hwaccel or not self.options.hwaccel:
            return {}
        from av.codec.hwaccel import HWAccel

        return {"hwaccel": HWAccel(self.options.hwaccel, allow_software_fallback=True)}

    def _begin_session(self, container: Any, stream: Any, new: bool) -> None:
        """A new session (frame ids `<camera>:<session>:<n>`) per open, except a file's loop."""
        self._let_go(self._hold.clear(), end=True)  # the last session's held frames: static
        if new:
            self._session = f"{time.time_ns() // 1_000_000:x}"
            self._sequence = 0
        self._sampler.reset()
        self._clock.reset()
        self._arrival_timed = not self._is_file and container.format.name in ARRIVAL_TIMED_FORMATS
        self._paced = self._is_file or container.format.name in BURST_FORMATS
        self._codec = stream.codec_context
        self._static_since = None
        self.key_frames_only = False
        rate = stream.average_rate or stream.guessed_rate
        self._times = StreamTime(1.0 / float(rate) if rate else 1.0 / self.spec.source.fps)
        if self._motion is not None:
            self._motion.reset()

    def _decode(self, container: Any, stream: Any) -> bool:
        """Decode until the end of the stream or a stop; whether any frame came. Raises Stalled when
        packets come but no frame for the stall timeout."""
        time_base = float(stream.time_base) if stream.time_base else None
        streamed = False
        last_frame = time.monotonic()
        for packet in container.demux(stream):
            if self._stop.is_set():
                return streamed
            if self.key_frames_only:  # frames come a key-frame interval apart: packets show it lives
                last_frame = time.monotonic()
            for frame in packet.decode():
                streamed = True
                last_frame = time.monotonic()
                self._frame(frame, time_base)
                if self._stop.is_set():
                    return streamed
            if time.monotonic() - last_frame > self.options.stall_timeout_s:
                raise Stalled(f"no frame for {self.options.stall_timeout_s:g} s")
        return streamed

    def _frame(self, frame: Any, time_base: float | None) -> None:
        stats = self.stats
        stats.decoded += 1
        stats.last_frame_mono = time.monotonic()
        stats.last_frame_at = time.time()
        if stats.state is not CameraState.STREAMING:
            self._set_state(CameraState.STREAMING)
        t = time.monotonic() if self._arrival_timed else self._times.of(frame.pts, time_base)
        keep = self._sampler.keep(t)
        if self._sampler.restarted:
            self._clock.reset()
        if self._paced:  # a file is read at its own pace, frame by frame, as a camera sends it
            due = self._clock.due(t)
            if due is None:
                self._clock.wall(t, time.time(), check_drift=False)  # the first frame anchors it
            elif (wait := due - time.time()) > 0 and self._stop.wait(wait):
                return
        if not keep:
            return
        wall = self._clock.wall(t, time.time(), check_drift=not self._is_file)
        stats.sampled += 1
        if self._motion is None:
            self._emit(frame, wall)
            return
        factor = max(1, frame.width // MIN_WIDTH)
        gray = frame.reformat(
            width=frame.width // factor, height=frame.height // factor, format="gray"
        ).to_ndarray()
        observation = self._motion.observe(t, gray)
        decision = observation.decision
        if decision is Decision.MOTION:
            stats.motion += 1
        elif decision is Decision.STATIC:
            stats.static += 1
        self._key_frames_when_static(t, decision)
        self._let_go(self._hold.admit(t, (frame, wall), decision, observation.unchanged))

    def _let_go(self, frames: list[tuple[tuple[Any, float], bool]], end: bool = False) -> None:
        """Publish what the hold lets go: examined frames with their image, static ones as markers
        (thinned to one a `static_marker_interval_s`, see hold.MarkerThinner); `end`: the stream
        ends or starts again, so the marker held back goes out too."""
        out: list[tuple[tuple[Any, float], bool]] = []
        for item, examined in frames:
            out += self._markers.take(item[1], item, examined)
        if end:
            out += self._markers.flush()
        for (frame, wall), examined in out:
            if examined:
                self._emit(frame, wall)
            elif self.options.static_markers:
                self._emit(frame, wall, static=True)

    def _key_frames_when_static(self, t: float, decision: Decision) -> None:
        """Decode only key frames once the scene has been static `static_key_frames_s`; every frame
        again as soon as one shows motion. A heartbeat does not end a static stretch."""
        if self.options.static_key_frames_s <= 0 or self._codec is None:
            return
        if decision in (Decision.MOTION, Decision.POST_ROLL):
            self._static_since = None
            if self.key_frames_only:
                self._codec.skip_frame = "DEFAULT"
                self.key_frames_only = False
            return
        if self._static_since is None:
            self._static_since = t
        elif not self.key_frames_only and t - self._static_since >= self.options.static_key_frames_s:
            self._codec.skip_frame = "NONKEY"
            self.key_frames_only = True

    def _emit(self, frame: Any, wall: float, static: bool = False) -> None:
        """Queue the frame with its JPEG, or as a static marker (its size, no image); a frame beyond
        the rate the workers keep up with is shed (counted), before its costly encoding. Markers
        are never shed: they cost the workers nothing."""
        if not static:
            self.stats.offered += 1
            if not self._gate.keep(wall, self.shed_fps):
                self.stats.shed += 1
                return
        jpeg = b"" if static else self._encoder.encode(frame)
        frame_id = f"{self.camera_id}:{self._session}:{self._sequence}"
        self._sequence += 1
        size = f"{frame.width}x{frame.height}" if static else None
        self.queue.put(OutFrame(self.camera_id, frame_id, iso_utc(wall), jpeg, self.stats, size, wall))
        self.stats.queued += 1
        self._on_frame()

    # --- state -----------------------------------------------------------------------------

    def _where(self) -> dict[str, object]:
        return {"camera_id": self.camera_id, "source": self.spec.source.url}  # as stored: ${NAME}s

    def _set_state(self, state: CameraState, error: str | None = None) -> None:
        stats = self.stats
        if state is CameraState.STREAMING:
            error = None
        if stats.state is not state:
            stats.state_since = time.time()
        stats.state = state
        if error is not None:
            stats.last_error = error

    def _fail(self, state: CameraState, error: BaseException, secrets: list[str]) -> None:
        message = redact(f"{type(error).__name__}: {error}", secrets)
        if self.stats.state is CameraState.ENDED and not_there(error):
            state = CameraState.ENDED  # its server answers, without the stream: still ended
        changed = state is not self.stats.state or message != self.stats.last_error
        self._set_state(state, message)
        (log.warning if changed else log.debug)(
            "camera failed", extra={**self._where(), "state": state.value, "error": message}
        )
