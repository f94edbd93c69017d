"""A long camera-status history, and what the console and `cameras status` take to read it.

Writes a simulated history (N cameras, one record each per interval, stamped with their simulated
times; `--history-interval-s` may be longer than the live one, to keep a week's writing short: a
reading of the last seconds costs the same whatever came before) straight to the `camera-status`
topic of a durable local broker (as `up` runs it), then keeps writing live records as a connector
does, one per camera and interval, while it times
`stream-worker cameras status` (wall and CPU) and a `stream-worker store` console: its first
`/cameras`, then the median of 5, and an admin's `/api/me` alone and under concurrent viewers.
Last, `cameras status` as under `up` (its status file names the console, its token file the token
the console was given; no flag): answered by the console's view, not the topic.

    python -m bench.status_history --days 7 --cameras 20 --interval-s 5
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import orjson
from confluent_kafka import Producer

from stream_worker.cameras.status import CameraStatus
from stream_worker.contracts import running_up
from stream_worker.contracts.topics import CAMERA_STATUS
from stream_worker.launchers.broker import LocalBroker
from stream_worker.launchers.ports import free_port
from stream_worker.service.compacted import ensure_compacted_topic
from stream_worker.store.web.users import hash_password, hash_token
from stream_worker.up import status as up_status

TOPIC = CAMERA_STATUS.name
TOKENS = {"admin": "bench-admin-token-0123456789abcdef", "viewer": "bench-viewer-token-0123456789abcdef"}


def status(camera: str, at: float, frames: int) -> bytes:
    return CameraStatus(
        camera_id=camera, state="streaming", state_since=at - 3600, last_error=None,
        source=f"rtsp://${{CAM_USER}}@10.0.0.{len(camera)}/stream", replica="connector-0", updated_at=at,
        decoded_fps=5.0, published_fps=5.0, frames_decoded=frames, frames_published=frames,
        frames_static=0, frames_dropped=0, delivery_errors=0, reconnects=0, motion_share=None,
        last_frame_at=at,
    ).to_json()  # fmt: skip


def write_history(bootstrap: str, cameras: list[str], seconds: float, interval_s: float) -> int:
    """`seconds` of history ending now, batched (the producer's batches) to write it fast."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 50, "batch.size": 1_000_000})
    now = time.time()
    steps = int(seconds / interval_s)
    count = 0
    for step in range(steps):
        at = now - seconds + step * interval_s
        for camera in cameras:
            while True:
                try:
                    producer.produce(
                        TOPIC, key=camera.encode(), value=status(camera, at, step), timestamp=int(at * 1000)
                    )
                    break
                except BufferError:
                    producer.poll(0.05)
            count += 1
        if step % 500 == 0:
            producer.poll(0)
    if producer.flush(600):
        raise RuntimeError("the history was not all written")
    return count


class LiveConnector:
    """One record per camera and interval, each its own batch, as the connector writes them."""

    def __init__(self, bootstrap: str, cameras: list[str], interval_s: float) -> None:
        self._producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
        self._cameras, self._interval_s = cameras, interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        frames = 0
        while not self._stop.is_set():
            frames += 1
            for camera in self._cameras:
                self._producer.produce(TOPIC, key=camera.encode(), value=status(camera, time.time(), frames))
                self._producer.flush(5)
            self._stop.wait(self._interval_s)


def timed_cli(*args: str, up: Path | None = None) -> dict[str, float]:
    """`cameras status --json` with `args`; with `up`, as under that `up` (no flags: its console)."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("STREAM_WORKER_")}
    if up is not None:
        env[running_up.ENV] = str(up)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "stream_worker", "cameras", "status", "--json", *args],
        capture_output=True, text=True, timeout=600, check=False, env=env,
    )  # fmt: skip
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"cameras status failed ({done.returncode}): {done.stderr[-2000:]}")
    if up is not None and done.stderr:
        raise RuntimeError(f"cameras status did not get the console's answer: {done.stderr[-2000:]}")
    out = done.stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "cameras": len(out.splitlines())}


def pretend_up(bootstrap: str, address: str, up: Path) -> None:
    """`up`'s status file naming this console (as the running `up` writes it, this process its
    pid): the CLI then asks the console, with the token the store was given."""
    fields = {"data_dir": str(up), "bootstrap_servers": bootstrap, "console_url": address + "/"}
    up_status.write(up / running_up.STATUS_FILE, "running", fields)


def start_store(bootstrap: str, work: Path) -> tuple[subprocess.Popen, str]:
    users = work / "users.json"
    users.write_text(
        json.dumps(
            {
                "users": [
                    {"name": role, "role": role, "password_hash": hash_password(f"{role} bench passphrase"),
                     "token_hashes": [hash_token(token)]}
                    for role, token in TOKENS.items()
                ]
            }
        )
    )  # fmt: skip
    port = free_port()
    log = (work / "store.log").open("ab")
    args = [
        sys.executable, "-m", "stream_worker", "store", "--bootstrap-servers", bootstrap,
        "--data-dir", str(work / "store"), "--users-file", str(users), "--console-port", str(port),
        "--metrics-port", "0", "--group-id", "bench-store",
        "--viewer-token-file", str(running_up.write_console_token(work / "up")),
    ]  # fmt: skip
    process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
    address = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{address}/healthz", timeout=2).status_code == 200:
                return process, address
        except httpx.HTTPError:
            time.sleep(0.2)
    process.terminate()
    raise RuntimeError(f"the store did not start: see {work / 'store.log'}")


def get(client: httpx.Client, path: str) -> float:
    started = time.perf_counter()
    answer = client.get(path)
    elapsed = time.perf_counter() - started
    if answer.status_code != 200:
        raise RuntimeError(f"{path}: {answer.status_code} {answer.text[:200]}")
    return elapsed


def console_figures(address: str, viewers: int) -> dict[str, object]:
    def client(role: str) -> httpx.Client:
        return httpx.Client(base_url=address, headers={"authorization": f"Bearer {TOKENS[role]}"}, timeout=60)

    admin, viewer = client("admin"), client("viewer")
    started = time.perf_counter()
    while viewer.get("/cameras").status_code == 503:  # its topics not read yet
        if time.perf_counter() - started > 300:
            raise RuntimeError("the console did not read its topics within 300 s")
    figures: dict[str, object] = {"console_ready_s": round(time.perf_counter() - started, 2)}
    figures["cameras_page_median_of_5_s"] = round(
        statistics.median(get(viewer, "/cameras") for _ in range(5)), 4
    )
    figures["camera_status_api_median_of_5_s"] = round(
        statistics.median(get(viewer, "/api/camera-status") for _ in range(5)), 4
    )
    figures["me_alone_median_s"] = round(statistics.median(get(admin, "/api/me") for _ in range(20)), 4)
    stop = threading.Event()
    served: list[float] = []

    def browse() -> None:
        own = client("viewer")
        while not stop.is_set():
            served.append(get(own, "/cameras"))

    with ThreadPoolExecutor(viewers) as pool:
        for _ in range(viewers):
            pool.submit(browse)
        time.sleep(2)  # all viewers asking
        loaded = [get(admin, "/api/me") for _ in range(20)]
        stop.set()
    figures[f"me_under_{viewers}_viewers_median_s"] = round(statistics.median(loaded), 4)
    figures[f"me_under_{viewers}_viewers_max_s"] = round(max(loaded), 4)
    figures["viewer_pages_served"] = len(served)
    figures["viewer_page_median_s"] = round(statistics.median(served), 4) if served else None
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--days", type=float, default=7.0)
    parser.add_argument("--cameras", type=int, default=20)
    parser.add_argument(
        "--interval-s", type=float, default=5.0, help="the live status cadence (the connector's)"
    )
    parser.add_argument(
        "--history-interval-s", type=float, default=None, help="the history's (default: the same)"
    )
    parser.add_argument("--viewers", type=int, default=60)
    parser.add_argument("--work-dir", type=Path, default=None)
    args = parser.parse_args(argv)
    work = args.work_dir or Path(tempfile.mkdtemp(prefix="status-history-"))
    cameras = [f"cam-{index:02d}" for index in range(args.cameras)]
    history_interval_s = args.history_interval_s or args.interval_s
    report: dict[str, object] = {
        "days": args.days,
        "cameras": args.cameras,
        "interval_s": args.interval_s,
        "history_interval_s": history_interval_s,
    }
    with LocalBroker(data_dir=work / "broker") as broker:
        bootstrap = broker.bootstrap_servers
        ensure_compacted_topic(bootstrap, TOPIC)
        started = time.perf_counter()
        report["history_records"] = write_history(bootstrap, cameras, args.days * 86400, history_interval_s)
        report["history_write_s"] = round(time.perf_counter() - started, 1)
        live = LiveConnector(bootstrap, cameras, args.interval_s)
        live.start()
        time.sleep(2 * args.interval_s)
        try:
            report["broker_bytes"] = sum(
                f.stat().st_size for f in (work / "broker").rglob("*") if f.is_file()
            )
            report["cameras_status"] = [timed_cli("--bootstrap-servers", bootstrap) for _ in range(3)]
            report["load_average"] = os.getloadavg()
            print(orjson.dumps(report).decode(), flush=True)
            (work / "up").mkdir(exist_ok=True)
            store, address = start_store(bootstrap, work)
            try:
                report["console"] = console_figures(address, args.viewers)
                pretend_up(bootstrap, address, work / "up")
                report["cameras_status_from_the_console"] = [timed_cli(up=work / "up") for _ in range(5)]
                report["load_average_console"] = os.getloadavg()
            finally:
                store.terminate()
                store.wait(60)
        finally:
            live.stop()
            report["load_average"] = os.getloadavg()
            print(orjson.dumps(report, option=orjson.OPT_INDENT_2).decode(), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
