"""Notify end to end, from a real van pass: frames of the sample van (read as
B840OK197; its true text B840CK197 on a watch list) go through `stream-worker run` on the real
Triton, `sightings` and `alerts`, and `stream-worker notify` delivers the alert to three targets at
once: a local webhook (each signature checked with the target's secret; its first answer a 500, so
the retry must carry the same event id), a subscriber on mosquitto (QoS 1 on the camera's topic;
then the retained last plate and Home Assistant's discovery config) and an SMTP server (STARTTLS,
AUTH). One event id everywhere: the alert's on the alerts topic. Every service is its own process.
The 2 s bound (p99 over 100 alerts) is measured by `stream-worker bench notify`, not here."""

from __future__ import annotations

import time

import orjson
import pytest
from pipeline_services import MISREAD, Frame, alerts, entry, produce_frames, start_pipeline
from service_processes import WAIT_S, TopicReader, wait_until
from support import EXPECTED_PLATE, serve_http

from stream_worker.contracts import PlateAlert
from stream_worker.contracts.alerts import MatchKind
from stream_worker.contracts.notify import NotifyTarget, parse_target
from stream_worker.launchers.mosquitto import Subscriber
from stream_worker.notify.mqtt import discovery
from stream_worker.notify.secrets import ENV_PREFIX as SECRET_ENV_PREFIX
from stream_worker.notify.targets import write_target
from stream_worker.watchlists.topic import write_changes
from tests.notify.receivers import SECRET, Hook

pytestmark = pytest.mark.integration

SECRET_ENV = "VAN_NOTIFY_SECRET"  # the one secret of the three targets, in notify's environment
CAMERA = "gate-1"
FRAMES = 3
FRAME_INTERVAL_MS = 200
SILENCE_S = 5.0  # the sightings service closes the van's pass after this (wall clock)
PASS_GAP_S = 4.0
ALERT_TOPIC = f"stream-worker/{CAMERA}/alert"
LAST_PLATE_TOPIC = f"stream-worker/{CAMERA}/last_plate"


def targets(webhook_port: int, mqtt_port: int, smtp_port: int) -> dict[str, NotifyTarget]:
    """The three targets as `notify targets set` stores them: every secret a ${NAME} reference."""
    secret = f"${{{SECRET_ENV}}}"
    definitions = {
        "gate-webhook": {"type": "webhook", "url": f"http://127.0.0.1:{webhook_port}/hook", "secret": secret},
        "home": {
            "type": "mqtt",
            "host": "127.0.0.1",
            "port": mqtt_port,
            "username": "notify",
            "password": secret,
        },
        "guard": {
            "type": "email",
            "host": "localhost",  # the name the SMTP server's certificate is for
            "port": smtp_port,
            "username": "notify",
            "password": secret,
            "sender": "plates@example.com",
            "recipients": ["guard@example.com"],
        },
    }
    return {name: parse_target(definition) for name, definition in definitions.items()}


