"""Error classification: FFmpeg's own errors, raised by real `av.open` calls against a real local
HTTP server (401, a text page, a request left unanswered) and against closed ports."""

from __future__ import annotations

import errno
import http.server
import socket
import time
from collections.abc import Iterator

import av
import pytest
from support import serve_http

from stream_worker.connector.states import CameraState, NotVideo, Stalled, classify
from stream_worker.launchers.ports import free_port


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path == "/auth":
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="camera"')
            self.end_headers()
        elif self.path == "/forbidden":
            self.send_response(403)
            self.end_headers()
        elif self.path == "/text":
            body = b"not a video, just words\n" * 200
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        else:
            self.send_response(404)
            self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def http_server() -> Iterator[str]:
    with serve_http(_Handler) as port:
        yield f"127.0.0.1:{port}"


@pytest.fixture
def silent_port() -> Iterator[int]:
    """Accepts connections and never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    yield listener.getsockname()[1]
    listener.close()


def open_error(url: str, timeout_s: float = 2.0) -> tuple[BaseException, bool]:
    started = time.monotonic()
    with pytest.raises(Exception) as caught:
        av.open(url, options={"rtsp_transport": "tcp"} if url.startswith("rtsp") else {}, timeout=timeout_s)
    return caught.value, time.monotonic() - started >= timeout_s * 0.95


def test_wrong_password_is_unauthorized(http_server):
    error, timed_out = open_error(f"http://user:wrong@{http_server}/auth")
    assert classify(error, opening=True, timed_out=timed_out) is CameraState.UNAUTHORIZED
    error, timed_out = open_error(f"http://{http_server}/forbidden")
    assert classify(error, opening=True, timed_out=timed_out) is CameraState.UNAUTHORIZED


def test_a_page_that_is_not_video_is_not_video(http_server, tmp_path):
    error, timed_out = open_error(f"http://{http_server}/text")
    assert classify(error, opening=True, timed_out=timed_out) is CameraState.NOT_VIDEO
    text = tmp_path / "notes.mp4"
    text.write_text("not a video\n" * 100)
    error, timed_out = open_error(str(text))
    assert classify(error, opening=True, timed_out=timed_out) is CameraState.NOT_VIDEO
    assert classify(NotVideo("no video stream"), opening=True) is CameraState.NOT_VIDEO


@pytest.mark.parametrize("scheme", ["rtsp", "http"])
def test_refused_is_unreachable(scheme):
    error, timed_out = open_error(f"{scheme}://127.0.0.1:{free_port()}/stream")
    assert classify(error, opening=True, timed_out=timed_out) is CameraState.UNREACHABLE


def test_no_such_host_or_file_is_unreachable(http_server):
    error, timed_out = open_error("rtsp://camera.invalid/stream")
    assert classify(error, opening=True, timed_out=timed_out) is CameraState.UNREACHABLE
    error, timed_out = open_error("/no/such/video.mp4")
    assert classify(error, opening=True, timed_out=timed_out) is CameraState.UNREACHABLE
    error, timed_out = open_error(f"http://{http_server}/missing")
    assert classify(error, opening=True, timed_out=timed_out) is CameraState.UNREACHABLE


@pytest.mark.parametrize("scheme", ["rtsp", "http"])
def test_a_server_that_never_answers_is_unreachable_when_opening(silent_port, scheme):
    error, timed_out = open_error(f"{scheme}://127.0.0.1:{silent_port}/stream", timeout_s=1.0)
    assert timed_out
    assert classify(error, opening=True, timed_out=timed_out) is CameraState.UNREACHABLE


def test_timeouts_while_reading_are_stalls():
    assert classify(av.error.ExitError(-1414092869, "Immediate exit requested"), opening=False) is (
        CameraState.STALLED
    )
    assert classify(Stalled("no frame for 5 s"), opening=False) is CameraState.STALLED
    assert classify(TimeoutError(), opening=True) is CameraState.UNREACHABLE


def test_an_io_error_after_frames_is_an_end_and_before_them_unreachable():
    error = av.error.OSError(errno.EIO, "Input/output error")
    assert classify(error, opening=False) is CameraState.ENDED
    assert classify(error, opening=True) is CameraState.UNREACHABLE
    assert classify(ConnectionResetError(errno.ECONNRESET, "reset"), opening=False) is CameraState.UNREACHABLE


def test_anything_else_is_an_error():
    assert classify(RuntimeError("boom"), opening=False) is CameraState.ERROR
    assert classify(av.error.ArgumentError(22, "Invalid argument"), opening=True) is CameraState.ERROR


def test_failed_states():
    assert CameraState.UNAUTHORIZED.failed and not CameraState.STREAMING.failed
    assert not CameraState.STALLED.failed and not CameraState.ENDED.failed
