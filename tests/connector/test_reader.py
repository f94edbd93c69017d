"""A camera reader on its own (no broker): real files and a real MJPEG-over-HTTP server read through
PyAV, what comes out of its queue and the state it reports."""

from __future__ import annotations

import http.server
import itertools
import re
import time
from collections.abc import Iterator
from datetime import datetime

import av
import numpy as np
import pytest
from conftest import weights_dir
from connector_process import still_then_moving
from support import reply, serve_http

from stream_worker.connector.reader import CameraReader, OutFrame, ReaderOptions, ReaderSpec
from stream_worker.connector.states import CameraState
from stream_worker.contracts.cameras import CameraSource, MotionSettings

# Real time (a file is read at its own pace) and real streams: with the integration tests.
pytestmark = pytest.mark.integration

DASHCAM = weights_dir().parent / "videos" / "dashcam-rain-T404YA47.mp4"  # 30 fps, 1.57 s


def run(reader: CameraReader, until, timeout_s: float = 20.0) -> list[OutFrame]:
    reader.start()
    deadline = time.monotonic() + timeout_s
    taken: list[OutFrame] = []
    try:
        while not until(reader, taken):
            assert time.monotonic() < deadline, f"timed out: {reader.stats}"
            taken += reader.queue.take(100)
            time.sleep(0.05)
    finally:
        reader.stop()
        assert reader.join(10)
    return taken + reader.queue.take(1000)


def spec(url: str, motion: MotionSettings | None = None, **source: object) -> ReaderSpec:
    return ReaderSpec("cam", CameraSource(url=url, **source), motion)


def test_a_file_without_loop_is_read_once_then_the_camera_ends():
    reader = CameraReader(spec(str(DASHCAM), fps=5), ReaderOptions(queue_frames=100))
    frames = run(reader, lambda r, _: r.stats.state is CameraState.ENDED)
    assert len(frames) == 8  # 0, 0.2 .. 1.4 s of a 1.57 s clip
    assert reader.stats.decoded == 47 and reader.stats.reconnects == 0
    ids = [f.frame_id for f in frames]
    session = ids[0].split(":")[1]
    assert ids == [f"cam:{session}:{n}" for n in range(8)]
    times = [datetime.fromisoformat(f.captured_at).timestamp() for f in frames]
    assert times[-1] - times[0] == pytest.approx(1.4, abs=0.02)  # the stream's own clock


def test_a_looped_file_goes_on_in_one_session():
    reader = CameraReader(spec(str(DASHCAM), fps=5, loop=True), ReaderOptions(queue_frames=100))
    frames = run(reader, lambda r, taken: len(taken) >= 20)
    assert reader.stats.state is CameraState.STOPPED and reader.stats.reconnects == 0
    assert reader.stats.sessions >= 3  # opened again at each end
    assert len({f.frame_id.split(":")[1] for f in frames}) == 1


def test_a_missing_credential_is_reported_by_name_and_tried_again(monkeypatch):
    monkeypatch.delenv("NO_SUCH_CAMERA_PASSWORD", raising=False)
    options = ReaderOptions(backoff_base_s=0.05, backoff_cap_s=0.1, environ={})
    reader = CameraReader(spec("rtsp://admin:${NO_SUCH_CAMERA_PASSWORD}@10.0.0.1/s"), options)
    run(reader, lambda r, _: r.stats.reconnects >= 2)
    assert (
        reader.stats.last_error
        == "MissingCredential: environment variable(s) not set: NO_SUCH_CAMERA_PASSWORD"
    )


def test_a_full_queue_drops_the_oldest_frames_and_counts_them():
    reader = CameraReader(spec(str(DASHCAM), fps=30), ReaderOptions(queue_frames=3))
    reader.start()
    assert reader.join(20)  # nobody takes: 47 frames into 3 places
    frames = reader.queue.take(100)
    assert [int(f.frame_id.rsplit(":", 1)[1]) for f in frames] == [44, 45, 46]
    assert reader.queue.dropped == 44 and reader.stats.queued == 47


