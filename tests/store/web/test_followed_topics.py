"""The console follows its topics from the store's start and answers from memory, against a real
`stream-worker store` process and the real broker: a camera-status record of the wrong types is
skipped, counted and logged (where, never what), the other cameras still shown; a 1 MB last error
is shown cut; a change made in the console is shown by the next page at once."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from confluent_kafka import Producer

from stream_worker.cameras.status import TEXT_MAX_CHARS, CameraStatus
from stream_worker.service.compacted import write_compacted

from .conftest import signed_in, start_store, topics_of

pytestmark = pytest.mark.integration

HUGE_ERROR = "E" * 990_000  # about 1 MB: the most a record may hold with the rest of it


def status(camera_id: str, state: str = "streaming", **fields: object) -> bytes:
    now = time.time()
    record = CameraStatus(
        camera_id=camera_id, state=state, state_since=now - 60, last_error=None, source="rtsp://cam/1",
        replica="r1", updated_at=now, decoded_fps=12.5, published_fps=2.0, frames_decoded=750,
        frames_published=120, frames_static=0, frames_dropped=0, delivery_errors=0, reconnects=3,
        motion_share=None, last_frame_at=now - 1,
    )  # fmt: skip
    return orjson.dumps({**orjson.loads(record.to_json()), **fields})


@pytest.fixture
def store(tmp_path: Path, users_file: Path, kafka_bootstrap: str, unique_name: str) -> Iterator[tuple]:
    topics = topics_of(unique_name)
    args = [f"--{name.replace('_', '-')}={topic}" for name, topic in topics.items()]
    process, address = start_store(tmp_path, users_file, kafka_bootstrap, unique_name, *args)
    yield process, address, topics
    process.stop(signal.SIGTERM)


def test_a_malformed_camera_status_is_skipped_and_counted_never_a_500(store, kafka_bootstrap: str) -> None:
    process, address, topics = store
    topic = topics["camera_status_topic"]
    write_compacted(
        kafka_bootstrap,
        topic,
        [
            (b"gate", status("gate")),
            (b"yard", status("yard", decoded_fps="fast")),  # wrong type: skipped
            (b"dock", status("dock", "unreachable", last_error=HUGE_ERROR)),
        ],
    )
    viewer, _ = signed_in(address, "vic")
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:  # the console follows the topic: shown within seconds
        states = viewer.get("/api/camera-status")
        assert states.status_code == 200, states.text[:300]
        if {s["camera_id"] for s in states.json()} == {"gate", "dock"}:
            break
        time.sleep(0.2)
    shown = {s["camera_id"]: s for s in states.json()}
    assert set(shown) == {"gate", "dock"}
    assert len(shown["dock"]["last_error"]) == TEXT_MAX_CHARS and shown["gate"]["decoded_fps"] == 12.5
    page = viewer.get("/cameras", headers={"accept": "text/html"})
    assert page.status_code == 200
    assert "gate" in page.text and "dock" in page.text and "E" * (TEXT_MAX_CHARS + 1) not in page.text
    assert len(page.text) < 200_000
    assert process.metric(f'stream_worker_store_console_skipped_records_total{{topic="{topic}"}}') == 1
    skipped = [line for line in process.log_lines() if line.get("msg") == "skipped a camera status record"]
    assert len(skipped) == 1 and "offset 1" in skipped[0]["record"] and "fast" not in str(skipped[0])


def test_a_change_in_the_console_is_on_the_next_page(store, kafka_bootstrap: str) -> None:
    _, address, topics = store
    admin, token = signed_in(address, "ada")
    csrf = {"x-csrf-token": token}
    for plate in ("B840CK197", "A123BC77", "O001OO77"):
        assert (
            admin.post("/api/watchlist", json={"plate": plate, "list": "stolen"}, headers=csrf).status_code
            == 201
        )
        assert plate in {entry["plate"] for entry in admin.get("/api/watchlist").json()}
    assert admin.delete("/api/watchlist/A123BC77", headers=csrf).status_code == 200
    assert "A123BC77" not in {entry["plate"] for entry in admin.get("/api/watchlist").json()}
    target = {"type": "webhook", "url": "https://hooks.example.com/x"}
    assert admin.put("/api/notify/targets/gate", json=target, headers=csrf).status_code == 200
    assert [t["name"] for t in admin.get("/api/notify/targets").json()] == ["gate"]
    settings = {"min_plate_width": 40}
    assert admin.put("/api/cameras/gate", json=settings, headers=csrf).status_code == 200
    cameras = {c["camera_id"]: c["settings"] for c in admin.get("/api/cameras").json()}
    assert cameras["gate"]["min_plate_width"] == 40
    # A change written by another client is shown once followed.
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    producer.produce(topics["watchlist_topic"], key=b"O001OO77", value=None)
    assert producer.flush(15) == 0
    deadline = time.monotonic() + 15
    while "O001OO77" in {e["plate"] for e in admin.get("/api/watchlist").json()}:
        assert time.monotonic() < deadline, "a tombstone written elsewhere was not followed"
        time.sleep(0.2)
