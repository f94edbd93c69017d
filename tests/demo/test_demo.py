"""`stream-worker demo`: its pieces without servers, then the real thing as a subprocess.

The integration tests watch every process the demo starts (by walking /proc while it runs) and
check afterwards that none is left: after a normal run, after Ctrl-C, and after the demo itself
is killed with SIGKILL (then its watchdog must clean up).
"""

from __future__ import annotations

import base64
import contextlib
import io
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import cv2
import numpy as np
import orjson
import pytest
from support import EXPECTED_PLATE, edit_distance

from stream_worker.cameras.geometry import point_in_polygon
from stream_worker.cameras.status import CameraStatus
from stream_worker.demo.app import CORRUPT_FRAME, DemoError, DemoOptions, camera_frames, resolve_inputs
from stream_worker.demo.cameras import camera_ids
from stream_worker.demo.cameras_settings import STREET_ZONE, demo_settings
from stream_worker.demo.report import (
    Arrival,
    ConnectorSummary,
    Results,
    alert_row,
    dead_letter_row,
    event_rows,
    percentile,
    sighting_row,
    summary_lines,
)
from stream_worker.demo.topics import SAMPLE_PLATE, DemoTopics
from stream_worker.demo.video_cameras import VideoCamera, default_video, video_cameras
from stream_worker.demo.viewer import Viewer, prune_picture_runs
from stream_worker.demo.webhook import WebhookReceiver
from stream_worker.notify.webhook import EVENT_HEADER, KIND_HEADER, SIGNATURE_HEADER, signature
from stream_worker.terminal import Terminal
from stream_worker.watchdog import Watchdog, terminate
from tests.conftest import REPO_ROOT, samples_dir, weights_dir

MAX_PICTURE_BYTES = 16 * 1024  # a plate picture is a JPEG of at most 16 KB

# --- without servers -----------------------------------------------------------------------


def test_camera_frames_spreads_corrupt_frames_and_cycles_the_inputs() -> None:
    inputs = sorted(samples_dir().glob("*.jp*g"))
    frames = list(camera_frames(inputs, "cam-1", 6, 2, threading.Event()))
    ids = [frame_id for frame_id, _ in frames]
    assert ids == [
        *("cam-1-0", "cam-1-1", "cam-1-corrupt-1"),
        *("cam-1-2", "cam-1-3", "cam-1-corrupt-2"),
        *("cam-1-4", "cam-1-5"),
    ]
    images = [data for frame_id, data in frames if "corrupt" not in frame_id]
    assert images[0] == inputs[0].read_bytes() and images[1] == inputs[1].read_bytes()
    assert images[2] == inputs[0].read_bytes()
    assert [data for frame_id, data in frames if "corrupt" in frame_id] == [CORRUPT_FRAME] * 2


def test_camera_frames_stop_early() -> None:
    stop = threading.Event()
    frames = camera_frames(sorted(samples_dir().glob("*.jp*g")), "cam-2", 100, 0, stop)
    next(frames)
    stop.set()
    assert list(frames) == []


def test_one_frame_still_gets_its_corrupt_frame() -> None:
    frames = list(camera_frames([samples_dir() / "car.jpg"], "cam-1", 1, 1, threading.Event()))
    assert [frame_id for frame_id, _ in frames] == ["cam-1-0", "cam-1-corrupt-1"]


def test_inputs_default_to_the_samples_beside_the_weights() -> None:
    assert resolve_inputs([], weights_dir()) == sorted(samples_dir().glob("*.jp*g"))


def test_no_inputs_and_no_samples_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(DemoError, match="no frames to publish") as raised:
        resolve_inputs([], tmp_path / "weights")
    assert raised.value.exit_code == 2


def test_an_unusable_path_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(DemoError, match="no such file") as raised:
        resolve_inputs([tmp_path / "missing.jpg"], weights_dir())
    assert raised.value.exit_code == 2


def _event(event_id: str, plates: list[str], latency_ms: float) -> dict[str, object]:
    return {
        "event_id": event_id,
        "camera_id": "cam-1",
        "frame_id": f"cam-1-{event_id}",
        "captured_at": "2025-01-31T12:00:00+00:00",
        "processed_at": "2025-01-31T12:00:00.500000+00:00",
        "latency_ms": latency_ms,
        "plates": [{"text": text, "confidence": 0.8612} for text in plates],
    }