def test_motion_gating_publishes_the_motion_with_its_pre_and_post_roll_and_heartbeats(tmp_path):
    video = tmp_path / "scene.mp4"
    # motion 6.0-7.0 s of 13 s; a speck far away from 5.4 s, too small to count as motion
    still_then_moving(video, seconds_still=6, seconds_moving=1, far_s=0.6)
    motion = MotionSettings(pre_roll_s=1.0, post_roll_s=2.0, heartbeat_s=4.0)
    options = ReaderOptions(queue_frames=100, static_marker_interval_s=0.0)  # a marker per static frame
    reader = CameraReader(spec(str(video), motion, fps=5), options)
    frames = run(reader, lambda r, _: r.stats.state is CameraState.ENDED, timeout_s=40)
    stats = reader.stats
    numbers = [int(f.frame_id.rsplit(":", 1)[1]) for f in frames]
    assert numbers == list(range(65))  # every sampled frame once, in order: an image or a marker
    times = [datetime.fromisoformat(f.captured_at).timestamp() for f in frames]
    assert times == sorted(times)
    images = [round(t - times[0], 1) for t, f in zip(times, frames, strict=True) if f.static is None]
    markers = [f for f in frames if f.static is not None]
    assert images == [
        0.0,  # the first frame (no background yet)
        4.0,  # a heartbeat
        # the pre-roll, held while static, published when motion starts: the frames with the speck
        # (5.0 and 5.2 were the background to a pixel: nothing in them, so markers)
        *(5.4, 5.6, 5.8),
        *(6.0, 6.2, 6.4, 6.6, 6.8),  # the block crossing
        *(7.0, 7.2, 7.4, 7.6, 7.8, 8.0, 8.2, 8.4, 8.6, 8.8),  # 2 s of post-roll
        12.8,  # a heartbeat 4 s after the last frame published
    ]
    assert len(markers) == 65 - 21 and {(m.jpeg, m.static) for m in markers} == {(b"", "320x240")}
    assert all(f.jpeg[:2] == b"\xff\xd8" for f in frames if f.static is None)
    assert (stats.sampled, stats.motion, stats.static, stats.queued) == (65, 5, 47, 65)


def test_static_markers_are_thinned_to_one_a_second_and_one_before_each_examined_frame(tmp_path):
    video = tmp_path / "scene.mp4"
    still_then_moving(video, seconds_still=6, seconds_moving=1, far_s=0.6)  # as above
    motion = MotionSettings(pre_roll_s=1.0, post_roll_s=2.0, heartbeat_s=4.0)
    reader = CameraReader(spec(str(video), motion, fps=5), ReaderOptions(queue_frames=100))  # default: 1 s
    frames = run(reader, lambda r, _: r.stats.state is CameraState.ENDED, timeout_s=40)
    assert [int(f.frame_id.rsplit(":", 1)[1]) for f in frames] == list(range(len(frames)))
    times = [datetime.fromisoformat(f.captured_at).timestamp() for f in frames]
    images = [round(t - times[0], 1) for t, f in zip(times, frames, strict=True) if f.static is None]
    markers = [round(t - times[0], 1) for t, f in zip(times, frames, strict=True) if f.static is not None]
    assert len(images) == 21 and images[:3] == [0.0, 4.0, 5.4] and images[-1] == 12.8  # as above
    # a second apart while static, and the last static frame before each examined stretch (3.8
    # before the heartbeat at 4.0, 5.2 before the pre-roll at 5.4, 12.6 before the heartbeat)
    assert markers == [1.0, 2.0, 3.0, 3.8, 5.0, 5.2, 9.8, 10.8, 11.8, 12.6]
    assert reader.stats.static == 47 and reader.stats.queued == 21 + 10


def test_a_static_scene_decodes_only_its_key_frames_until_one_shows_motion(tmp_path):
    video = tmp_path / "scene.mp4"
    # a key frame a second; a speck creeping far away from 4.5 s, under the motion threshold
    still_then_moving(video, seconds_still=6, seconds_moving=2, key_frame_every=10, far_s=1.5)
    motion = MotionSettings(pre_roll_s=1.0, post_roll_s=1.0, heartbeat_s=4.0)
    options = ReaderOptions(queue_frames=200, static_key_frames_s=2.0, static_marker_interval_s=0.0)
    reader = CameraReader(spec(str(video), motion, fps=10), options)
    frames = run(reader, lambda r, _: r.stats.state is CameraState.ENDED, timeout_s=40)
    times = [datetime.fromisoformat(f.captured_at).timestamp() for f in frames]
    offsets = [round(t - times[0], 1) for t, f in zip(times, frames, strict=True) if f.static is None]
    assert len(frames) == reader.stats.decoded  # every decoded frame sampled: an image or a marker
    # Every frame of the first 2 s static (0-2.0 s: 21), then key frames only (3, 4, 5 s) until the
    # one at 6 s shows the block; then every frame through the motion, 1 s of post-roll and 2 s
    # static again (6.1-11.0 s: 50), then key frames only (12, 13 s).
    assert reader.stats.decoded == 21 + 3 + 1 + 50 + 2
    assert offsets[:3] == [0.0, 4.0, 5.0]  # the first frame, a heartbeat, a key frame as pre-roll
    assert offsets[3:33] == [round(6.0 + n / 10, 1) for n in range(30)]  # the motion, nothing missed
    assert offsets[33:] == [13.0]  # a heartbeat
    assert reader.stats.decoded < 140  # of the clip's 140 frames


