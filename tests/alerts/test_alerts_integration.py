"""Acceptance tests of `stream-worker alerts` against the real local broker: PlateEvents published
by the test (no Triton), the service as a subprocess (so that it can be SIGKILLed), an independent
reader of the alerts topic."""

from __future__ import annotations

import signal
import threading
import time
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime

import pytest
from confluent_kafka import Producer
from pipeline_services import alerts, entry
from plate_events import T0, Pass, plate, plate_event, timeline
from service_processes import WAIT_S, ServiceProcess, TopicReader, committed_offsets

from stream_worker.contracts import AlertOrigin, PlateEvent
from stream_worker.contracts.alerts import MatchKind
from stream_worker.launchers.broker import create_topics
from stream_worker.watchlists.topic import write_changes

pytestmark = pytest.mark.integration

PARTITIONS = 3


@dataclass
class Topics:
    plates: str
    alerts: str
    watchlist: str
    sightings: str


@pytest.fixture
def topics(kafka_bootstrap: str, unique_name: str) -> Topics:
    names = Topics(*(f"{unique_name}-{kind}" for kind in ("plates", "alerts", "watchlist", "sightings")))
    create_topics(kafka_bootstrap, [names.plates, names.alerts, names.sightings], PARTITIONS)
    return names


@pytest.fixture
def alerts_reader(kafka_bootstrap: str, topics: Topics):
    reader = TopicReader(kafka_bootstrap, topics.alerts, PARTITIONS)
    yield reader
    reader.close()


@pytest.fixture
def start_alerts(start_service, topics: Topics, unique_name: str):
    def start(*extra: str) -> ServiceProcess:
        return start_service(
            "alerts", "alerts started",
            "--input-topic", topics.plates,
            "--output-topic", topics.alerts,
            "--watchlist-topic", topics.watchlist,
            "--sightings-topic", topics.sightings,
            "--sightings-group-id", f"{unique_name}-sightings-group",
            *extra,
        )  # fmt: skip

    return start


def wait_metric(service: ServiceProcess, sample: str, value: float) -> None:
    deadline = time.monotonic() + 30
    while service.metric(sample) != value:
        assert time.monotonic() < deadline, f"{sample} != {value}:\n{service.log_tail()}"
        time.sleep(0.2)