def test_rows_and_summary() -> None:
    results = Results(first_published_at=100.0)
    assert results.add_event(_event("a", ["B840OK197"], 120.0), 101.0)
    assert not results.add_event(_event("a", ["B840OK197"], 120.0), 101.5)  # a duplicate
    assert results.add_event(_event("b", [], 80.0), 102.0)
    dead = {
        "camera_id": "cam-1",
        "frame_id": "cam-1-corrupt-1",
        "error.reason": "invalid_image",
        "error.detail": "not a JPEG",
        "source.topic": "frames",
        "source.partition": "0",
        "source.offset": "7",
    }
    assert results.add_dead_letter(dead, 102.0)
    assert event_rows(_event("a", ["B840OK197"], 120.0)) == [
        "cam-1     cam-1-a           B840OK197    0.86    120"
    ]
    zoned = _event("z", ["B840OK197"], 120.0)
    zoned["plates"][0]["zone"] = "street"  # type: ignore[index]
    assert event_rows(zoned) == ["cam-1     cam-1-z           B840OK197    0.86    120  zone street"]
    assert "(no plate)" in event_rows(_event("b", [], 80.0))[0]
    assert dead_letter_row(dead).endswith("DEAD LETTER  -       -  invalid_image: not a JPEG")
    lines = summary_lines(results, published=4, cameras=1, produce_seconds=1.5)
    assert "plate events      2 (1 with a plate, 1 without)" in lines
    assert "plates read       B840OK197 x1" in lines
    assert "dead letters      1 (invalid_image x1)" in lines
    assert "missing           1" in lines
    assert not any(line.startswith("plate pictures") for line in lines)  # no folder: no line
    results.never_delivered = 1
    assert "missing           1 (never delivered to the worker by the broker: 1)" in summary_lines(
        results, published=4, cameras=1, produce_seconds=1.5
    )
    assert "throughput        1.5 frames/s (first frame sent to last result)" in lines
    assert "latency (worker)  p50 80 ms, p99 120 ms" in lines
    assert any(line.startswith("latency (camera)  p50 500 ms") for line in lines)


def test_sightings_rows_and_summary() -> None:
    sighting = {
        "sighting_id": "s1",
        "camera_id": "cam-2",
        "text": "B840CK197",
        "confidence": 0.9312,
        "reads": 12,
        "first_seen": "2025-01-31T12:00:00+00:00",
        "last_seen": "2025-01-31T12:00:11.500000+00:00",
        "direction": "stationary",
        "closed_by": "silence",
    }
    results = Results()
    assert "sightings         none" in summary_lines(results, published=0, cameras=1, produce_seconds=1.0)
    assert results.add_sighting(sighting)
    assert not results.add_sighting(sighting)  # published again after a restart: same id
    assert results.add_sighting({**sighting, "sighting_id": "s2", "camera_id": "cam-1", "reads": 3})
    assert sighting_row(sighting) == (
        "cam-2     SIGHTING          B840CK197    0.93  12 reads over 11.5 s, stationary, closed by silence"
    )
    zoned = {**sighting, "best_read": {"text": "B840CK197", "zone": "street"}}
    assert sighting_row(zoned).endswith("stationary, zone street, closed by silence")
    lines = summary_lines(results, published=0, cameras=1, produce_seconds=1.0)
    assert "sightings         2 from 15 reads (B840CK197 x2)" in lines


def test_alert_rows_and_summary() -> None:
    alert = {
        "alert_id": "a1",
        "camera_id": "cam-1",
        "list": "demo",
        "label": "sample van",
        "plate": "B840CK197",
        "match_kind": "fuzzy",
        "distance": 0.5,
        "candidate": "B840OK197",
        "confidence": 0.8612,
    }
    results = Results()
    assert "alerts            none" in summary_lines(results, published=0, cameras=1, produce_seconds=1.0)
    assert results.add_alert(alert)
    assert not results.add_alert(alert)  # published again after a restart: same id
    exact = {**alert, "alert_id": "a2", "camera_id": "cam-2", "match_kind": "exact", "distance": 0.0}
    assert results.add_alert(exact)
    assert alert_row(alert) == (
        "cam-1     ALERT             B840CK197    0.86  (demo: sample van) fuzzy 0.5 from B840OK197"
    )
    assert alert_row({**exact, "label": None}).endswith("B840CK197    0.86  (demo) exact")
    lines = summary_lines(results, published=0, cameras=1, produce_seconds=1.0)
    assert "alerts            2 (B840CK197 on demo: fuzzy x1, exact x1)" in lines


