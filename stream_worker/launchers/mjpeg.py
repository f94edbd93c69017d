"""A local HTTP MJPEG camera: video files served as endless `multipart/x-mixed-replace` JPEG streams.

For the tests and the demo, like the RTSP server beside it (rtsp.py): the cheap IP cameras that
speak HTTP push a JPEG per frame in one never-ending multipart response, and this serves each file
that way, looped, at the file's own frame rate. It runs as a child process of the project's own
Python (`python -m stream_worker.launchers.mjpeg --config FILE`), so that killing it drops its
clients the way a camera that loses power does, and `LocalMjpegServer` starts, stops and restarts
it on the same port.

Paths: `/<mount>.mjpg` the stream, `/<mount>.jpg` one snapshot, `/not-video` an HTML page (what a
camera's login page looks like to a reader that expected video). Optional basic auth on all of
them. Each mount decodes and encodes only while someone watches it, once for all its clients:
every client gets the current frame, as from a live camera.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import hmac
import json
import signal
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import quote

from stream_worker.launchers.mount_server import MountServer
from stream_worker.launchers.process import LoggedProcess

READY_LINE = "mjpeg server ready"
BOUNDARY = "frame"
JPEG_QUALITY = 90
FRAME_WAIT_S = 5.0  # a client whose mount produced nothing for this long is answered with the end
NOT_VIDEO_PAGE = (
    b"<!DOCTYPE html><html><head><title>Camera login</title></head>"
    b"<body><form method=post><input name=user><input name=password type=password></form></body></html>\n"
)


class MjpegServerError(RuntimeError):
    """The MJPEG server could not be started, or did not answer in time."""


@dataclass(frozen=True)
class MjpegMount:
    """One camera: http://host:port/<name>.mjpg serves `path` (looped unless `loop` is False)."""

    name: str
    path: Path
    loop: bool = True

    def __post_init__(self) -> None:
        if not self.name or self.name != quote(self.name, safe="-_~") or self.name == "not-video":
            raise ValueError(f"mount name {self.name!r}: use letters, digits, '-', '_' (not 'not-video')")


def decoded_frames(path: Path, loop: bool) -> Iterator[tuple[float, Any]]:
    """(seconds since the start, RGB array) of every frame, the times running on across loops."""
    import av

    offset = 0.0
    while True:
        last = 0.0
        step = 0.0
        with av.open(str(path)) as container:
            stream = container.streams.video[0]
            rate = stream.average_rate or stream.guessed_rate
            step = 1 / float(rate) if rate else 0.04
            for index, frame in enumerate(container.decode(stream)):
                at = frame.time if frame.time is not None else index * step
                last = at
                yield offset + at, frame.to_ndarray(format="rgb24")
        if not loop:
            return
        offset += last + step


def check_video(path: Path) -> None:
    """SystemExit unless `path` is a file with a video stream that decodes."""
    import av

    if not path.is_file():
        raise SystemExit(f"no such video file: {path}")
    try:
        with av.open(str(path)) as container:
            next(container.decode(video=0))
    except (av.error.FFmpegError, IndexError, StopIteration) as error:
        raise SystemExit(f"{path} cannot be read as a video: {error!r}") from error


class LiveClip:
    """The current JPEG of one mount, produced in real time while at least one client watches."""

    def __init__(self, mount: MjpegMount) -> None:
        self.mount = mount
        self._condition = threading.Condition()
        self._jpeg: bytes | None = None
        self._sequence = 0
        self._ended = False
        self._watchers = 0
        self._thread: threading.Thread | None = None

    @contextlib.contextmanager
    def watching(self) -> Iterator[None]:
        with self._condition:
            self._watchers += 1
            if self._thread is None:
                self._jpeg, self._ended = None, False
                self._thread = threading.Thread(
                    target=self._produce, name=f"mjpeg-{self.mount.name}", daemon=True
                )
                self._thread.start()
        try:
            yield
        finally:
            with self._condition:
                self._watchers -= 1

    def next_frame(self, after: int) -> tuple[bytes | None, int]:
        """The first JPEG newer than sequence `after`, and its sequence; None once the clip ended."""
        with self._condition:
            self._condition.wait_for(
                lambda: (self._jpeg is not None and self._sequence > after) or self._ended,
                timeout=FRAME_WAIT_S,
            )
            if self._sequence > after and self._jpeg is not None:
                return self._jpeg, self._sequence
            return None, after

    def _produce(self) -> None:
        import simplejpeg

        started = time.monotonic()
        try:
            for at, rgb in decoded_frames(self.mount.path, self.mount.loop):
                with self._condition:
                    if self._watchers == 0:
                        # Decided under the lock that subscribers take: a client arriving after
                        # this starts a new producer.
                        self._finish()
                        return
                delay = started + at - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                jpeg = simplejpeg.encode_jpeg(rgb, quality=JPEG_QUALITY, colorspace="RGB")
                with self._condition:
                    self._jpeg = jpeg
                    self._sequence += 1
                    self._condition.notify_all()
        except Exception as error:
            print(f"mount {self.mount.name}: decoding {self.mount.path.name} failed: {error}", flush=True)
        with self._condition:
            self._finish()

    def _finish(self) -> None:
        self._ended = True
        self._thread = None
        self._condition.notify_all()


