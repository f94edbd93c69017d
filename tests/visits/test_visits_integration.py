"""Acceptance tests of `stream-worker visits` against the real local broker: PlateSightings published
by the test straight to the sightings topic (no Triton), two cameras stored as a site's entry and
exit, the service as a subprocess (so that it can be SIGKILLed), an independent reader of the visits
topic; `stream-worker notify` delivering the overstays to a local webhook receiver."""

from __future__ import annotations

import signal
import threading
import time
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest
from confluent_kafka import Producer
from service_processes import TopicReader, committed_offsets, wait_until
from store_records import plate_sighting
from support import serve_http

from stream_worker.cameras.store import write_settings
from stream_worker.contracts import PlateSighting, PlateVisit
from stream_worker.contracts.cameras import CameraSettings
from stream_worker.contracts.notify import parse_target
from stream_worker.contracts.watchlist import WatchEntry, WatchKind
from stream_worker.launchers.broker import create_topics
from stream_worker.notify.secrets import ENV_PREFIX as SECRET_ENV_PREFIX
from stream_worker.notify.targets import write_target
from stream_worker.watchlists.topic import write_changes
from tests.notify.receivers import SECRET, Hook

pytestmark = pytest.mark.integration

PARTITIONS = 3
ENTRY, EXIT = "gate-in", "gate-out"
LETTERS = "ABEKMHOPCTYX"
SECRET_ENV = "VISITS_NOTIFY_SECRET"
ADDED = datetime(2025, 1, 1, tzinfo=UTC)


@dataclass
class Topics:
    sightings: str
    visits: str
    cameras: str
    watchlist: str


@pytest.fixture
def topics(kafka_bootstrap: str, unique_name: str) -> Topics:
    names = Topics(*(f"{unique_name}-{kind}" for kind in ("sightings", "visits", "cameras", "watchlist")))
    create_topics(kafka_bootstrap, [names.sightings, names.visits], PARTITIONS)
    for camera, role in ((ENTRY, "entry"), (EXIT, "exit")):
        settings = CameraSettings.model_validate({"site": {"name": "depot", "role": role}})
        write_settings(kafka_bootstrap, camera, settings, names.cameras)
    return names


@pytest.fixture
def visits_reader(kafka_bootstrap: str, topics: Topics):
    reader = TopicReader(kafka_bootstrap, topics.visits, PARTITIONS)
    yield reader
    reader.close()


@pytest.fixture
def start_visits(start_service, topics: Topics):
    def start(*extra: str):
        return start_service(
            "visits", "visits started",
            "--input-topic", topics.sightings,
            "--output-topic", topics.visits,
            "--cameras-topic", topics.cameras,
            "--watchlist-topic", topics.watchlist,
            "--overstay-grace-s", "0",
            *extra,
        )  # fmt: skip

    return start


def sighting(name: str, text: str, first_seen: datetime, camera: str) -> PlateSighting:
    return plate_sighting(name, text, last_seen=first_seen + timedelta(seconds=3), camera_id=camera)