def test_webhook_lines_say_what_arrived_and_whether_it_was_signed() -> None:
    alert = {
        "alert_id": "a1",
        "camera_id": "cam-1",
        "plate": "B840CK197",
        "list": "demo",
        "match_kind": "exact",
    }
    results = Results()
    results.add_alert(alert)
    results.add_alert({**alert, "alert_id": "a2", "camera_id": "cam-2"})
    results.webhook = {"a1": Arrival("a1", "alert", "B840CK197", "cam-1", signature_ok=True)}
    assert results.undelivered == ["a2"]
    lines = summary_lines(results, published=0, cameras=2, produce_seconds=1.0)
    assert (
        "webhook           1 of 2 alerts arrived at the demo's webhook (notify), 1 of 1 signatures checked"
    ) in lines
    assert "  alert B840CK197 at cam-1, event a1, signature checked" in lines
    results.webhook["a2"] = Arrival("a2", "alert", "B840CK197", "cam-2", False, "http://c/p")
    assert results.undelivered == ["a2"]  # arrived, but not signed with the run's secret
    lines = summary_lines(results, published=0, cameras=2, produce_seconds=1.0)
    assert "  alert B840CK197 at cam-2, event a2, signature WRONG, picture http://c/p" in lines
    assert not any(line.startswith("webhook") for line in summary_lines(Results(), 0, 1, 1.0))


def _post(url: str, body: bytes, headers: dict[str, str]) -> int:
    request = urllib.request.Request(url, body, {"Content-Type": "application/json", **headers})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status
    except urllib.error.HTTPError as error:
        return error.code


def test_the_demos_webhook_checks_signatures_and_keeps_one_arrival_per_event() -> None:
    receiver = WebhookReceiver().start()
    try:
        body = orjson.dumps({"alert_id": "a1", "camera_id": "cam-1", "plate": "B840CK197"})
        signed = {
            EVENT_HEADER: "a1",
            KIND_HEADER: "alert",
            SIGNATURE_HEADER: signature(body, receiver.secret),
        }
        assert _post(receiver.url, body, signed) == 200
        assert _post(receiver.url, body, signed) == 200  # a retry: the same event id
        forged = {**signed, EVENT_HEADER: "a2", SIGNATURE_HEADER: signature(body, "another secret")}
        assert _post(receiver.url, body, forged) == 200
        assert _post(receiver.url, b"not json", {**signed, EVENT_HEADER: "a3"}) == 400
        assert receiver.received() == {
            "a1": Arrival("a1", "alert", "B840CK197", "cam-1", signature_ok=True),
            "a2": Arrival("a2", "alert", "B840CK197", "cam-1", signature_ok=False),
        }
    finally:
        receiver.stop()
    WebhookReceiver().stop()  # never started: stops at once


def test_demo_topics_are_the_defaults_locally_and_run_specific_elsewhere() -> None:
    local = DemoTopics.for_run(None)
    assert local.names == (
        "frames", "plates", "frames.dlq", "sightings", "alerts", "store.dlq", "watchlist", "cameras",
        "notify-targets", "notify.dlq", "notify.deliveries", "notify-tests", "notify-status",
        "notify.replays", "corrections", "visits",
    )  # fmt: skip
    assert local.viewed == ("plates", "frames.dlq", "sightings", "alerts")
    assert local.compacted == (
        "watchlist", "cameras", "camera-status", "notify-targets", "notify-tests", "notify-status",
        "corrections",
    )  # fmt: skip
    assert local.with_connector(False) == local.names
    assert local.with_connector(True) == (*local.names, "camera-status")
    external = DemoTopics.for_run("abc123")
    assert external.watchlist == "stream-worker-demo-abc123.watchlist"
    assert external.cameras == "stream-worker-demo-abc123.cameras"
    assert external.camera_status == "stream-worker-demo-abc123.camera-status"
    assert external.notify_targets == "stream-worker-demo-abc123.notify-targets"
    assert all(name.startswith("stream-worker-demo-abc123.") for name in external.with_connector(True))


# --- the video cameras (the camera connector's) ---------------------------------------------

VIDEOS = weights_dir().parent / "videos"


def test_the_default_video_camera_is_the_longest_clip_beside_the_weights() -> None:
    """gate-van (10 s) over gate-truck (5.75 s) and the dashcam (1.6 s): a whole pass per loop."""
    cameras = video_cameras([], weights_dir(), enabled=True)
    assert [(camera.camera_id, camera.path.name) for camera in cameras] == [
        ("video-1", "gate-van-H133OE123.mov")
    ]
    assert cameras[0].seconds == pytest.approx(10.0, abs=0.1)
    assert default_video(weights_dir()) == VIDEOS / "gate-van-H133OE123.mov"


def test_equally_long_clips_are_chosen_by_name(tmp_path: Path) -> None:
    (tmp_path / "videos").mkdir()
    clip = (VIDEOS / "gate-truck-Y663YO750.mp4").read_bytes()
    for name in ("b.mp4", "a.mp4", "notes.txt"):
        (tmp_path / "videos" / name).write_bytes(clip)
    assert default_video(tmp_path / "weights") == tmp_path / "videos" / "a.mp4"


