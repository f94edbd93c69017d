"""What `bench soak` runs against: `stream-worker up` as a child, live RTSP cameras that loop the
clips of ../shared/videos, a watch list of the clips' plates and a local webhook that counts what
notify delivers. Everything is set up through the CLI a person would use (`cameras set`,
`watchlist add`, `notify targets set`), on the broker `up` started."""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from bench.pipeline import BenchError
from stream_worker.launchers.ports import free_port
from stream_worker.launchers.rtsp import LocalRtspServer, Mount
from stream_worker.store.web.users import GENERATED_USERS_FILE, hash_password

REPO_ROOT = Path(__file__).resolve().parent.parent
SERVE_FPS = 25  # what each RTSP camera offers; the camera's `fps` samples it
START_TIMEOUT_S = 300.0
STOP_TIMEOUT_S = 120.0
CLI_TIMEOUT_S = 120.0
SOAK_USER = "soak"
WATCH_LIST = "soak"


@dataclass(frozen=True)
class Profile:
    """A kind of camera: the clip it loops, its sampled rate and whether motion gating is on."""

    kind: str
    clip: str
    motion: bool

    @property
    def plate(self) -> str:
        """The plate the clip shows, from its file name (`gate-van-H133OE123.mov`)."""
        return Path(self.clip).stem.rsplit("-", 1)[-1].upper()


# The gate camera loops the van (10 s, its plate read on every loop); the dash camera the rainy night
# clip. Camera k gets PROFILES[k % 2].
PROFILES = (
    Profile("gate", "gate-van-H133OE123.mov", motion=True),
    Profile("dash", "dashcam-rain-T404YA47.mp4", motion=False),
)


@dataclass
class Camera:
    camera_id: str
    profile: Profile
    fps: float
    clip_s: float  # one loop of the clip: a pass of its vehicle per loop

    def to_json(self) -> dict[str, Any]:
        return {
            "camera_id": self.camera_id,
            "kind": self.profile.kind,
            "clip": self.profile.clip,
            "plate": self.profile.plate,
            "fps": self.fps,
            "motion_gating": self.profile.motion,
            "clip_s": round(self.clip_s, 2),
        }


def clip_seconds(path: Path) -> float:
    import av

    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        if stream.duration and stream.time_base:
            return float(stream.duration * stream.time_base)
        return float(container.duration or 0) / 1_000_000


def plan_cameras(count: int, gate_fps: float, dash_fps: float, videos: Path) -> list[Camera]:
    cameras = []
    for k in range(count):
        profile = PROFILES[k % len(PROFILES)]
        path = videos / profile.clip
        if not path.is_file():
            raise BenchError(f"{path} is missing: the soak's cameras loop the clips of {videos}")
        fps = gate_fps if profile.kind == "gate" else dash_fps
        cameras.append(Camera(f"{profile.kind}-{k + 1}", profile, fps, clip_seconds(path)))
    return cameras


class Webhook:
    """A local webhook target: each POST counted, with its event id (X-Stream-Worker-Event)."""

    def __init__(self) -> None:
        self.posts = 0
        self.event_ids: set[str] = set()
        self._lock = threading.Lock()
        webhook = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with webhook._lock:
                    webhook.posts += 1
                    webhook.event_ids.add(self.headers.get("X-Stream-Worker-Event") or "")
                self.send_response(204)
                self.end_headers()

            def log_message(self, *_args: object) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/hook"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def counts(self) -> tuple[int, int]:
        """(POSTs, distinct event ids) so far."""
        with self._lock:
            return self.posts, len(self.event_ids)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@dataclass
class Up:
    """`python -m stream_worker up` on `data_dir`, its output in `output_path`."""

    data_dir: Path
    output_path: Path
    broker_port: int
    console_port: int
    options: tuple[str, ...] = ()  # more of up's options, e.g. ("--frames-retention", "3m")
    process: subprocess.Popen[bytes] = field(init=False)

    def start(self) -> None:
        env = {**os.environ, "STREAM_WORKER_NOTIFY_ALLOW_PRIVATE_TARGETS": "true"}
        with self.output_path.open("wb") as output:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "stream_worker", "up", "--data-dir", str(self.data_dir),
                 "--broker-port", str(self.broker_port), "--console-port", str(self.console_port),
                 *self.options],
                cwd=REPO_ROOT, stdout=output, stderr=subprocess.STDOUT, env=env,
            )  # fmt: skip

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.broker_port}"

    @property
    def console_url(self) -> str:
        return f"http://127.0.0.1:{self.console_port}"

    def output_tail(self, chars: int = 4000) -> str:
        return self.output_path.read_text(errors="replace")[-chars:]

    def status(self) -> dict[str, Any]:
        """up.json, when it is this `up`'s."""
        try:
            status = orjson.loads((self.data_dir / "up.json").read_bytes())
        except (OSError, orjson.JSONDecodeError):
            return {}
        return status if status.get("pid") == self.process.pid else {}

    def wait_running(self) -> dict[str, Any]:
        deadline = time.monotonic() + START_TIMEOUT_S
        while (status := self.status()).get("state") != "running":
            if self.process.poll() is not None:
                raise BenchError(f"up exited with {self.process.returncode}:\n{self.output_tail()}")
            if time.monotonic() > deadline:
                raise BenchError(f"up not running within {START_TIMEOUT_S:.0f} s:\n{self.output_tail()}")
            time.sleep(0.5)
        return status

    def stop(self) -> int | None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.process.kill()  # its watchdog stops the children
                self.process.wait()
        return self.process.returncode


