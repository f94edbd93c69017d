"""MQTT delivery (notify/mqtt.py) against a real mosquitto: the alert on PREFIX/CAMERA/alert with QoS
1, the last plate retained, Home Assistant discovery retained once per camera, the password from
the environment (never in an error), a broker outage retried until it is back, the SSRF guard."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import orjson

from stream_worker.contracts.notify import parse_target
from stream_worker.launchers.mosquitto import Mosquitto, Subscriber
from stream_worker.notify.mqtt import MqttSender, camera_level, discovery
from stream_worker.notify.rules import EventKind
from tests.notify.receivers import SECRET

ENV = {"MQTT_PASSWORD": SECRET}


def body(alert_id: str, camera: str = "gate-1", plate: str = "B840CK197") -> bytes:
    stamp = datetime.now(UTC).isoformat()
    return orjson.dumps({"alert_id": alert_id, "camera_id": camera, "plate": plate, "alerted_at": stamp})


def target(port: int, **extra: object):
    return parse_target(
        {
            "type": "mqtt",
            "host": "127.0.0.1",
            "port": port,
            "username": "notify",
            "password": "${MQTT_PASSWORD}",
            "timeout_s": 2,
            **extra,
        }
    )


def wait_for(condition, what: str, timeout_s: float = 20) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def test_alert_last_plate_and_discovery(broker: Mosquitto) -> None:
    subscriber = Subscriber(broker.port, ["stream-worker/#", "homeassistant/#"], "reader", "reader")
    sender = MqttSender("home", allow_private=True, secrets=ENV)
    try:
        assert sender.send(target(broker.port), "a-1", body("a-1")).ok
        assert sender.send(target(broker.port), "a-2", body("a-2", plate="A123BC77")).ok
        assert sender.send(target(broker.port), "a-3", body("a-3", camera="yard/north #2")).ok
        wait_for(lambda: len(subscriber.messages) >= 8, "not every message arrived")
    finally:
        sender.close()
        subscriber.close()
    alerts = subscriber.on("stream-worker/gate-1/alert")
    assert [orjson.loads(m.payload)["alert_id"] for m in alerts] == ["a-1", "a-2"]
    assert all(m.qos == 1 and not m.retain for m in alerts)
    assert subscriber.on(f"stream-worker/{camera_level('yard/north #2')}/alert")
    configs = [m for m in subscriber.messages if m.topic.startswith("homeassistant/")]
    assert len(configs) == 2  # once per camera
    topic, config = discovery(target(broker.port), "gate-1")
    assert topic in {m.topic for m in configs}
    assert orjson.loads(config)["state_topic"] == "stream-worker/gate-1/last_plate"

    # A subscriber that comes later gets the retained last plate of each camera and the discovery.
    late = Subscriber(broker.port, ["stream-worker/+/last_plate", "homeassistant/#"], "reader", "reader")
    try:
        wait_for(lambda: len(late.messages) >= 4, "the retained messages did not come")
    finally:
        late.close()
    [last] = late.on("stream-worker/gate-1/last_plate")
    assert last.retain and orjson.loads(last.payload)["plate"] == "A123BC77"


def test_an_overstay_goes_to_its_entry_cameras_overstay_topic(broker: Mosquitto) -> None:
    subscriber = Subscriber(broker.port, ["stream-worker/#"], "reader", "reader")
    sender = MqttSender("home", allow_private=True, secrets=ENV)
    visit = {"event_id": "o-1", "event": "overstay", "entry_camera_id": "gate-in", "site": "depot"}
    try:
        assert sender.send(target(broker.port), "o-1", orjson.dumps(visit), EventKind.OVERSTAY).ok
        wait_for(lambda: subscriber.messages, "the overstay did not arrive")
    finally:
        sender.close()
        subscriber.close()
    [message] = subscriber.messages
    assert (message.topic, message.qos, message.retain) == ("stream-worker/gate-in/overstay", 1, False)
    assert orjson.loads(message.payload) == visit


def test_a_wrong_password_is_final_and_never_echoed(broker: Mosquitto) -> None:
    sender = MqttSender("home", allow_private=True, secrets={"MQTT_PASSWORD": "wrong " + SECRET})
    try:
        attempt = sender.send(target(broker.port), "a-1", body("a-1"))
    finally:
        sender.close()
    assert (attempt.ok, attempt.retry) == (False, False)
    assert "refused" in (attempt.error or "") and "s3cret" not in (attempt.error or "")


def test_a_broker_outage_is_retried_until_it_is_back(broker: Mosquitto) -> None:
    sender = MqttSender("home", allow_private=True, secrets=ENV)
    try:
        assert sender.send(target(broker.port), "a-1", body("a-1")).ok
        broker.stop()
        down = sender.send(target(broker.port), "a-2", body("a-2"))
        assert (down.ok, down.retry) == (False, True)
        assert "s3cret" not in (down.error or "")
        broker.start()
        subscriber = Subscriber(broker.port, ["stream-worker/gate-1/alert"], "reader", "reader")
        try:
            wait_for(
                lambda: sender.send(target(broker.port), "a-2", body("a-2")).ok, "never delivered again", 30
            )
            wait_for(lambda: subscriber.on("stream-worker/gate-1/alert"), "the alert did not arrive")
        finally:
            subscriber.close()
    finally:
        sender.close()


def test_a_private_broker_is_refused_without_the_flag(broker: Mosquitto) -> None:
    attempt = MqttSender("home", allow_private=False, secrets=ENV).send(
        target(broker.port), "a-1", body("a-1")
    )
    assert (attempt.ok, attempt.retry) == (False, False)
    assert "--allow-private-targets" in (attempt.error or "")