def test_no_videos_means_no_video_camera(tmp_path: Path) -> None:
    assert video_cameras([], tmp_path / "weights", enabled=True) == []
    assert video_cameras([], weights_dir(), enabled=False) == []


def test_video_cameras_given_are_numbered_in_order_and_checked(tmp_path: Path) -> None:
    truck, van = VIDEOS / "gate-truck-Y663YO750.mp4", VIDEOS / "gate-van-H133OE123.mov"
    cameras = video_cameras([truck, van], tmp_path / "weights", enabled=True)
    assert [(camera.camera_id, camera.path) for camera in cameras] == [("video-1", truck), ("video-2", van)]
    with pytest.raises(DemoError, match="no such file") as raised:
        video_cameras([tmp_path / "missing.mp4"], weights_dir(), enabled=True)
    assert raised.value.exit_code == 2
    with pytest.raises(DemoError, match="exclude each other") as raised:
        video_cameras([truck], weights_dir(), enabled=False)
    assert raised.value.exit_code == 2


def test_a_video_camera_is_its_clip_looped_at_4_fps_with_motion_gating() -> None:
    camera = VideoCamera("video-1", Path("../shared/videos/gate-van-H133OE123.mov"), 10.0)
    settings = camera.settings
    assert settings.source is not None and settings.motion is not None
    assert settings.source.url == str((VIDEOS / "gate-van-H133OE123.mov").resolve())  # absolute
    assert (settings.source.loop, settings.source.fps, settings.motion.enabled) == (True, 4.0, True)
    assert settings.plate_images and settings.display_name == "demo video-1 (gate-van-H133OE123.mov)"


def _status(**fields: object) -> CameraStatus:
    defaults: dict[str, object] = {
        "camera_id": "video-1", "state": "stopped", "state_since": 0.0, "last_error": None,
        "source": "/videos/gate.mov", "replica": "demo", "updated_at": 0.0, "decoded_fps": 0.0,
        "published_fps": 0.0, "frames_decoded": 44, "frames_published": 40, "frames_static": 4,
        "frames_dropped": 0, "delivery_errors": 0, "reconnects": 0, "motion_share": 0.9,
        "last_frame_at": None,
    }  # fmt: skip
    return CameraStatus(**{**defaults, **fields})  # type: ignore[arg-type]


def test_the_connectors_frames_are_accounted_for_apart() -> None:
    """The demo's `missing` compares its own frames with their results, and the connector's frames
    (read back) with the video camera's results; neither can hide the other's loss."""
    results = Results(connector_cameras=frozenset({"video-1"}))
    assert results.add_event(_event("a", ["B840OK197"], 100.0), 1.0)  # cam-1's
    for index in range(3):
        video = {**_event(f"v{index}", [], 90.0), "camera_id": "video-1", "frame_id": f"video-1:s:{index}"}
        assert results.add_event(video, 1.0)
    assert results.add_dead_letter({"camera_id": "video-1", "source.offset": "9"}, 1.0)
    assert (results.accounted, results.connector_results, results.results) == (1, 4, 5)
    connector = ConnectorSummary(frames=5, statuses=[_status()], clips={"video-1": "gate.mov"})
    lines = summary_lines(results, published=1, cameras=1, produce_seconds=1.0, connector=connector)
    assert lines[0] == "frames published  1 by 1 camera(s) in 1.0 s"
    assert lines[1] == (
        "connector frames  5 by video-1 (gate.mov), read back from the frames topic "
        "(not in 'frames published'): 3 plate events, 1 dead letters, missing 1"
    )
    assert lines[2] == (
        "camera video-1    stopped: 44 frames decoded, 40 published, 4 static (motion gate), "
        "0 dropped, 0 reconnects"
    )
    assert "missing           1" in lines  # the connector's frame without a result
    assert "plate events      4 (1 with a plate, 3 without)" in lines  # every camera's
    complete = ConnectorSummary(frames=4)
    assert "missing           0" in summary_lines(results, 1, 1, 1.0, complete)
    assert "missing           1" in summary_lines(results, 2, 1, 1.0, complete)  # the demo's frame
    assert not any(line.startswith("connector") for line in summary_lines(results, 1, 1, 1.0))


def test_demo_cameras_get_a_street_zone_over_the_sample_vans_plate_and_plate_pictures() -> None:
    # The van's plate box in samples/car.jpg (780x439): about x 95-132, y 330-343.
    centre = ((95 + 132) / 2 / 780, (330 + 343) / 2 / 439)
    assert point_in_polygon(*centre, STREET_ZONE.polygon)
    assert not point_in_polygon(0.5, 0.3, STREET_ZONE.polygon)  # the trees and the sky
    settings = demo_settings("cam-2")
    assert settings.plate_images and settings.zones == (STREET_ZONE,) and not settings.masks
    assert camera_ids(3) == ["cam-1", "cam-2", "cam-3"]


