"""Acceptance tests of `stream-worker sightings` against the real local broker.

Plate events of known vehicles from 3 cameras (cam-0 on partition 0; cam-1 and cam-2 sharing
partition 1) go to a plates topic; the service runs as a subprocess, as in production, so that it
can be killed with SIGKILL; an independent reader checks the sightings topic.
"""

from __future__ import annotations

import signal
import time
from collections import Counter, defaultdict
from dataclasses import dataclass

import pytest
from confluent_kafka import Producer
from plate_events import T0, Pass, timeline
from service_processes import WAIT_S, ServiceProcess, TopicReader, committed_offsets

from stream_worker.contracts import ClosedBy, Direction, PlateEvent, PlateSighting
from stream_worker.launchers.broker import create_topics

pytestmark = pytest.mark.integration

PARTITIONS = 3
CAMERA_PARTITION = {"cam-0": 0, "cam-1": 1, "cam-2": 1}
SILENCE_S = 2.0

# cam-0: a car with misread frames (one wrong character, a 3-digit region read with 2), then one
# following closely: it enters where the first one was while the first one's pass is still open.
# cam-1: two cars in view together, then a third. cam-2: a car crossing left and one going away
# at the same time; cam-2's frames stop with its last car, so only silence can close the two.
PASSES = [
    Pass("cam-0", "A123BC77", T0, frames=10, misreads={2: "A123BC177", 5: "A128BC77", 7: "A123BC7"}),
    Pass("cam-0", "K456MH199", T0 + 2.4, frames=8),
    Pass("cam-0", "E001KX50", T0 + 8.0, frames=6),
    Pass("cam-1", "B840CK197", T0 + 0.1, frames=12, box=(200, 600, 300, 630), dx=25, dy=0, grow=1.0),
    Pass("cam-1", "M777OP777", T0 + 0.5, frames=9, box=(1200, 300, 1300, 330), misreads={4: "M777OP77"}),
    Pass("cam-1", "T300TT30", T0 + 6.0, frames=15, dy=0, grow=1.0),
    Pass("cam-2", "X999YX99", T0 + 1.0, frames=10, box=(1500, 500, 1600, 530), dx=-30, dy=0, grow=1.0),
    Pass("cam-2", "C555CC55", T0 + 2.0, frames=7, grow=1 / 1.05),
]
UNTIL = {"cam-0": PASSES[2].end + 3, "cam-1": PASSES[5].end + 3, "cam-2": PASSES[7].end}
EXPECTED = {  # (camera, text): (reads, direction, closed by)
    ("cam-0", "A123BC77"): (10, Direction.APPROACHING, ClosedBy.GAP),
    ("cam-0", "K456MH199"): (8, Direction.APPROACHING, ClosedBy.GAP),
    ("cam-0", "E001KX50"): (6, Direction.APPROACHING, ClosedBy.GAP),
    ("cam-1", "B840CK197"): (12, Direction.RIGHT, ClosedBy.GAP),
    ("cam-1", "M777OP777"): (9, Direction.APPROACHING, ClosedBy.GAP),
    ("cam-1", "T300TT30"): (15, Direction.STATIONARY, ClosedBy.GAP),
    ("cam-2", "X999YX99"): (10, Direction.LEFT, ClosedBy.SILENCE),
    ("cam-2", "C555CC55"): (7, Direction.RECEDING, ClosedBy.SILENCE),
}


def plates_stream(until: dict[str, float] = UNTIL) -> list[tuple[int, PlateEvent]]:
    """(partition, event) in the order a worker would publish them: capture order per camera."""
    events = [(CAMERA_PARTITION[c], e) for c in CAMERA_PARTITION for e in timeline(PASSES, c, until=until[c])]
    return sorted(events, key=lambda item: (item[1].captured_at, item[1].camera_id))


@dataclass
class Topics:
    plates: str
    sightings: str


@pytest.fixture
def topics(kafka_bootstrap: str, unique_name: str) -> Topics:
    names = Topics(f"{unique_name}-plates", f"{unique_name}-sightings")
    create_topics(kafka_bootstrap, [names.plates, names.sightings], PARTITIONS)
    return names


def produce(bootstrap: str, topic: str, events: list[tuple[int, PlateEvent]]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5})
    for partition, event in events:
        producer.produce(topic, value=event.to_json(), key=event.camera_id.encode(), partition=partition)
        producer.poll(0)
    assert producer.flush(60) == 0


@pytest.fixture
def sightings_reader(kafka_bootstrap: str, topics: Topics):
    reader = TopicReader(kafka_bootstrap, topics.sightings, PARTITIONS)
    yield reader
    reader.close()


@pytest.fixture
def start_sightings(start_service, topics: Topics):
    def start(*extra: str) -> ServiceProcess:
        return start_service(
            "sightings", "sightings started",
            "--input-topic", topics.plates,
            "--output-topic", topics.sightings,
            "--silence-s", str(SILENCE_S),
            *extra,
        )  # fmt: skip

    return start


def sightings(reader: TopicReader) -> list[PlateSighting]:
    return [PlateSighting.model_validate_json(record.value) for record in reader.records]