def produce(bootstrap: str, topic: str, sightings: list[PlateSighting]) -> None:
    """Each camera on a partition of its own: the entries and the exits are read apart."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for one in sightings:
        partition = 0 if one.camera_id == ENTRY else 1
        producer.produce(topic, value=one.to_json(), key=one.camera_id.encode(), partition=partition)
        producer.poll(0)
    assert producer.flush(60) == 0


def events(reader: TopicReader) -> list[PlateVisit]:
    reader.poll(0.3)
    return [PlateVisit.model_validate_json(record.value) for record in reader.records]


def wait_events(reader: TopicReader, count: int, service) -> list[PlateVisit]:
    wait_until(lambda: len(events(reader)) >= count, f"{count} visit events", service, timeout_s=60)
    reader.poll(1.0)  # and nothing more
    return events(reader)


def test_visits_with_their_dwell_and_one_overstay(kafka_bootstrap, topics, visits_reader, start_visits):
    # Capture times a day ahead: the wall clock never overstays them, only the sightings' own times.
    base = datetime.now(UTC) + timedelta(days=1)
    service = start_visits("--overstay-s", "600", "--exit-wait-s", "2")
    produce(
        kafka_bootstrap,
        topics.sightings,
        [
            sighting("a-in", "A111AA11", base, ENTRY),
            sighting("b-in", "B840CK197", base + timedelta(seconds=10), ENTRY),
            sighting("c-in", "C222CC22", base + timedelta(seconds=20), ENTRY),
        ],
    )
    wait_events(visits_reader, 3, service)
    produce(
        kafka_bootstrap,
        topics.sightings,
        [
            sighting("a-out", "A111AA11", base + timedelta(seconds=120), EXIT),
            sighting("b-out", "B840OK197", base + timedelta(seconds=910), EXIT),  # misread O for C
            sighting("x-out", "X999XX99", base + timedelta(seconds=930), EXIT),  # never entered
        ],
    )
    got = wait_events(visits_reader, 7, service)
    by_plate: dict[str, list[str]] = {}
    for event in got:
        by_plate.setdefault(event.plate, []).append(event.event.value)
    assert by_plate == {
        "A111AA11": ["opened", "closed"],
        "B840CK197": ["opened", "overstay", "closed"],
        "C222CC22": ["opened", "overstay"],
    }
    closed = {event.plate: event for event in got if event.event.value == "closed"}
    assert closed["A111AA11"].dwell_s == 120 and closed["A111AA11"].exit_camera_id == EXIT
    assert closed["B840CK197"].dwell_s == 900 and closed["B840CK197"].exit_text == "B840OK197"
    assert all(event.overstay_s == 600 for event in got if event.event.value == "overstay")
    assert len({event.event_id for event in got}) == len(got)
    assert all(record.key == b"depot" for record in visits_reader.records)
    wait_until(
        lambda: service.metric("stream_worker_visits_unmatched_exits_total") == 1, "unmatched", service
    )


def test_an_exit_read_before_its_entry_waits_for_it(kafka_bootstrap, topics, visits_reader, start_visits):
    base = datetime.now(UTC) - timedelta(minutes=5)
    service = start_visits()
    produce(
        kafka_bootstrap, topics.sightings, [sighting("out", "B840CK197", base + timedelta(seconds=42), EXIT)]
    )
    time.sleep(2)
    assert events(visits_reader) == []
    produce(kafka_bootstrap, topics.sightings, [sighting("in", "B840CK197", base, ENTRY)])
    got = wait_events(visits_reader, 2, service)
    assert [event.event.value for event in got] == ["opened", "closed"] and got[1].dwell_s == 42


def test_sigkill_mid_visits_then_restart_loses_and_duplicates_nothing(
    kafka_bootstrap, topics, visits_reader, start_visits
):
    base = datetime.now(UTC) - timedelta(minutes=30)
    # Each plate at least 1.5 from every other: pairing is fuzzy (--max-distance 1).
    plates = [f"A{index:03d}{LETTERS[index % 12] * 2}77" for index in range(40)]
    entries = [
        sighting(f"in-{i}", plate, base + timedelta(seconds=i), ENTRY) for i, plate in enumerate(plates)
    ]
    exits = [
        sighting(f"out-{i}", plate, base + timedelta(seconds=600 + i), EXIT)
        for i, plate in enumerate(plates)
        if i % 2 == 0
    ]
    # Half the entries, their exits, the other half, theirs: the kill lands among open visits.
    stream = [*entries[:20], *exits[:10], *entries[20:], *exits[10:]]

    def feed() -> None:
        for one in stream:
            produce(kafka_bootstrap, topics.sightings, [one])
            time.sleep(0.2)

    # Every visit overstays its 300 s (by the capture times read, or the wall clock): once each.
    first = start_visits("--overstay-s", "300")
    first.wait_for_log(lambda line: line.get("msg") == "partitions assigned", "an assignment")
    producer = threading.Thread(target=feed, daemon=True)
    producer.start()
    wait_until(lambda: len(events(visits_reader)) >= 15, "visit events before the kill", first, timeout_s=60)
    first.stop(signal.SIGKILL)
    assert producer.is_alive(), "the kill came after the whole stream: nothing to test"
    before = len(events(visits_reader))
    producer.join(60)
    second = start_visits("--overstay-s", "300")
    history = second.wait_for_log(lambda line: line.get("msg") == "visits history read", "the history")
    assert history["events"] > 0 and history["open"] > 0  # killed mid-visit: visits were open
    got = wait_events(visits_reader, 2 * len(entries) + len(exits), second)
    kinds = Counter((event.plate, event.event.value) for event in got)
    expected = (
        Counter({(plate, "opened"): 1 for plate in plates})
        + Counter({(plate, "overstay"): 1 for plate in plates})
        + Counter({(plate, "closed"): 1 for i, plate in enumerate(plates) if i % 2 == 0})
    )
    assert kinds == expected, f"{before} events before the kill"
    assert Counter(event.event_id for event in got).most_common(1)[0][1] == 1
    assert all(event.dwell_s == 600 for event in got if event.event.value == "closed")
    print(f"\nSIGKILL: {before} visit events before the kill, {len(got)} in all")


def test_limits_per_plate_and_list_and_one_overstay_delivered_by_notify(
    kafka_bootstrap, topics, visits_reader, start_visits, start_service, unique_name, monkeypatch
):
    """The plate's own limit (its watch entry), its list's (--list-overstay-s), the site's default;
    each overstay delivered once to the webhook asking for the site's overstays (signed, retried
    under its event id after a 500), none to the target of alerts alone."""
    monkeypatch.setenv(SECRET_ENV_PREFIX + SECRET_ENV, SECRET)
    targets_topic = f"{unique_name}-targets"
    write_changes(
        kafka_bootstrap,
        topics.watchlist,
        [
            WatchEntry(plate="A111AA11", list="deliveries", overstay_s=60, added_at=ADDED),
            WatchEntry(plate="B840CK197", list="deliveries", added_at=ADDED),
            WatchEntry(plate="C222CC22", list="residents", kind=WatchKind.ALLOW, added_at=ADDED),
        ],
    )
    base = datetime.now(UTC) + timedelta(days=1)  # only the sightings' own times overstay
    ops, alerts_only = Hook(fail_first=1), Hook()
    with serve_http(ops.handler()) as ops_port, serve_http(alerts_only.handler()) as alerts_port:
        for name, port, rules in (
            ("ops", ops_port, {"overstays": "only", "sites": ["depot"]}),
            ("gate", alerts_port, {}),
        ):
            url = f"http://127.0.0.1:{port}/hook"
            target = {"type": "webhook", "url": url, "secret": f"${{{SECRET_ENV}}}", "rules": rules}
            write_target(kafka_bootstrap, name, parse_target(target), targets_topic)
        visits = start_visits(
            "--overstay-s",
            "600",
            "--list-overstay-s",
            '{"deliveries": 300, "residents": 0}',
            "--exit-wait-s",
            "2",
        )
        notify = start_service(
            "notify", "notify started",
            "--input-topic", f"{unique_name}-alerts",
            "--sightings-topic", topics.sightings,
            "--sightings-group-id", f"{unique_name}-notify-sightings",
            "--visits-topic", topics.visits,
            "--visits-group-id", f"{unique_name}-notify-visits",
            "--watchlist-topic", topics.watchlist,
            "--targets-topic", targets_topic,
            "--dlq-topic", f"{unique_name}-notify-dlq",
            "--deliveries-topic", f"{unique_name}-notify-deliveries",
            "--tests-topic", f"{unique_name}-notify-tests",
            "--allow-private-targets",
            "--initial-backoff-s", "0.2",
            "--max-backoff-s", "1",
        )  # fmt: skip
        wait_until(lambda: notify.metric("stream_worker_notify_targets") == 2, "targets not read", notify)
        produce(
            kafka_bootstrap,
            topics.sightings,
            [
                sighting("a-in", "A111AA11", base, ENTRY),  # its own limit: 60 s
                sighting("b-in", "B840CK197", base, ENTRY),  # its list's: 300 s
                sighting("c-in", "C222CC22", base, ENTRY),  # a resident: never
                sighting("d-in", "D333DD33", base, ENTRY),  # the default: 600 s
                sighting("a-out", "A111AA11", base + timedelta(seconds=90), EXIT),
                sighting("b-out", "B840OK197", base + timedelta(seconds=200), EXIT),  # within 300
                sighting("c-out", "C222CC22", base + timedelta(seconds=5000), EXIT),
                sighting("d-out", "D333DD33", base + timedelta(seconds=700), EXIT),
            ],
        )
        got = wait_events(visits_reader, 4 + 4 + 2, visits)
        overstays = {event.plate: event for event in got if event.event.value == "overstay"}
        assert {plate: (e.overstay_s, e.list) for plate, e in overstays.items()} == {
            "A111AA11": (60, "deliveries"),
            "D333DD33": (600, None),
        }
        opened = {event.plate: event for event in got if event.event.value == "opened"}
        assert (opened["C222CC22"].overstay_s, opened["C222CC22"].list) == (None, "residents")
        wanted = {event.event_id for event in overstays.values()}
        wait_until(
            lambda: set(ops.acknowledged) == wanted, f"overstays not delivered: {ops.received}", notify
        )
        time.sleep(2)  # and nothing more
        assert notify.metric("stream_worker_notify_visits_in_total") == len(got)
        assert notify.stop() == 0, notify.log_tail()
    # Every visit event settled and committed: the opened and closed ones passed over, not held back.
    committed = committed_offsets(kafka_bootstrap, f"{unique_name}-notify-visits", topics.visits, PARTITIONS)
    assert sum(max(0, offset) for offset in committed.values()) == len(got)
    assert sorted(ops.acknowledged) == sorted(wanted)  # each once
    assert len(ops.received) == len(wanted) + 1 and ops.received[0] == ops.received[1]  # the 500, again
    assert set(ops.kinds) == {"overstay"} and ops.bad_signatures == 0
    for event in overstays.values():
        assert PlateVisit.model_validate(ops.bodies[event.event_id]) == event
    assert alerts_only.received == []