def test_plate_pictures_default_to_a_fresh_folder_per_run(tmp_path: Path) -> None:
    default = DemoOptions().plate_images_dir("abc123")
    assert default.parts[-2:] == ("stream-worker-demo-plates", "abc123")
    assert DemoOptions(plate_images=tmp_path).plate_images_dir("abc123") == tmp_path


def test_pruning_keeps_the_newest_run_folders_and_leaves_other_files_alone(tmp_path: Path) -> None:
    runs = [tmp_path / f"{index:08x}" for index in range(7)]
    for age, run in enumerate(reversed(runs)):  # runs[-1] is the newest
        (run / "plate.jpg").parent.mkdir()
        (run / "plate.jpg").write_bytes(b"jpeg")
        os.utime(run, (1_000_000 - age, 1_000_000 - age))
    keep_me = [tmp_path / "my-pictures", tmp_path / "notes.txt", tmp_path / "ABCDEF12"]
    keep_me[0].mkdir()
    keep_me[1].write_text("mine")
    keep_me[2].mkdir()
    removed = prune_picture_runs(tmp_path, keep=5)
    assert sorted(removed) == runs[:2]
    assert sorted(path for path in tmp_path.iterdir()) == sorted([*runs[2:], *keep_me])
    assert prune_picture_runs(tmp_path, keep=5) == []
    assert prune_picture_runs(tmp_path / "absent", keep=5) == []


@dataclass(frozen=True)
class _Message:
    """What the viewer reads of a Kafka message."""

    _topic: str
    _value: bytes

    def topic(self) -> str:
        return self._topic

    def value(self) -> bytes:
        return self._value


def test_viewer_saves_new_records_pictures_once(tmp_path: Path) -> None:
    """Named as `tail --plate-images` names them; a record read twice is saved and counted once."""
    jpeg = base64.b64encode(b"\xff\xd8\xff picture").decode()
    event = _event("e1", ["B840OK197", "A123BC77"], 100.0)
    for plate in event["plates"]:  # type: ignore[attr-defined]
        plate.update(image=jpeg, zone="street")
    sighting = {
        "sighting_id": "s1",
        "camera_id": "cam-1",
        "text": "B840OK197",
        "confidence": 0.9,
        "reads": 2,
        "first_seen": "2025-01-31T12:00:00+00:00",
        "last_seen": "2025-01-31T12:00:01+00:00",
        "direction": None,
        "closed_by": "silence",
        "best_read": {"text": "B840OK197", "image": jpeg, "zone": "street"},
    }
    results = Results(plate_pictures_dir=tmp_path)
    viewer = Viewer.__new__(Viewer)  # show() alone: no broker to read from
    viewer.topics, viewer.results = DemoTopics(), results
    viewer.console = Terminal(io.StringIO(), interactive=False)
    for topic, value in [("plates", event), ("plates", event), ("sightings", sighting)]:
        viewer.show(_Message(topic, orjson.dumps(value)), 1.0)
    assert results.plate_pictures == 3
    assert sorted(path.name for path in tmp_path.iterdir()) == ["e1-0.jpg", "e1-1.jpg", "s1.jpg"]
    assert (tmp_path / "s1.jpg").read_bytes() == b"\xff\xd8\xff picture"
    lines = summary_lines(results, published=1, cameras=1, produce_seconds=1.0)
    assert f"plate pictures    3 in {tmp_path}" in lines


def test_percentile_is_nearest_rank() -> None:
    values = list(range(1, 101))
    assert (percentile(values, 0.5), percentile(values, 0.99), percentile([7.0], 0.99)) == (50, 99, 7.0)


def test_watchdog_stops_the_groups_when_its_owner_vanishes() -> None:
    child = subprocess.Popen(["sleep", "300"], start_new_session=True)
    watchdog = Watchdog()
    watchdog.watch(child.pid)
    assert watchdog._process.stdin is not None
    watchdog._process.stdin.close()  # what the owner's death looks like from the watchdog
    assert child.wait(timeout=30) == -signal.SIGTERM
    watchdog._process.wait(timeout=30)


def test_a_group_that_ignores_sigterm_is_killed_after_the_grace_period() -> None:
    stubborn = subprocess.Popen(
        [sys.executable, "-c", STUBBORN_CHILD], start_new_session=True, stdout=subprocess.PIPE, text=True
    )
    assert stubborn.stdout is not None and stubborn.stdout.readline() == "ignoring SIGTERM\n"
    terminate([stubborn.pid], grace_s=0.5)
    assert stubborn.wait(timeout=30) == -signal.SIGKILL