class _Mjpeg(http.server.BaseHTTPRequestHandler):
    """A camera's MJPEG over HTTP at 10 frames/s; the first client's stream pauses after 2 s."""

    served = 0

    def do_GET(self) -> None:
        type(self).served += 1
        first = type(self).served == 1
        self.send_response(200)
        self.send_header("Content-Type", "multipart/x-mixed-replace; boundary=frame")
        self.end_headers()
        for index in range(600):
            image = np.full((120, 160, 3), index * 5 % 255, dtype=np.uint8)
            frame = av.VideoFrame.from_ndarray(image, format="rgb24").reformat(format="yuvj420p")
            jpeg = _jpeg(frame)
            try:
                self.wfile.write(
                    b"--frame\r\nContent-Type: image/jpeg\r\nContent-Length: %d\r\n\r\n" % len(jpeg)
                )
                self.wfile.write(jpeg + b"\r\n")
                self.wfile.flush()
            except OSError:
                return
            time.sleep(0.1)
            if first and index == 20:
                time.sleep(60)  # alive, connected, silent

    def log_message(self, *args: object) -> None:
        pass


def _jpeg(frame: av.VideoFrame) -> bytes:
    context = av.CodecContext.create("mjpeg", "w")
    context.width, context.height, context.pix_fmt = frame.width, frame.height, "yuvj420p"
    context.time_base = __import__("fractions").Fraction(1, 10)
    return b"".join(bytes(p) for p in context.encode(frame))


@pytest.fixture
def mjpeg_server() -> Iterator[str]:
    _Mjpeg.served = 0
    with serve_http(_Mjpeg) as port:
        yield f"http://127.0.0.1:{port}/video"


def test_a_stalled_stream_is_reopened_and_an_mjpeg_camera_is_timed_by_arrival(mjpeg_server):
    options = ReaderOptions(stall_timeout_s=1.5, backoff_base_s=0.1, backoff_cap_s=0.5, queue_frames=200)
    reader = CameraReader(spec(mjpeg_server, fps=5), options)
    states: list[CameraState] = []

    def until(r: CameraReader, taken: list[OutFrame]) -> bool:
        if not states or states[-1] is not r.stats.state:
            states.append(r.stats.state)
        return r.stats.reconnects >= 1 and r.stats.sessions >= 2 and len(taken) >= 25

    frames = run(reader, until, timeout_s=30)
    assert CameraState.STALLED in states and states[-1] is CameraState.STREAMING, states
    assert "***" not in (reader.stats.last_error or "") and "Immediate exit" in reader.stats.last_error
    sessions = {}
    for frame in frames:
        session, _ = re.fullmatch(r"cam:([0-9a-f]+):(\d+)", frame.frame_id).groups()
        sessions.setdefault(session, []).append(datetime.fromisoformat(frame.captured_at).timestamp())
    assert len(sessions) == 2
    second = sorted(sessions.values(), key=min)[1]
    rate = (len(second) - 1) / (second[-1] - second[0])
    assert 4.0 <= rate <= 6.0  # 10 frames/s arriving, sampled to 5 by arrival (mpjpeg's pts say 25/s)


HLS_SEGMENT_S = 1.0
HLS_WINDOW = 3  # segments a live playlist lists


def _hls_segments(folder, seconds: int) -> list[str]:
    """An H.264 HLS rendition of a moving gradient (160x120, 10 frames/s, a key frame a second),
    cut by FFmpeg's own HLS muxer into 1 s segments; their names, in order."""
    from fractions import Fraction

    with av.open(
        str(folder / "vod.m3u8"),
        "w",
        format="hls",
        options={
            "hls_time": str(HLS_SEGMENT_S),
            "hls_list_size": "0",
            "hls_segment_filename": str(folder / "s%d.ts"),
        },
    ) as container:
        stream = container.add_stream("libx264", rate=10)
        stream.width, stream.height, stream.pix_fmt = 160, 120, "yuv420p"
        stream.time_base = Fraction(1, 10)
        stream.options = {"g": "10", "keyint_min": "10", "sc_threshold": "0", "bf": "0"}
        for index in range(seconds * 10):
            image = np.full((120, 160, 3), index * 7 % 255, dtype=np.uint8)
            frame = av.VideoFrame.from_ndarray(image, format="rgb24")
            frame.pts = index
            container.mux(stream.encode(frame))
        container.mux(stream.encode(None))
    return [line for line in (folder / "vod.m3u8").read_text().splitlines() if line.endswith(".ts")]


