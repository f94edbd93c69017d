"""`stream-worker up` for real: the real broker, Triton, services and store as its children.

One `up` serves the checks in order: a vehicle pass reaches the store's database; a SIGKILL of
the worker, the sightings service or the store in the middle of a pass is followed by that
child's restart (a new pid, counted in up.json) and the pass still reaches the database; the
other children (alerts, connector, Triton, the broker) are restarted too and a pass after them
is stored. Then a full stop (SIGTERM: exit 0, no child left) and a start on the same data
directory: the earlier sightings are still in the database and in the console (signed in with the
admin password the first start printed, which is not printed again), and a new pass is stored.
Last, a SIGKILLed `up` leaves no child behind (the watchdog).
"""

from __future__ import annotations

import contextlib
import http.cookiejar
import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import orjson
import pytest
from support import require

from stream_worker.launchers.ports import free_port
from stream_worker.tools.produce import produce_frames

pytestmark = [pytest.mark.integration, pytest.mark.timeout(420)]

REPO_ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 180.0
STORED_TIMEOUT_S = 90.0
STOP_TIMEOUT_S = 90.0
PASS_FRAMES = 12
PASS_FPS = 4.0
SILENCE_S = 2.0  # the sightings service closes a camera's pass this long after its last frame
SAMPLE_TEXTS = {"B840OK197", "B840CK197"}  # the van of samples/car.jpg, as read and as it is


def _status(data_dir: Path) -> dict:
    try:
        return orjson.loads((data_dir / "up.json").read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _wait(condition: Callable[[], object], timeout_s: float, what: str, up: Up | None = None) -> object:
    deadline = time.monotonic() + timeout_s
    while not (result := condition()):
        if up is not None and up.process.poll() is not None:
            pytest.fail(f"up exited with {up.process.returncode} while waiting for {what}:\n{up.output()}")
        if time.monotonic() > deadline:
            pytest.fail(f"{what} not within {timeout_s:.0f} s" + (f"\n{up.output()}" if up else ""))
        time.sleep(0.25)
    return result


class Up:
    """One `python -m stream_worker up` on `data_dir`, its output in a file."""

    def __init__(self, data_dir: Path, broker_port: int, console_port: int) -> None:
        self.data_dir = data_dir
        self.output_path = data_dir.parent / f"up-{uuid.uuid4().hex[:6]}.out"
        self.admin_password: str | None = None  # what the store printed on its first start
        # Its pointer for the CLI (contracts/running_up.py) stays beside the data directory.
        self.state_home = data_dir.parent / "state"
        env = {
            **os.environ,
            "STREAM_WORKER_SIGHTINGS_SILENCE_S": str(SILENCE_S),
            "XDG_STATE_HOME": str(self.state_home),
        }
        with self.output_path.open("wb") as output:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "stream_worker", "up", "--data-dir", str(data_dir),
                 "--broker-port", str(broker_port), "--console-port", str(console_port),
                 "--session-timeout-ms", "6000"],
                cwd=REPO_ROOT, stdout=output, stderr=subprocess.STDOUT, env=env,
            )  # fmt: skip

    def output(self) -> str:
        return self.output_path.read_text(errors="replace")[-6000:]

    def status(self) -> dict:
        status = _status(self.data_dir)
        return status if status.get("pid") == self.process.pid else {}

    def wait_running(self) -> dict:
        return _wait(lambda: self.status().get("state") == "running" and self.status(), START_TIMEOUT_S,
                     "up running", self)  # type: ignore[return-value]  # fmt: skip

    def child(self, name: str) -> dict:
        return self.status()["children"][name]

    def pids(self) -> list[int]:
        return [pid for child in self.status()["children"].values() for pid in child["pids"]]

    def stop(self) -> int:
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(STOP_TIMEOUT_S)

    def close(self) -> None:
        if self.process.poll() is None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.stop()
        if self.process.poll() is None:
            self.process.kill()  # the watchdog stops its children
            self.process.wait()


def admin_password(output: str) -> str | None:
    """The console's first admin password, which the store prints once and up passes on."""
    found = re.search(r"^console: sign in .*as 'admin' with password (\S+)$", output, re.MULTILINE)
    return found[1] if found else None


class ConsoleSession:
    """A person signed in to the console: its login form (session cookie, CSRF token), then the API."""

    def __init__(self, base_url: str, user: str, password: str) -> None:
        self.base_url = base_url.rstrip("/")
        self._opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
        )
        form = self._opener.open(f"{self.base_url}/login", timeout=10).read().decode()
        found = re.search(r'name="csrf_token" value="([^"]+)"', form)
        assert found, form
        fields = {"username": user, "password": password, "csrf_token": found[1], "next": "/"}
        with self._opener.open(
            f"{self.base_url}/login", urllib.parse.urlencode(fields).encode(), 10
        ) as reply:
            assert reply.status == 200 and reply.url.rstrip("/") == self.base_url, reply.url

    def get(self, path: str) -> object:
        with self._opener.open(f"{self.base_url}{path}", timeout=10) as reply:
            return orjson.loads(reply.read())