STUBBORN_CHILD = """
import signal, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
print("ignoring SIGTERM", flush=True)
time.sleep(300)
"""


def test_watchdog_leaves_the_groups_alone_once_released() -> None:
    child = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        watchdog = Watchdog()
        watchdog.watch(child.pid)
        watchdog.release()
        assert child.poll() is None
    finally:
        child.kill()
        child.wait()


# --- the real demo -------------------------------------------------------------------------


@dataclass(frozen=True)
class ProcessInfo:
    pid: int
    pgid: int
    start_time: str
    cmdline: str


def _process_table() -> dict[int, tuple[int, ProcessInfo, str]]:
    """pid -> (parent pid, info, state) for every process we may read."""
    table = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (comm) "
        state, ppid, pgid, start_time = fields[0], int(fields[1]), int(fields[2]), fields[19]
        table[int(entry.name)] = (ppid, ProcessInfo(int(entry.name), pgid, start_time, cmdline), state)
    return table


@dataclass
class DemoRun:
    """The demo as a subprocess, with its output and every descendant process seen while it ran."""

    process: subprocess.Popen[str]
    lines: list[str] = field(default_factory=list)
    seen: dict[int, ProcessInfo] = field(default_factory=dict)
    plate_seen: threading.Event = field(default_factory=threading.Event)
    reader: threading.Thread | None = None

    def wait_for_output(self) -> str:
        """All the demo printed: the reader thread ends at EOF, after the demo exits."""
        assert self.reader is not None
        self.reader.join(timeout=60)
        return self.output

    @property
    def output(self) -> str:
        return "".join(self.lines)


@pytest.fixture
def start_demo() -> Iterator[Callable[..., DemoRun]]:
    runs: list[DemoRun] = []

    def start(*args: str) -> DemoRun:
        process = subprocess.Popen(
            [sys.executable, "-m", "stream_worker", "demo", *args],
            cwd=REPO_ROOT,
            env={**os.environ, "LPR_WEIGHTS_DIR": str(weights_dir())},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,  # our SIGINT goes to the demo alone, as a terminal's Ctrl-C would
        )
        run = DemoRun(process)
        runs.append(run)
        run.reader = threading.Thread(target=_read_output, args=(run,), daemon=True)
        run.reader.start()
        threading.Thread(target=_watch_descendants, args=(run,), daemon=True).start()
        return run

    yield start
    for run in runs:  # a failed test must leave neither the demo nor its children running
        if run.process.poll() is None:
            run.process.send_signal(signal.SIGTERM)
            run.process.wait(timeout=120)
        for info in _leftovers(run):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(info.pgid, signal.SIGKILL)


def _read_output(run: DemoRun) -> None:
    assert run.process.stdout is not None
    for line in run.process.stdout:
        run.lines.append(line)
        if _plate_in_row(line):
            run.plate_seen.set()


def _plate_in_row(line: str) -> bool:
    cells = line.split()
    return len(cells) >= 3 and cells[0].startswith("cam-") and edit_distance(cells[2], EXPECTED_PLATE) <= 1


def _watch_descendants(run: DemoRun) -> None:
    root = run.process.pid
    while run.process.poll() is None:
        table = _process_table()
        family = {root}
        grew = True
        while grew:
            grew = False
            for pid, (ppid, info, _) in table.items():
                if ppid in family and pid not in family:
                    family.add(pid)
                    _remember(run.seen, info)
                    grew = True
        time.sleep(0.1)


def _remember(seen: dict[int, ProcessInfo], info: ProcessInfo) -> None:
    """Keep the latest live look at each process: one caught between fork and exec still shows
    its parent's command line and group, so a later look at the same process replaces it; one
    caught exiting shows no command line, so that look is dropped."""
    known = seen.get(info.pid)
    if known is None or (known.start_time == info.start_time and info.cmdline):
        seen[info.pid] = info


def _leftovers(run: DemoRun) -> list[ProcessInfo]:
    """Processes still alive that the demo started, or that sit in one of their process groups."""
    groups = {info.pgid for info in run.seen.values()}
    left = []
    for pid, (_, info, state) in _process_table().items():
        if state == "Z":
            continue
        started_by_demo = pid in run.seen and run.seen[pid].start_time == info.start_time
        if started_by_demo or info.pgid in groups:
            left.append(info)
    return left


def _wait_without_leftovers(run: DemoRun, patience_s: float) -> list[ProcessInfo]:
    deadline = time.monotonic() + patience_s
    while (left := _leftovers(run)) and time.monotonic() < deadline:
        time.sleep(0.5)
    return left