def produce(bootstrap: str, topic: str, events: list[tuple[int, PlateEvent]]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for partition, event in events:
        producer.produce(topic, value=event.to_json(), key=event.camera_id.encode(), partition=partition)
        producer.poll(0)
    assert producer.flush(60) == 0


def one_pass(
    camera: str, text: str, start: float, frames: int = 8, first_offset: int = 0
) -> list[PlateEvent]:
    return [
        plate_event(
            camera, start + 0.2 * k, [plate(text, (400, 300, 500, 330))], frame_offset=first_offset + k
        )
        for k in range(frames)
    ]


def test_one_fuzzy_alert_per_pass_within_two_seconds(kafka_bootstrap, topics, alerts_reader, start_alerts):
    write_changes(kafka_bootstrap, topics.watchlist, [entry("B840CK197")])
    service = start_alerts()
    service.wait_ready(WAIT_S)
    assert service.metric("stream_worker_alerts_watchlist_size") == 1

    events = [(0, e) for e in one_pass("gate-1", "B840OK197", T0)]
    events += [
        (1, e) for e in one_pass("gate-2", "A123BC77", T0) + one_pass("gate-2", "X999YX99", T0 + 5, 8, 8)
    ]
    published = time.monotonic()
    produce(kafka_bootstrap, topics.plates, events)
    while not alerts_reader.records:
        assert time.monotonic() - published < 2.0, f"no alert within 2 s:\n{service.log_tail()}"
        alerts_reader.poll(0.05)
    assert time.monotonic() - published < 2.0
    alerts_reader.poll(5.0)  # the pass has ended (gap, silence): nothing else comes

    [alert] = alerts(alerts_reader)
    assert (alert.camera_id, alert.plate, alert.list) == ("gate-1", "B840CK197", "stolen")
    assert (alert.match_kind, alert.distance, alert.candidate) == (MatchKind.FUZZY, 0.5, "B840OK197")
    assert alert.source.topic == topics.plates and (alert.source.partition, alert.source.offset) == (0, 0)
    assert alert.frame_id == "gate-1/0"
    assert alerts_reader.records[0].key == b"gate-1"
    assert service.metric('stream_worker_alerts_out_total{kind="fuzzy",list="stolen",origin="read"}') == 1
    assert service.stop() == 0


def test_watch_list_changes_apply_without_a_restart(kafka_bootstrap, topics, alerts_reader, start_alerts):
    write_changes(kafka_bootstrap, topics.watchlist, [entry("X001XX99")])
    service = start_alerts()
    service.wait_ready(WAIT_S)
    size = "stream_worker_alerts_watchlist_size"

    produce(kafka_bootstrap, topics.plates, [(0, e) for e in one_pass("gate-1", "A123BC77", T0)])
    alerts_reader.poll(2.0)
    assert alerts_reader.records == []  # not on the list yet

    write_changes(kafka_bootstrap, topics.watchlist, [entry("A123BC77", "residents")])
    wait_metric(service, size, 2)
    produce(kafka_bootstrap, topics.plates, [(0, e) for e in one_pass("gate-1", "A123BC77", T0 + 10, 8, 8)])
    deadline = time.monotonic() + 10
    while not alerts_reader.records:
        assert time.monotonic() < deadline, service.log_tail()
        alerts_reader.poll(0.2)
    [added] = alerts(alerts_reader)
    assert (added.plate, added.list, added.match_kind, added.frame_id) == (
        "A123BC77",
        "residents",
        MatchKind.EXACT,
        "gate-1/8",
    )

    write_changes(kafka_bootstrap, topics.watchlist, removals=["A123BC77"])
    wait_metric(service, size, 1)
    produce(kafka_bootstrap, topics.plates, [(0, e) for e in one_pass("gate-1", "A123BC77", T0 + 20, 8, 16)])
    alerts_reader.poll(4.0)
    assert len(alerts_reader.records) == 1  # removed: no more alerts
    assert service.stop() == 0


# --- sightings ---------------------------------------------------------------------------------------


def test_a_sighting_alerts_once_where_no_read_did_and_never_for_an_alerted_pass(
    kafka_bootstrap, topics, alerts_reader, start_alerts, unique_name
):
    from tests.alerts.test_sightings import sighting

    write_changes(kafka_bootstrap, topics.watchlist, [entry("B840CK197")])
    service = start_alerts()
    service.wait_ready(WAIT_S)
    # gate-1's reads match (a read alert); gate-2's never do, its voted sighting's 2nd candidate does.
    produce(
        kafka_bootstrap,
        topics.plates,
        [(0, e) for e in one_pass("gate-1", "B840OK197", T0)]
        + [(1, e) for e in one_pass("gate-2", "B840HH197", T0)],
    )
    deadline = time.monotonic() + 30
    while not alerts_reader.records:
        assert time.monotonic() < deadline, service.log_tail()
        alerts_reader.poll(0.1)

    # The alerted pass's sighting: its best read is not confident, so only the memory knows the pass.
    confirming = sighting(("B840OK197", 0.8), topic=topics.plates, best_confidence=0.2, first=0, last=7)
    fresh = sighting(
        ("B840HH197", 0.6),
        ("B840OK197", 0.3),
        camera="gate-2",
        partition=1,
        topic=topics.plates,
        first=0,
        last=7,
    )
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "linger.ms": 0})
    for partition, value in ((0, confirming.to_json()), (1, fresh.to_json()), (1, b"not a sighting")):
        producer.produce(topics.sightings, value=value, key=b"gate", partition=partition)
    assert producer.flush(30) == 0
    deadline = time.monotonic() + 30
    while len(alerts_reader.records) < 2:
        assert time.monotonic() < deadline, service.log_tail()
        alerts_reader.poll(0.1)
    wait_metric(service, "stream_worker_alerts_sightings_in_total", 3)
    alerts_reader.poll(3.0)  # nothing else comes

    read, from_sighting = sorted(alerts(alerts_reader), key=lambda alert: alert.origin != AlertOrigin.READ)
    assert (read.origin, read.camera_id, read.sighting_id) == (AlertOrigin.READ, "gate-1", None)
    assert (from_sighting.origin, from_sighting.sighting_id) == (AlertOrigin.SIGHTING, fresh.sighting_id)
    assert (from_sighting.camera_id, from_sighting.plate, from_sighting.candidate_rank) == (
        "gate-2",
        "B840CK197",
        1,
    )
    assert (from_sighting.candidate, from_sighting.distance) == ("B840OK197", 0.5)
    assert from_sighting.frame_id == fresh.best_read.frame_id
    assert sorted(record.key for record in alerts_reader.records) == [b"gate-1", b"gate-2"]
    assert service.metric("stream_worker_alerts_sightings_confirmed_total") == 1
    assert service.metric("stream_worker_alerts_invalid_sightings_total") == 1
    assert service.metric('stream_worker_alerts_out_total{kind="fuzzy",list="stolen",origin="sighting"}') == 1
    assert service.metric('stream_worker_alerts_out_total{kind="fuzzy",list="stolen",origin="read"}') == 1
    assert service.stop() == 0
    # Every sighting is committed past, its alert acknowledged (the invalid record too).
    committed = committed_offsets(
        kafka_bootstrap, f"{unique_name}-sightings-group", topics.sightings, PARTITIONS
    )
    assert (committed[0], committed[1]) == (1, 2)