def add_console_user(data_dir: Path) -> str:
    """An admin for the soak's page requests, written where `up`'s console looks for its users on a
    first start (it then prints no password of its own); the password returned."""
    import secrets

    path = data_dir / GENERATED_USERS_FILE
    if path.exists():
        raise BenchError(
            f"{path} exists: give a new --data-dir (the soak signs in to the console as its own admin)"
        )
    password = secrets.token_urlsafe(18)
    users = {"users": [{"name": SOAK_USER, "role": "admin", "password_hash": hash_password(password)}]}
    data_dir.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as file:
        file.write(json.dumps(users, indent=2) + "\n")
    return password


def cli(bootstrap: str, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """`stream-worker ARGS` against `bootstrap`; BenchError when it fails."""
    env = {**os.environ, "STREAM_WORKER_BOOTSTRAP_SERVERS": bootstrap}
    result = subprocess.run(
        [sys.executable, "-m", "stream_worker", *args],
        cwd=REPO_ROOT, env=env, input=stdin, capture_output=True, text=True, timeout=CLI_TIMEOUT_S,
        check=False,
    )  # fmt: skip
    if result.returncode != 0:
        raise BenchError(f"stream-worker {' '.join(args)} exited with {result.returncode}: {result.stderr}")
    return result


def camera_settings(camera: Camera, url: str) -> str:
    """The camera's settings file, in docs/cameras.md's YAML."""
    lines = [
        f"display_name: soak {camera.profile.kind} camera",
        "source:",
        f"  url: {url}",
        f"  fps: {camera.fps:g}",
        "  rtsp_transport: tcp",
    ]
    if camera.profile.motion:
        lines.append("motion: {}")
    return "\n".join(lines) + "\n"


def configure(up: Up, cameras: list[Camera], rtsp: LocalRtspServer, webhook: Webhook, folder: Path) -> None:
    """The watch list, the webhook target, then the cameras (they start streaming at once)."""
    for plate in sorted({camera.profile.plate for camera in cameras}):
        cli(up.bootstrap, "watchlist", "add", plate, "--list", WATCH_LIST, "--label", "soak")
    target = folder / "hook.yaml"
    target.write_text(f"type: webhook\nurl: {webhook.url}\nrules:\n  lists: [{WATCH_LIST}]\n")
    cli(up.bootstrap, "notify", "targets", "set", "soak-hook", "--file", str(target))
    for camera in cameras:
        settings = folder / f"{camera.camera_id}.yaml"
        settings.write_text(camera_settings(camera, rtsp.url(camera.camera_id)))
        cli(up.bootstrap, "cameras", "set", camera.camera_id, "--file", str(settings))


@contextlib.contextmanager
def running_stack(
    cameras: list[Camera], videos: Path, data_dir: Path | None, up_options: tuple[str, ...] = ()
) -> Iterator[tuple[Up, str, Webhook, Path]]:
    """The RTSP server, the webhook and `up` (a new data dir in a temp folder unless `data_dir`),
    configured; yields (up, console password, webhook, work folder), stops all on the way out."""
    with tempfile.TemporaryDirectory(prefix="soak-") as temp, contextlib.ExitStack() as stack:
        folder = Path(temp)
        data = data_dir.expanduser().resolve() if data_dir else folder / "data"
        password = add_console_user(data)
        mounts = [
            Mount(camera.camera_id, videos / camera.profile.clip, loop=True, fps=SERVE_FPS)
            for camera in cameras
        ]
        rtsp = stack.enter_context(LocalRtspServer(mounts).start())
        webhook = Webhook()
        stack.callback(webhook.close)
        up = Up(data, folder / "up.out", free_port(), free_port(), up_options)
        up.start()
        stack.callback(up.stop)
        up.wait_running()
        configure(up, cameras, rtsp, webhook, folder)
        yield up, password, webhook, folder