class _LiveHls(http.server.SimpleHTTPRequestHandler):
    """A live HLS camera: /live.m3u8 lists the last `HLS_WINDOW` segments released so far, one more
    each `HLS_SEGMENT_S` of wall time since the server started (no end list: live)."""

    segments: tuple[str, ...] = ()
    started = 0.0

    def do_GET(self) -> None:
        if self.path != "/live.m3u8":
            super().do_GET()
            return
        released = min(len(self.segments), 1 + int((time.monotonic() - self.started) / HLS_SEGMENT_S))
        first = max(0, released - HLS_WINDOW)
        lines = ["#EXTM3U", "#EXT-X-VERSION:3", "#EXT-X-TARGETDURATION:1", f"#EXT-X-MEDIA-SEQUENCE:{first}"]
        for name in self.segments[first:released]:
            lines += [f"#EXTINF:{HLS_SEGMENT_S:.3f},", name]
        reply(self, 200, "application/vnd.apple.mpegurl", ("\n".join(lines) + "\n").encode())

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def live_hls(tmp_path) -> Iterator[str]:
    segments = _hls_segments(tmp_path, 40)

    class Handler(_LiveHls):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, directory=str(tmp_path), **kwargs)

    Handler.segments, Handler.started = tuple(segments), time.monotonic()
    with serve_http(Handler) as port:
        yield f"http://127.0.0.1:{port}/live.m3u8"


def test_a_live_hls_camera_is_read_as_it_is_released_sampled_by_its_clock(live_hls):
    reader = CameraReader(spec(live_hls, fps=5), ReaderOptions(queue_frames=200))
    frames = run(reader, lambda r, taken: len(taken) >= 30, timeout_s=40)
    assert reader.stats.state is CameraState.STOPPED and reader.stats.reconnects == 0, reader.stats
    assert reader.stats.last_error is None
    assert len({f.frame_id.split(":")[1] for f in frames}) == 1  # one session: the playlist was reloaded
    numbers = [int(f.frame_id.rsplit(":", 1)[1]) for f in frames]
    assert numbers == list(range(len(frames)))
    times = [datetime.fromisoformat(f.captured_at).timestamp() for f in frames]
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert all(gap == pytest.approx(0.2, abs=0.02) for gap in gaps)  # 10 frames/s sampled to 5
    image = next(av.open(__import__("io").BytesIO(frames[-1].jpeg), format="mjpeg").decode(video=0))
    assert (image.width, image.height) == (160, 120)
    # released at 1 s of video a second: 30 frames at 5/s took about 6 s, not a burst
    assert reader.stats.decoded <= 10 * (len(frames) / 5 + HLS_WINDOW + 1)


def test_hardware_decoding_asked_for_falls_back_to_software_where_there_is_no_device():
    reader = CameraReader(spec(str(DASHCAM), fps=5), ReaderOptions(queue_frames=100, hwaccel="cuda"))
    frames = run(reader, lambda r, _: r.stats.state is CameraState.ENDED)
    assert len(frames) == 8 and reader.stats.last_error is None


class _EndingMjpeg(http.server.BaseHTTPRequestHandler):
    """A camera's MJPEG over HTTP that sends 20 frames and closes; asked again, it is not found."""

    served = 0

    def do_GET(self) -> None:
        type(self).served += 1
        if type(self).served > 1:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", "multipart/x-mixed-replace; boundary=frame")
        self.end_headers()
        for index in range(20):
            image = np.full((120, 160, 3), index * 5 % 255, dtype=np.uint8)
            jpeg = _jpeg(av.VideoFrame.from_ndarray(image, format="rgb24").reformat(format="yuvj420p"))
            self.wfile.write(b"--frame\r\nContent-Type: image/jpeg\r\nContent-Length: %d\r\n\r\n" % len(jpeg))
            self.wfile.write(jpeg + b"\r\n")
            self.wfile.flush()
            time.sleep(0.1)

    def log_message(self, *args: object) -> None:
        pass


def test_a_live_stream_that_ends_is_ended_not_unreachable_while_it_is_not_there_again():
    _EndingMjpeg.served = 0
    options = ReaderOptions(backoff_base_s=0.1, backoff_cap_s=0.2, queue_frames=100)
    with serve_http(_EndingMjpeg) as port:
        reader = CameraReader(spec(f"http://127.0.0.1:{port}/video", fps=5), options)
        states: list[CameraState] = []

        def until(r: CameraReader, _taken: list[OutFrame]) -> bool:
            if not states or states[-1] is not r.stats.state:
                states.append(r.stats.state)
            return _EndingMjpeg.served >= 4

        frames = run(reader, until)
    assert frames
    assert CameraState.UNREACHABLE not in states, states
    assert states[-1] is CameraState.ENDED and CameraState.STREAMING in states, states
    assert reader.stats.reconnects >= 2