def test_a_watched_van_pass_reaches_a_webhook_mqtt_and_email_under_the_alerts_event_id(
    kafka_bootstrap,
    triton_url,
    pipeline_topics,
    start_service,
    car_jpeg,
    smtp,
    broker,
    unique_name,
    monkeypatch,
):
    topics = pipeline_topics
    monkeypatch.setenv(SECRET_ENV_PREFIX + SECRET_ENV, SECRET)  # the services inherit it
    smtp_port, inbox, smtp_ca, _controller = smtp
    targets_topic = f"{unique_name}-targets"
    write_changes(kafka_bootstrap, topics.watchlist, [entry(EXPECTED_PLATE, "stolen")])
    hook = Hook(fail_first=1)
    subscriber = Subscriber(broker.port, [ALERT_TOPIC], "reader", "reader")
    alerts_out = TopicReader(kafka_bootstrap, topics.alerts)
    sightings_out = TopicReader(kafka_bootstrap, topics.sightings)
    try:
        with serve_http(hook.handler()) as webhook_port:
            defined = targets(webhook_port, broker.port, smtp_port)
            for name, target in defined.items():
                write_target(kafka_bootstrap, name, target, targets_topic)
            services = start_pipeline(start_service, triton_url, topics, SILENCE_S, PASS_GAP_S)
            notify = start_service(
                "notify", "notify started",
                "--input-topic", topics.alerts,
                "--sightings-topic", topics.sightings,
                "--sightings-group-id", f"{unique_name}-notify-sightings",
                "--watchlist-topic", topics.watchlist,
                "--targets-topic", targets_topic,
                "--dlq-topic", f"{unique_name}-notify-dlq",
                "--deliveries-topic", f"{unique_name}-notify-deliveries",
                "--tests-topic", f"{unique_name}-notify-tests",
                "--allow-private-targets",  # every receiver is on 127.0.0.1
                "--ca-file", str(smtp_ca),  # STARTTLS verified against the test's own CA
                "--initial-backoff-s", "0.2",
                "--max-backoff-s", "1",
            )  # fmt: skip
            services.append(notify)
            for service in services:
                service.wait_ready(WAIT_S)
            wait_until(
                lambda: notify.metric("stream_worker_notify_targets") == 3, "targets not read", services
            )

            first_ms = int(time.time() * 1000) - 60_000
            van = [
                Frame(CAMERA, f"{CAMERA}/{k}", first_ms + k * FRAME_INTERVAL_MS, car_jpeg)
                for k in range(FRAMES)
            ]
            produce_frames(kafka_bootstrap, topics.frames, van)

            # The pass is over once its sighting is out (no later alert for it); then its alert has
            # reached every target.
            def polled(reader: TopicReader) -> bool:
                reader.poll(0.2)
                return bool(reader.records)

            wait_until(
                lambda: polled(sightings_out) and polled(alerts_out), "no sighting and alert", services
            )
            alerts_out.poll(PASS_GAP_S)
            wait_until(
                lambda: hook.acknowledged and subscriber.on(ALERT_TOPIC) and inbox.messages,
                f"not every target got the alert: webhook {hook.received}, "
                f"mqtt {len(subscriber.messages)}, smtp {len(inbox.messages)}",
                services,
            )
            late = Subscriber(broker.port, [LAST_PLATE_TOPIC, "homeassistant/#"], "reader", "reader")
            try:
                wait_until(lambda: len(late.messages) >= 2, "no retained last plate or discovery", services)
            finally:
                late.close()
            for name in defined:
                assert notify.metric(f'stream_worker_notify_sent_total{{target="{name}"}}') == 1, name
            assert notify.metric('stream_worker_notify_retried_total{target="gate-webhook"}') >= 1
            for service in reversed(services):
                assert service.stop() == 0, service.log_tail()
    finally:
        subscriber.close()
        alerts_out.close()
        sightings_out.close()

    [alert] = {a.alert_id: a for a in alerts(alerts_out)}.values()  # one for the pass; the van misread
    assert (alert.camera_id, alert.plate, alert.list) == (CAMERA, EXPECTED_PLATE, "stolen")
    assert (alert.match_kind, alert.candidate) == (MatchKind.FUZZY, MISREAD)
    event_id = alert.alert_id

    # Every delivery, duplicates too (at-least-once), under the alert's id. Webhook: the 500'd first
    # attempt and its retry, each signed with the secret; the body is the alert's contract JSON.
    assert set(hook.received) == {event_id} and len(hook.received) >= 2
    assert set(hook.acknowledged) == {event_id}
    assert hook.bad_signatures == 0
    assert set(hook.kinds) == {"alert"}
    assert PlateAlert.model_validate(hook.bodies[event_id]) == alert

    # MQTT: the alert on the camera's topic at QoS 1; the last plate retained; the camera announced
    # to Home Assistant (retained, as a late subscriber sees them).
    published = subscriber.on(ALERT_TOPIC)
    assert {(orjson.loads(m.payload)["alert_id"], m.qos) for m in published} == {(event_id, 1)}
    [last_plate] = late.on(LAST_PLATE_TOPIC)
    assert last_plate.retain and orjson.loads(last_plate.payload)["alert_id"] == event_id
    config_topic, config = discovery(defined["home"], CAMERA)
    [announced] = late.on(config_topic)
    assert announced.retain and orjson.loads(announced.payload) == orjson.loads(config)

    # E-mail: to the guard, naming the plate, under the alert's id, the alert attached.
    assert {message["X-Stream-Worker-Event"] for _, _, message in inbox.messages} == {event_id}
    sender, recipients, message = inbox.messages[0]
    assert (sender, recipients) == ("plates@example.com", ["guard@example.com"])
    assert message["Subject"] == f"Watch-list alert: {EXPECTED_PLATE} at {CAMERA} (stolen)"
    [attached] = [
        part.get_payload(decode=True) for part in message.walk() if part.get_filename() == "alert.json"
    ]
    assert PlateAlert.model_validate_json(attached) == alert

    assert SECRET not in notify.log_path.read_text()