def test_a_sighting_read_before_its_reads_waits_for_them_and_their_alert_is_the_only_one(
    kafka_bootstrap, topics, alerts_reader, start_alerts
):
    """A backlog after an outage: the sighting of a pass is there before its reads. Decided at once,
    its unconfident best read and the empty memory would make it alert, and its reads after it."""
    from tests.alerts.test_sightings import sighting

    write_changes(kafka_bootstrap, topics.watchlist, [entry("B840CK197")])
    early = sighting(("B840OK197", 0.8), topic=topics.plates, best_confidence=0.2, first=0, last=7)
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "linger.ms": 0})
    producer.produce(topics.sightings, value=early.to_json(), key=b"gate-1", partition=0)
    assert producer.flush(30) == 0
    service = start_alerts()
    service.wait_ready(WAIT_S)
    wait_metric(service, "stream_worker_alerts_sightings_waiting", 1)
    produce(kafka_bootstrap, topics.plates, [(0, e) for e in one_pass("gate-1", "B840OK197", T0)])
    wait_metric(service, "stream_worker_alerts_sightings_waiting", 0)
    alerts_reader.poll(3.0)
    [alert] = alerts(alerts_reader)
    assert (alert.origin, alert.camera_id, alert.frame_id) == (AlertOrigin.READ, "gate-1", "gate-1/0")
    assert service.metric("stream_worker_alerts_sightings_confirmed_total") == 1
    assert service.metric("stream_worker_alerts_sightings_waited_out_total") == 0
    assert service.stop() == 0


def read_a_pass_then_stop(
    bootstrap: str, topics: Topics, start_alerts, group: str, partition: int, camera: str, text: str
) -> None:
    """A service reads one pass of 8 reads on `partition`, commits past it (once it ended) and stops."""
    service = start_alerts()
    service.wait_ready(WAIT_S)
    produce(bootstrap, topics.plates, [(partition, e) for e in one_pass(camera, text, T0)])
    deadline = time.monotonic() + 30
    while committed_offsets(bootstrap, group, topics.plates, PARTITIONS)[partition] != 8:
        assert time.monotonic() < deadline, service.log_tail()
        time.sleep(0.2)
    assert service.stop() == 0