class MjpegHandler(BaseHTTPRequestHandler):
    server: MjpegHttpServer

    def do_GET(self) -> None:
        if not self._authorized():
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="camera"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        path = self.path.split("?", 1)[0].strip("/")
        if path == "":
            self._send(200, "text/plain", "".join(f"/{name}.mjpg\n" for name in self.server.clips).encode())
        elif path == "not-video":
            self._send(200, "text/html; charset=utf-8", NOT_VIDEO_PAGE)
        elif path.endswith(".mjpg") and path[: -len(".mjpg")] in self.server.clips:
            self._stream(self.server.clips[path[: -len(".mjpg")]])
        elif path.endswith(".jpg") and path[: -len(".jpg")] in self.server.clips:
            clip = self.server.clips[path[: -len(".jpg")]]
            with clip.watching():
                jpeg, _ = clip.next_frame(0)
            if jpeg is None:
                self._send(503, "text/plain", b"no frame\n")
            else:
                self._send(200, "image/jpeg", jpeg)
        else:
            self._send(404, "text/plain", b"not found\n")

    def _authorized(self) -> bool:
        expected = self.server.authorization
        if expected is None:
            return True
        return hmac.compare_digest(self.headers.get("Authorization", "").encode(), expected.encode())

    def _send(self, status: int, content_type: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _stream(self, clip: LiveClip) -> None:
        self.send_response(200)
        self.send_header("Content-Type", f"multipart/x-mixed-replace; boundary={BOUNDARY}")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        sequence = 0
        with clip.watching(), contextlib.suppress(BrokenPipeError, ConnectionResetError):
            while True:
                jpeg, sequence = clip.next_frame(sequence)
                if jpeg is None:
                    return
                head = f"--{BOUNDARY}\r\nContent-Type: image/jpeg\r\nContent-Length: {len(jpeg)}\r\n\r\n"
                self.wfile.write(head.encode() + jpeg + b"\r\n")
                self.wfile.flush()

    def log_message(self, format: str, *args: Any) -> None:
        pass  # one line per request would be noise; errors are printed where they happen


class MjpegHttpServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(
        self, address: tuple[str, int], clips: dict[str, LiveClip], authorization: str | None
    ) -> None:
        super().__init__(address, MjpegHandler)
        self.clips = clips
        self.authorization = authorization


def basic_authorization(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def serve(config: dict[str, Any]) -> int:
    """Serve until SIGTERM/SIGINT (the child process's main)."""
    mounts = [
        MjpegMount(spec["name"], Path(spec["path"]), bool(spec.get("loop", True)))
        for spec in config["mounts"]
    ]
    for mount in mounts:
        check_video(mount.path)
    user = config.get("user")
    authorization = basic_authorization(user, config.get("password") or "") if user is not None else None
    clips = {mount.name: LiveClip(mount) for mount in mounts}
    try:
        server = MjpegHttpServer((config.get("host", "127.0.0.1"), int(config["port"])), clips, authorization)
    except OSError as error:
        raise SystemExit(
            f"cannot listen on {config.get('host', '127.0.0.1')}:{config['port']}: {error}"
        ) from error
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: threading.Thread(target=server.shutdown, daemon=True).start())
    auth = ", basic auth" if authorization else ""
    print(f"{READY_LINE} on port {server.server_address[1]}{auth}: {', '.join(clips)}", flush=True)
    with server:
        server.serve_forever(poll_interval=0.2)
    return 0


class LocalMjpegServer(MountServer[MjpegMount]):
    """The MJPEG server as a child process on `host`:`port` (a free port when None), as
    rtsp.LocalRtspServer (mount_server.py): url(), start(), stop(), kill(), start() again on the
    same port, close(). `base_url()` + `/not-video`, `/<mount>.jpg`: its other pages."""

    scheme = "http"
    mount_suffix = ".mjpg"
    what = "MJPEG server"
    error = MjpegServerError
    ready_line = READY_LINE
    files_prefix = "mjpeg-server-"

    def _mount_config(self, mount: MjpegMount) -> dict[str, Any]:
        return {**asdict(mount), "path": str(Path(mount.path).resolve())}

    def _spawn(self, config_path: Path) -> LoggedProcess:
        command = [sys.executable, "-m", "stream_worker.launchers.mjpeg", "--config", str(config_path)]
        return LoggedProcess(command, self.files_prefix)

    def _answers(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://{self.host}:{self.port}/", timeout=2):
                return True
        except urllib.error.HTTPError:
            return True  # 401: it answers
        except OSError:
            return False


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Serve video files as HTTP MJPEG cameras.")
    parser.add_argument("--config", type=Path, required=True, help="JSON: host, port, user, password, mounts")
    args = parser.parse_args(argv)
    return serve(json.loads(args.config.read_text()))


if __name__ == "__main__":
    sys.exit(main())