def wait_for(reader: TopicReader, condition, what: str, services: list[ServiceProcess]) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        for service in services:
            assert service.is_running(), f"sightings exited with {service.returncode}:\n{service.log_tail()}"
        assert time.monotonic() < deadline, f"timed out waiting for {what}:\n{services[-1].log_tail()}"
        reader.poll(0.3)
    reader.poll(1.0)  # a moment longer, so that extra sightings would show


def test_three_cameras_give_exactly_the_expected_sightings(
    kafka_bootstrap, topics, sightings_reader, start_sightings, unique_name
):
    stream = plates_stream()
    produce(kafka_bootstrap, topics.plates, stream)
    service = start_sightings()
    wait_for(
        sightings_reader, lambda: len(sightings_reader.records) >= len(EXPECTED), "8 sightings", [service]
    )

    got = sightings(sightings_reader)
    assert {(s.camera_id, s.text): (s.reads, s.direction, s.closed_by) for s in got} == EXPECTED
    assert len(got) == len(EXPECTED)  # one each, nothing else
    assert len({s.sighting_id for s in got}) == len(got)
    for record, sighting in zip(sightings_reader.records, got, strict=True):
        assert record.key == sighting.camera_id.encode()
        assert sighting.format_valid and sighting.best_read.text == sighting.text
        assert sighting.source.topic == topics.plates
        assert sighting.source.partition == CAMERA_PARTITION[sighting.camera_id]
    # A camera's sightings are published in the order its vehicles left (their passes closed).
    for camera in CAMERA_PARTITION:
        records = sorted(
            (r for r in sightings_reader.records if r.key == camera.encode()), key=lambda r: r.offset
        )
        last_seen = [PlateSighting.model_validate_json(r.value).last_seen for r in records]
        assert len(last_seen) > 1 and last_seen == sorted(last_seen)
    first = next(s for s in got if s.text == "A123BC77")
    assert first.first_seen.timestamp() == pytest.approx(T0)
    assert {"A123BC177", "A128BC77"} <= {c.text for c in first.candidates}

    # Everything read is committed, and the service says so on its own endpoints.
    per_partition = {2: -1001, **Counter(partition for partition, _ in stream)}  # nothing on 2
    deadline = time.monotonic() + 30
    group = f"{unique_name}-sightings"
    while (commits := committed_offsets(kafka_bootstrap, group, topics.plates, PARTITIONS)) != per_partition:
        assert time.monotonic() < deadline, commits
        time.sleep(0.5)
    assert service.scrape("/readyz")[0] == 200
    assert service.metric("stream_worker_sightings_events_in_total") == len(stream)
    assert service.metric('stream_worker_sightings_out_total{closed_by="silence"}') == 2
    assert service.stop() == 0


def test_sigkill_mid_stream_then_restart_publishes_every_sighting_with_stable_ids(
    kafka_bootstrap, topics, sightings_reader, start_sightings
):
    """The kill comes with passes open on cam-0 and cam-2, after cam-1's first two passes were
    published; those straddle the commit (cam-2's open pass began during them on their shared
    partition), so the restart must rebuild them from their first reads: published again, with
    their ids. Silence is off here: only the frames' own times close passes, as on a replay."""
    stream = plates_stream({**UNTIL, "cam-2": PASSES[7].end + 3})
    cut = T0 + 4.4  # cam-1's first two passes closed, cam-2's second and cam-0's second open
    first_half = [item for item in stream if item[1].captured_at.timestamp() <= cut]
    produce(kafka_bootstrap, topics.plates, first_half)
    first = start_sightings("--silence-s", "600")
    wait_for(sightings_reader, lambda: len(sightings_reader.records) >= 3, "the first sightings", [first])
    first.stop(signal.SIGKILL)
    before = sightings(sightings_reader)
    assert {"B840CK197", "M777OP777"} <= {s.text for s in before}
    assert "C555CC55" not in {s.text for s in before}, "the kill came too late to test anything"

    produce(kafka_bootstrap, topics.plates, stream[len(first_half) :])
    second = start_sightings("--silence-s", "600")
    wait_for(
        sightings_reader,
        lambda: {(s.camera_id, s.text) for s in sightings(sightings_reader)} >= set(EXPECTED),
        "every sighting",
        [second],
    )
    got = sightings(sightings_reader)
    assert {(s.camera_id, s.text): (s.reads, s.direction) for s in got} == {
        key: value[:2] for key, value in EXPECTED.items()
    }  # full passes only: no tail of a pass became a sighting of its own
    ids: dict[tuple[str, str], set[str]] = defaultdict(set)
    for sighting in got:
        ids[(sighting.camera_id, sighting.text)].add(sighting.sighting_id)
    assert all(len(one) == 1 for one in ids.values()), ids  # duplicates share their id
    twice = sorted(
        text for (_, text), count in Counter((s.camera_id, s.text) for s in got).items() if count > 1
    )
    print(f"\nSIGKILL: {len(before)} sightings before the kill; published twice: {twice}")
    assert {"B840CK197", "M777OP777"} <= set(twice)  # the straddling passes, rebuilt whole
    replays = [line for line in second.log_lines() if line.get("msg") == "partitions assigned"][-1]["replays"]
    assert replays, "the restart replayed nothing before the committed positions"
    assert second.stop() == 0