def test_after_a_restart_a_sighting_of_reads_already_committed_is_decided_at_once(
    kafka_bootstrap, topics, alerts_reader, start_alerts, unique_name
):
    """The reads of gate-2's pass (never matching) were consumed and committed before a restart;
    its sighting comes after it. The committed position says those reads will not come again, so
    the sighting alerts at once instead of waiting --sighting-wait-s (30 s) for them."""
    from tests.alerts.test_sightings import sighting

    write_changes(kafka_bootstrap, topics.watchlist, [entry("B840CK197")])
    read_a_pass_then_stop(
        kafka_bootstrap, topics, start_alerts, f"{unique_name}-alerts", 1, "gate-2", "B840HH197"
    )

    fresh = sighting(
        ("B840HH197", 0.6), ("B840OK197", 0.3), camera="gate-2", partition=1, topic=topics.plates, last=7
    )
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "linger.ms": 0})
    producer.produce(topics.sightings, value=fresh.to_json(), key=b"gate-2", partition=1)
    assert producer.flush(30) == 0
    second = start_alerts()
    second.wait_ready(WAIT_S)
    deadline = time.monotonic() + 10
    while not alerts_reader.records:
        assert time.monotonic() < deadline, f"no alert within 10 s:\n{second.log_tail()}"
        alerts_reader.poll(0.1)
    [alert] = alerts(alerts_reader)
    assert (alert.origin, alert.sighting_id) == (AlertOrigin.SIGHTING, fresh.sighting_id)
    assert second.metric("stream_worker_alerts_sightings_waited_out_total") == 0
    assert second.stop() == 0


def test_read_alerts_of_an_earlier_run_and_of_another_replica_confirm_their_sightings(
    kafka_bootstrap, topics, alerts_reader, start_alerts, unique_name
):
    """The memory of alerted passes starts empty after a restart and knows nothing of another
    replica's passes; the alerts read back from the alerts topic fill it (history.py). Each
    sighting here has an unconfident best read, so only the memory can say its pass alerted."""
    from tests.alerts.test_passes import Driver
    from tests.alerts.test_sightings import sighting

    write_changes(kafka_bootstrap, topics.watchlist, [entry("B840CK197")])
    read_a_pass_then_stop(
        kafka_bootstrap, topics, start_alerts, f"{unique_name}-alerts", 0, "gate-1", "B840OK197"
    )
    alerts_reader.poll(1.0)
    assert len(alerts_reader.records) == 1

    producer = Producer({"bootstrap.servers": kafka_bootstrap, "linger.ms": 0})
    earlier = sighting(("B840OK197", 0.8), topic=topics.plates, best_confidence=0.2, first=0, last=7)
    producer.produce(topics.sightings, value=earlier.to_json(), key=b"gate-1", partition=0)
    assert producer.flush(30) == 0
    second = start_alerts("--sighting-wait-s", "1")
    second.wait_ready(WAIT_S)
    wait_metric(second, "stream_worker_alerts_sightings_confirmed_total", 1)
    assert second.metric("stream_worker_alerts_history_remembered_total") == 1

    # Another replica's read alert for plates partition 2, then its pass's sighting. This service
    # reads partition 2 as well but none of its reads (there are none): the sighting waits 1 s.
    [theirs] = Driver(partitions=(2,)).feed("gate-3", T0, "B840OK197", partition=2)
    source = theirs.alert.source.model_copy(update={"topic": topics.plates})
    other = theirs.alert.model_copy(update={"source": source, "alerted_at": datetime.now(UTC)})
    producer.produce(topics.alerts, value=other.to_json(), key=b"gate-3", partition=1)
    assert producer.flush(30) == 0
    wait_metric(second, "stream_worker_alerts_history_remembered_total", 2)
    later = sighting(
        ("B840OK197", 0.8), camera="gate-3", partition=2, topic=topics.plates, best_confidence=0.2, last=7
    )
    producer.produce(topics.sightings, value=later.to_json(), key=b"gate-3", partition=2)
    assert producer.flush(30) == 0
    wait_metric(second, "stream_worker_alerts_sightings_confirmed_total", 2)
    alerts_reader.poll(2.0)
    assert [alert.origin for alert in alerts(alerts_reader)] == [AlertOrigin.READ, AlertOrigin.READ]
    assert second.stop() == 0


# --- SIGKILL ----------------------------------------------------------------------------------------

