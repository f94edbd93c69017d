"""MQTT delivery: each alert published (QoS 1) to PREFIX/CAMERA/alert, the camera's last plate
retained on PREFIX/CAMERA/last_plate, and Home Assistant's discovery config (retained) published
once per camera, so that each camera shows up as a sensor of its last plate with no YAML. An
unknown or allowed vehicle (a sighting) goes to PREFIX/CAMERA/unknown_vehicle or allowed_vehicle,
an overstay (a visit) to PREFIX/ENTRY_CAMERA/overstay (the camera its visit was opened by).

One client per target (its lane's), connected on first use and kept; paho's own thread keeps the
connection and reconnects. An attempt is acknowledged once the broker answered each QoS 1 publish
(PUBACK) within the target's timeout; otherwise it is retried by the lane (a duplicate is possible:
at-least-once, the payload carries the alert id). The broker's address is checked by the SSRF guard
(addresses.py); without TLS the client connects to that checked address, with TLS to the host name
(its certificate is verified against it). The password is resolved from the target secrets
(secrets.py) here only.
"""

from __future__ import annotations

import re
import ssl
import threading
import uuid
from collections.abc import Mapping
from pathlib import Path

import orjson
import paho.mqtt.client as paho

from stream_worker.contracts.credentials import redact
from stream_worker.contracts.notify import NotifyTarget
from stream_worker.notify.addresses import TargetRefused
from stream_worker.notify.addresses import resolve as resolve_address
from stream_worker.notify.rules import EventKind
from stream_worker.notify.secrets import MissingSecret, Secrets, resolve
from stream_worker.notify.webhook import MAX_ERROR_CHARS, Attempt

KEEPALIVE_S = 30
_UNSAFE_TOPIC = re.compile(r"[+#/\s]")
_UNSAFE_ID = re.compile(r"[^A-Za-z0-9_-]")


class _Failed(Exception):
    def __init__(self, message: str, retry: bool = True) -> None:
        super().__init__(message)
        self.retry = retry


def camera_level(camera_id: str) -> str:
    """The camera id as one MQTT topic level (no wildcard, no separator, no space)."""
    return _UNSAFE_TOPIC.sub("_", camera_id) or "_"


def discovery(target: NotifyTarget, camera_id: str) -> tuple[str, bytes]:
    """Home Assistant's discovery topic and config of the camera's last-plate sensor."""
    object_id = "stream_worker_" + _UNSAFE_ID.sub("_", camera_id)
    state = f"{target.topics_prefix}/{camera_level(camera_id)}/last_plate"
    config = {
        "name": "Last plate",
        "unique_id": f"{object_id}_last_plate",
        "state_topic": state,
        "value_template": "{{ value_json.plate }}",
        "json_attributes_topic": state,
        "icon": "mdi:car",
        "device": {
            "identifiers": [object_id],
            "name": f"Camera {camera_id}",
            "manufacturer": "stream-worker",
        },
    }
    return f"{target.discovery_prefix}/sensor/{object_id}/last_plate/config", orjson.dumps(config)


class MqttSender:
    def __init__(
        self,
        name: str,
        allow_private: bool,
        ca_file: Path | None = None,
        secrets: Mapping[str, str] | None = None,
    ) -> None:
        self._name = name
        self._allow_private = allow_private
        self._ca_file = ca_file
        self._secret_values = Secrets() if secrets is None else secrets
        self._client: paho.Client | None = None
        self._connected_for: NotifyTarget | None = None
        self._announced: set[str] = set()  # cameras whose discovery config the broker acknowledged
        self._secrets: list[str] = []

    def send(
        self, target: NotifyTarget, event_id: str, body: bytes, kind: EventKind = EventKind.ALERT
    ) -> Attempt:
        try:
            client = self._connect(target)
            event = orjson.loads(body)
            camera = str(event.get("camera_id") or event["entry_camera_id"])  # a visit: its entry's
            level = f"{target.topics_prefix}/{camera_level(camera)}"
            if kind is not EventKind.ALERT:  # PREFIX/CAMERA/unknown_vehicle, allowed_vehicle or overstay
                self._publish(client, f"{level}/{kind.value}", body, False, target.timeout_s)
                return Attempt(True, retry=False)
            if target.discovery_prefix is not None and camera not in self._announced:
                topic, config = discovery(target, camera)
                self._publish(client, topic, config, True, target.timeout_s)
                self._announced.add(camera)
            self._publish(client, f"{level}/alert", body, False, target.timeout_s)
            self._publish(client, f"{level}/last_plate", body, True, target.timeout_s)
        except MissingSecret as error:
            return Attempt(False, retry=True, error=str(error), hold=True)
        except TargetRefused as error:
            return Attempt(False, retry=False, error=str(error)[:MAX_ERROR_CHARS])
        except _Failed as error:
            return Attempt(
                False, retry=error.retry, error=redact(str(error), self._secrets)[:MAX_ERROR_CHARS]
            )
        except (OSError, ValueError, RuntimeError) as error:
            self.close()  # a fresh connection on the next attempt
            text = f"{type(error).__name__}: {error}"
            return Attempt(False, retry=True, error=redact(text, self._secrets)[:MAX_ERROR_CHARS])
        return Attempt(True, retry=False)

    def _connect(self, target: NotifyTarget) -> paho.Client:
        if self._client is not None and self._connected_for == target:
            if not self._client.is_connected():
                raise _Failed("not connected to the broker (reconnecting)")
            return self._client
        self.close()
        host = target.host or ""
        address = resolve_address(host, target.broker_port, self._allow_private)
        client = paho.Client(
            paho.CallbackAPIVersion.VERSION2,
            client_id=f"stream-worker-notify-{self._name}-{uuid.uuid4().hex[:8]}",
            protocol=paho.MQTTv311,
        )
        client.connect_timeout = target.timeout_s
        client.reconnect_delay_set(min_delay=1, max_delay=10)
        if target.username is not None:
            password = None
            if target.password is not None:
                password, self._secrets = resolve(target.password, self._secret_values)
            client.username_pw_set(target.username, password)
        if target.uses_tls:
            client.tls_set_context(
                ssl.create_default_context(cafile=str(self._ca_file) if self._ca_file else None)
            )
        answered = threading.Event()
        refused: list[str] = []

        def on_connect(
            _client: object, _data: object, _flags: object, reason: object, _props: object
        ) -> None:
            if getattr(reason, "is_failure", False):
                refused.append(str(reason))
            answered.set()

        client.on_connect = on_connect
        client.connect(host if target.uses_tls else str(address), target.broker_port, keepalive=KEEPALIVE_S)
        client.loop_start()
        self._client, self._connected_for = client, target
        self._announced = set()
        if not answered.wait(target.timeout_s):
            self.close()
            raise _Failed(f"the broker did not answer the connection within {target.timeout_s:g} s")
        if refused:
            self.close()
            raise _Failed(f"the broker refused the connection: {refused[0]}", retry=False)
        return client

    @staticmethod
    def _publish(client: paho.Client, topic: str, payload: bytes, retain: bool, timeout_s: float) -> None:
        info = client.publish(topic, payload, qos=1, retain=retain)
        if info.rc != paho.MQTT_ERR_SUCCESS:
            raise _Failed(f"publish to {topic} failed: {paho.error_string(info.rc)}")
        info.wait_for_publish(timeout_s)
        if not info.is_published():
            raise _Failed(f"the broker did not acknowledge {topic} within {timeout_s:g} s")

    def close(self) -> None:
        client, self._client, self._connected_for = self._client, None, None
        if client is not None:
            client.disconnect()
            client.loop_stop()