def stored_sightings(data_dir: Path) -> list[tuple[str, str, str]]:
    """(sighting_id, camera_id, text) of every sighting in the store's database."""
    database = data_dir / "history.db"
    if not database.exists():
        return []
    try:
        with contextlib.closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=10)) as db:
            return db.execute("SELECT sighting_id, camera_id, text FROM sightings").fetchall()
    except sqlite3.OperationalError:  # not migrated yet
        return []


def drive_pass(bootstrap: str, camera_id: str, jpeg: bytes, during: Callable[[], None] | None = None) -> None:
    """One vehicle pass of `camera_id` (the van, PASS_FRAMES frames at PASS_FPS); `during` runs a
    third of the way through it."""
    report: dict[str, object] = {}

    def publish() -> None:
        frames = ((f"{camera_id}-{index}", jpeg) for index in range(PASS_FRAMES))
        report["result"] = produce_frames(
            frames, bootstrap_servers=bootstrap, topic="frames", camera_id=camera_id, fps=PASS_FPS,
            local_broker=True,
        )  # fmt: skip

    publisher = threading.Thread(target=publish, daemon=True)
    publisher.start()
    if during is not None:
        time.sleep(PASS_FRAMES / PASS_FPS / 3)
        during()
    publisher.join(120)
    result = report["result"]
    assert result.failed == 0, result.first_error


def wait_stored(up: Up, camera_id: str) -> list[tuple[str, str, str]]:
    def found() -> list[tuple[str, str, str]]:
        return [row for row in stored_sightings(up.data_dir) if row[1] == camera_id]

    rows = _wait(found, STORED_TIMEOUT_S, f"a sighting of {camera_id} in the store's database", up)
    assert {text for _, _, text in rows} <= SAMPLE_TEXTS, rows  # type: ignore[union-attr]
    return rows  # type: ignore[return-value]


def killer(up: Up, name: str) -> tuple[Callable[[], None], dict]:
    """A SIGKILL of child `name` (each of its process groups' leaders), and what up.json said of it
    just before (filled in when it runs)."""
    before: dict = {}

    def kill() -> None:
        before.update(up.child(name))
        assert before["state"] == "running" and before["pids"], before
        for pid in before["pids"]:
            os.kill(pid, signal.SIGKILL)

    return kill, before


def wait_restarted(up: Up, name: str, before: dict) -> dict:
    def restarted() -> dict | None:
        child = up.child(name)
        ok = child["state"] == "running" and child["restarts"] == before["restarts"] + 1
        return child if ok and set(child["pids"]).isdisjoint(before["pids"]) else None

    child = _wait(restarted, START_TIMEOUT_S, f"{name} restarted", up)
    return child  # type: ignore[return-value]


@pytest.fixture(scope="module")
def ports() -> tuple[int, int]:
    return free_port(), free_port()


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("up") / "data"


@pytest.fixture(scope="module")
def up(data_dir: Path, ports: tuple[int, int], prepared_model_repository: Path) -> Iterator[Up]:
    stack = Up(data_dir, *ports)
    try:
        stack.wait_running()
        stack.admin_password = admin_password(stack.output())
        yield stack
    finally:
        stack.close()


def test_a_pass_reaches_the_store(up: Up, ports: tuple[int, int], car_jpeg: bytes) -> None:
    status = up.status()
    assert set(status["children"]) == {
        "broker", "triton", "store", "alerts", "visits", "notify", "sightings", "worker", "connector"
    }  # fmt: skip
    assert status["console_url"] == f"http://127.0.0.1:{ports[1]}/"
    assert f"console: http://127.0.0.1:{ports[1]}/" in up.output()
    assert up.admin_password, f"no admin password passed on from the store's first start:\n{up.output()}"
    # notify links each event to its sighting's picture in this console.
    (notify_pid,) = up.child("notify")["pids"]
    notify_args = Path(f"/proc/{notify_pid}/cmdline").read_bytes().split(b"\0")
    assert notify_args[notify_args.index(b"--console-url") + 1] == status["console_url"].encode()
    # Its targets' secrets: a file in the data dir that only its owner reads, read again on change.
    secrets = up.data_dir / "notify-secrets.env"
    assert notify_args[notify_args.index(b"--secrets-file") + 1] == str(secrets).encode()
    assert secrets.stat().st_mode & 0o777 == 0o600 and f"notification secrets: {secrets}" in up.output()
    drive_pass(status["bootstrap_servers"], "cam-first", car_jpeg)
    assert len(wait_stored(up, "cam-first")) == 1
    # The worker sends each plate's picture, so the console shows the sighting with it.
    with contextlib.closing(sqlite3.connect(f"file:{up.data_dir / 'history.db'}?mode=ro", uri=True)) as db:
        pictures = db.execute(
            "SELECT count(*) FROM pictures JOIN sightings USING (sighting_id) WHERE camera_id = 'cam-first'"
        ).fetchone()[0]
    assert pictures == 1