def _assert_the_worker_lost_nothing(output: str, exit_code: int) -> None:
    """Every frame accounted for, or the rest never delivered by the local broker, which now and
    then skips a record on a live fetch (README, Limitations): then the demo exits 1 and says so."""
    found = re.search(
        r"^  missing +(\d+)(?: \(never delivered to the worker by the broker: (\d+)\))?$",
        output,
        re.MULTILINE,
    )
    assert found, output
    missing, never_delivered = int(found[1]), int(found[2] or 0)
    assert missing == never_delivered, output
    assert exit_code == (0 if missing == 0 else 1), output


def _assert_saw_every_kind_of_child(run: DemoRun) -> None:
    commands = " | ".join(info.cmdline for info in run.seen.values())
    markers = ("tansu broker", "tritonserver", "triton_python_backend_stub", "stream_worker run")
    services = ("sightings", "alerts", "connect", "store", "notify")
    for marker in (*markers, *(f"stream_worker {service}" for service in services)):
        assert marker in commands, f"never saw a {marker!r} process; saw: {commands}"
    assert "stream_worker.watchdog" in commands


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_demo_prints_plate_events_and_a_summary_and_leaves_nothing_behind(
    start_demo: Callable[..., DemoRun], tmp_path: Path
) -> None:
    """With ../shared/videos present, the camera connector reads the longest clip (the van at the
    gate, 10 s) as video-1 beside the simulated cameras, until they are done and it played once."""
    pictures = tmp_path / "plates"
    run = start_demo("--cameras", "2", "--fps", "2", "--duration", "3", "--plate-images", str(pictures))
    exit_code = run.process.wait(timeout=240)
    output = run.wait_for_output()
    assert run.plate_seen.is_set(), output
    assert "summary" in output
    console = r"^console: http://127\.0\.0\.1:\d+/ \(while the demo runs\)$"
    assert re.search(console, output, re.MULTILINE), output
    _assert_the_worker_lost_nothing(output, exit_code)
    assert "dead letters      1 (invalid_image x1)" in output
    assert "frames published  13 by 2 camera(s)" in output
    # The repeated car photo is one vehicle standing in each camera's view: one sighting each.
    sightings = [line.split() for line in output.splitlines() if "SIGHTING" in line.split()[1:2]]
    simulated = [cells for cells in sightings if cells[0].startswith("cam-")]
    assert sorted(cells[0] for cells in simulated) == ["cam-1", "cam-2"], output
    assert all(edit_distance(cells[2], EXPECTED_PLATE) <= 1 for cells in simulated), output
    # The van at the gate passes once per loop: its plate, read exactly, is video-1's sighting.
    assert [cells[2] for cells in sightings if cells[0] == "video-1"] == ["H133OE123"], output
    assert re.search(r"sightings +3 from \d+ reads \(", output), output
    # The van is on the watch list by its true text: one alert per camera, whatever it is read as.
    alerts = [line.split() for line in output.splitlines() if "ALERT" in line.split()[1:2]]
    assert sorted(cells[0] for cells in alerts) == ["cam-1", "cam-2"], output
    assert all(cells[2] == SAMPLE_PLATE and "(demo:" in cells for cells in alerts), output
    assert re.search(rf"alerts +2 \({SAMPLE_PLATE} on demo: (fuzzy|exact) x", output), output
    _assert_the_alerts_reached_the_webhook(output, alerts=2)
    _assert_camera_settings_at_work(output, pictures, plate_rows=len(_van_rows(output)))
    _assert_the_connector_was_accounted_for(output, "video-1", "gate-van-H133OE123.mov", clip_frames=40)
    _assert_saw_every_kind_of_child(run)
    assert _leftovers(run) == []


def _assert_the_alerts_reached_the_webhook(output: str, alerts: int) -> None:
    """Notify delivered each alert to the demo's own webhook, signed with the run's
    secret; the summary names each one (plate, camera, event id)."""
    assert "notify runs with --allow-private-targets, a flag of the whole service" in output, output
    summary = rf"webhook +{alerts} of {alerts} alerts arrived at the demo's webhook \(notify\), "
    assert re.search(summary + rf"{alerts} of {alerts} signatures checked", output), output
    arrived = re.findall(
        rf"^    alert {SAMPLE_PLATE} at (cam-\d), event ([0-9a-f-]{{36}}), signature checked$",
        output,
        re.MULTILINE,
    )
    assert sorted(camera for camera, _ in arrived) == ["cam-1", "cam-2"], output