CAMERA_PARTITION = {"gate-1": 0, "gate-2": 0, "gate-3": 1}
KILL_PASSES = [
    Pass("gate-1", "B840OK197", T0, frames=8),
    Pass("gate-1", "A123BC77", T0 + 6.0, frames=10),
    Pass("gate-1", "B840CK197", T0 + 12.0, frames=8),
    Pass("gate-2", "A123BC77", T0 + 1.0, frames=15),
    Pass("gate-2", "B840CK197", T0 + 9.0, frames=12),
    Pass("gate-3", "B840CK197", T0 + 2.0, frames=8),
    Pass("gate-3", "A123BC77", T0 + 8.0, frames=10),
    Pass("gate-3", "X999YX99", T0 + 13.0, frames=5),  # on no list
]
WATCHED = {"B840OK197": "B840CK197", "A123BC77": "A123BC77", "B840CK197": "B840CK197"}


def kill_stream() -> tuple[list[tuple[int, PlateEvent]], set[tuple[str, str, str]]]:
    """(partition, event) in capture order, and the expected (camera, entry, first frame) alerts."""
    stream, expected = [], set()
    for camera, partition in CAMERA_PARTITION.items():
        events = timeline(KILL_PASSES, camera, until=T0 + 18)
        stream += [(partition, e) for e in events]
        for vehicle in KILL_PASSES:
            if vehicle.camera_id == camera and vehicle.text in WATCHED:
                first = next(e for e in events if abs(e.captured_at.timestamp() - vehicle.start) < 1e-6)
                expected.add((camera, WATCHED[vehicle.text], first.frame_id))
    stream.sort(key=lambda item: (item[1].captured_at, item[1].camera_id))
    return stream, expected


def paced(bootstrap: str, topic: str, stream: list[tuple[int, PlateEvent]], speed: float = 2.0) -> None:
    """Publish at `speed` times the capture rate, as live cameras (and a worker) would."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    start = time.monotonic()
    first = stream[0][1].captured_at.timestamp()
    for partition, event in stream:
        due = start + (event.captured_at.timestamp() - first) / speed
        while (wait := due - time.monotonic()) > 0:
            producer.poll(min(wait, 0.05))
        producer.produce(topic, value=event.to_json(), key=event.camera_id.encode(), partition=partition)
        producer.poll(0)
    assert producer.flush(60) == 0


def test_sigkill_mid_stream_then_restart_publishes_every_alert_with_stable_ids(
    kafka_bootstrap, topics, alerts_reader, start_alerts
):
    write_changes(kafka_bootstrap, topics.watchlist, [entry("B840CK197"), entry("A123BC77", "residents")])
    stream, expected = kill_stream()
    first = start_alerts()
    first.wait_ready(WAIT_S)
    producer = threading.Thread(target=paced, args=(kafka_bootstrap, topics.plates, stream), daemon=True)
    producer.start()
    deadline = time.monotonic() + 30
    while len(alerts_reader.records) < 3:
        assert time.monotonic() < deadline, first.log_tail()
        alerts_reader.poll(0.1)
    first.stop(signal.SIGKILL)
    before = len(alerts_reader.records)
    assert producer.is_alive(), "the kill came after the whole stream: nothing to test"
    producer.join(60)

    second = start_alerts()
    deadline = time.monotonic() + WAIT_S
    while {(a.camera_id, a.plate, a.frame_id) for a in alerts(alerts_reader)} < expected:
        assert second.is_running(), second.log_tail()
        assert time.monotonic() < deadline, second.log_tail()
        alerts_reader.poll(0.3)
    alerts_reader.poll(4.0)  # a moment longer, so that extra alerts would show

    got = alerts(alerts_reader)
    ids: dict[tuple[str, str, str], set[str]] = defaultdict(set)
    for alert in got:
        ids[(alert.camera_id, alert.plate, alert.frame_id)].add(alert.alert_id)
    assert set(ids) == expected  # every pass alerted, nothing else (no tail of a pass alerted)
    assert all(len(one) == 1 for one in ids.values()), ids  # duplicates share their id
    print(f"\nSIGKILL: {before} alerts before the kill, {len(got)} in all, {len(expected)} passes")
    assert second.stop() == 0