def test_a_watch_list_entry_added_in_the_console_alerts_the_next_pass_in_the_page(
    up: Up, car_jpeg: bytes
) -> None:
    """The issue's end to end: in a real Chromium, the admin adds the van's plate to the watch list
    in the console; the next pass of the van raises an alert that appears in the live page."""
    import console_browser

    require(console_browser.chromium_available(), "Chromium and its chromedriver are not installed")
    from selenium.webdriver.common.by import By

    console_url = up.status()["console_url"].rstrip("/")
    assert up.admin_password
    with console_browser.chromium() as driver:
        console_browser.sign_in(driver, console_url, "admin", up.admin_password)
        driver.get(f"{console_url}/watchlist")
        driver.find_element(By.ID, "plate").send_keys("B840CK197")
        driver.find_element(By.ID, "add").click()
        console_browser.wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, 'tr[data-plate="B840CK197"]'))
        driver.get(f"{console_url}/")
        console_browser.wait(driver, lambda d: d.find_element(By.ID, "live-state").text == "live")
        # The alerts service follows the watch list live (about a second); an entry it learns after
        # the pass's first reads still alerts on the pass's sighting.
        drive_pass(up.status()["bootstrap_servers"], "cam-watched", car_jpeg)
        console_browser.wait(
            driver, lambda d: "B840CK197" in console_browser.live_texts(d, "alerts"), timeout=STORED_TIMEOUT_S
        )


@pytest.mark.parametrize("name", ["worker", "sightings", "store"])
def test_a_killed_child_is_restarted_and_its_pass_is_stored(up: Up, car_jpeg: bytes, name: str) -> None:
    camera = f"cam-kill-{name}"
    kill, before = killer(up, name)
    drive_pass(up.status()["bootstrap_servers"], camera, car_jpeg, during=kill)
    child = wait_restarted(up, name, before)
    assert child["last_exit"] == "killed by SIGKILL", child
    rows = wait_stored(up, camera)
    assert len({sighting_id for sighting_id, _, _ in rows}) == len(rows)


@pytest.mark.parametrize("name", ["alerts", "connector", "triton", "broker"])
def test_any_other_child_is_restarted_and_the_stack_goes_on(up: Up, car_jpeg: bytes, name: str) -> None:
    kill, before = killer(up, name)
    kill()
    wait_restarted(up, name, before)
    camera = f"cam-after-{name}"
    drive_pass(up.status()["bootstrap_servers"], camera, car_jpeg)
    wait_stored(up, camera)


def test_after_a_full_stop_and_start_the_sightings_are_still_there(
    up: Up, data_dir: Path, ports: tuple[int, int], car_jpeg: bytes
) -> None:
    before = stored_sightings(data_dir)
    assert len(before) >= 8
    children = up.pids()
    pointer = up.state_home / "stream-worker" / "up.json"
    assert orjson.loads(pointer.read_bytes())["status"] == str(data_dir / "up.json")
    assert up.stop() == 0, up.output()
    assert _status(data_dir)["state"] == "stopped"
    assert {child["state"] for child in _status(data_dir)["children"].values()} == {"stopped"}
    assert not pointer.exists()
    assert not [pid for pid in children if _alive(pid)]
    again = Up(data_dir, *ports)
    try:
        again.wait_running()
        assert set(stored_sightings(data_dir)) >= set(before)
        assert admin_password(again.output()) is None, "the password is printed on the first start only"
        # The console shows them: signed in with the first start's password, the API lists them all.
        assert up.admin_password is not None
        console = ConsoleSession(again.status()["console_url"], "admin", up.admin_password)
        assert console.get("/api/me") == {"name": "admin", "role": "admin"}
        listed = console.get("/api/sightings?limit=200")["items"]  # type: ignore[index]
        assert {row["sighting_id"] for row in listed} >= {sighting_id for sighting_id, _, _ in before}
        drive_pass(again.status()["bootstrap_servers"], "cam-second-run", car_jpeg)
        wait_stored(again, "cam-second-run")
        # A SIGKILLed up: the watchdog stops every child it started.
        children = again.pids()
        again.process.kill()
        again.process.wait()
        _wait(lambda: not [pid for pid in children if _alive(pid)], 60, "the children of a killed up gone")
    finally:
        again.close()