def _assert_the_connector_was_accounted_for(output: str, camera: str, clip: str, clip_frames: int) -> None:
    """Its frames (read back) each came back as an event of its camera (a row each), its status
    says it stopped, and at least one loop of the clip was read."""
    rows = [line.split() for line in output.splitlines() if line.split()[:1] == [camera]]
    events = {cells[1] for cells in rows if cells[1].startswith(f"{camera}:")}  # frame ids
    found = re.search(
        rf"connector frames +(\d+) by {camera} \({re.escape(clip)}\), read back from the frames topic "
        r"\(not in 'frames published'\): (\d+) plate events, (\d+) dead letters, missing 0",
        output,
    )
    assert found is not None, output
    frames, event_count, dead = (int(group) for group in found.groups())
    assert frames == event_count == len(events) > 0 and dead == 0, output
    status = re.search(rf"camera {camera} +stopped: (\d+) frames decoded, (\d+) published, ", output)
    assert status is not None, output
    decoded, published = int(status[1]), int(status[2])
    # Its last status is written just before its producer's last flush: a frame or two may still
    # have been on the way (delivered, read back, but not yet counted as published).
    assert 0 < published <= frames and decoded >= clip_frames - 1, output  # one loop at least


def _van_rows(output: str) -> list[str]:
    """The event rows of the sample van's plate (not the sightings' or alerts' rows)."""
    return [
        line
        for line in output.splitlines()
        if _plate_in_row(line) and line.split()[1] not in ("SIGHTING", "ALERT")
    ]


def _assert_camera_settings_at_work(output: str, pictures: Path, plate_rows: int) -> None:
    """The demo's cameras have the street zone and plate pictures: every read of the van's plate
    names the zone, and each read and each sighting's best read left a picture (a JPEG that
    decodes, at most 16 KB) in --plate-images, as many as the summary says."""
    assert "zone 'street' (lower 40% of the frame), plate pictures on" in output, output
    assert plate_rows > 0 and all(row.endswith("zone street") for row in _van_rows(output)), output
    sightings = [line for line in output.splitlines() if "SIGHTING" in line.split()[1:2]]
    simulated = [line for line in sightings if line.startswith("cam-")]  # the video has no zone
    assert simulated and all(", zone street, closed by" in line for line in simulated), output
    summary = re.search(r"plate pictures +(\d+) in (\S+)", output)
    assert summary is not None and Path(summary[2]) == pictures, output
    files = sorted(pictures.glob("*.jpg"))
    assert int(summary[1]) == len(files) >= plate_rows + len(sightings), output
    for path in files:
        data = path.read_bytes()
        assert len(data) <= MAX_PICTURE_BYTES, path
        image = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
        assert image is not None and image.shape[0] > 0, path


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_interrupted_demo_stops_everything_it_started(start_demo: Callable[..., DemoRun]) -> None:
    run = start_demo("--duration", "120")
    assert run.plate_seen.wait(timeout=240), run.output
    run.process.send_signal(signal.SIGINT)
    assert run.process.wait(timeout=120) == 130, run.output
    assert "interrupted (SIGINT)" in run.output
    _assert_saw_every_kind_of_child(run)
    assert _leftovers(run) == []


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_killed_demo_is_cleaned_up_by_its_watchdog(start_demo: Callable[..., DemoRun]) -> None:
    run = start_demo("--duration", "120")
    assert run.plate_seen.wait(timeout=240), run.output
    _assert_saw_every_kind_of_child(run)
    run.process.send_signal(signal.SIGKILL)
    run.process.wait(timeout=30)
    left = [info for info in _wait_without_leftovers(run, patience_s=60) if info.pid != run.process.pid]
    assert left == [], "\n".join(info.cmdline for info in left)


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_demo_attaches_to_given_servers_and_starts_neither(
    start_demo: Callable[..., DemoRun], kafka_bootstrap: str, triton_url: str
) -> None:
    from confluent_kafka.admin import AdminClient

    truck = weights_dir().parent / "videos" / "gate-truck-Y663YO750.mp4"  # a clip named: video-1
    run = start_demo(
        *("--bootstrap-servers", kafka_bootstrap, "--triton-url", triton_url),
        *("--cameras", "1", "--duration", "2", "--video-camera", str(truck)),
    )
    exit_code = run.process.wait(timeout=240)
    output = run.wait_for_output()
    assert run.plate_seen.is_set(), output
    _assert_the_worker_lost_nothing(output, exit_code)
    _assert_the_connector_was_accounted_for(output, "video-1", truck.name, clip_frames=23)
    commands = " | ".join(info.cmdline for info in run.seen.values())
    assert "stream_worker run" in commands and "stream_worker connect" in commands
    assert "tansu" not in commands and "tritonserver" not in commands
    assert _leftovers(run) == []
    created = re.search(r"creating topics (stream-worker-demo-\w+)\.frames,", run.output)
    assert created is not None, run.output
    topics = AdminClient({"bootstrap.servers": kafka_bootstrap}).list_topics(timeout=30).topics
    assert [name for name in topics if name.startswith(created.group(1))] == [], "demo topics left behind"
