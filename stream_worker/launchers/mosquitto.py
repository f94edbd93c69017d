"""A local MQTT broker for the notify service's tests and `bench notify`: Debian's mosquitto
(scripts/test-servers.sh installs it) on a free port of 127.0.0.1, with a password file when users are
given; it can be stopped and started again on the same port (a broker outage). And a subscriber
that keeps what it receives, with its arrival time (the benchmark's latency)."""

from __future__ import annotations

import getpass
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import paho.mqtt.client as paho

from stream_worker.launchers.ports import free_port

START_TIMEOUT_S = 30


class MosquittoError(RuntimeError):
    """mosquitto is missing, exited or did not listen in time."""


class Mosquitto:
    def __init__(self, folder: Path, users: dict[str, str] | None = None) -> None:
        binary = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
        if not Path(binary).is_file():
            raise MosquittoError("mosquitto is missing: run scripts/test-servers.sh (as root)")
        self.port = free_port()
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        lines = [f"listener {self.port} 127.0.0.1", f"user {getpass.getuser()}", "persistence false"]
        if users:
            passwords = folder / "passwords"
            passwords.touch(mode=0o600)
            for user, password in users.items():
                subprocess.run(["mosquitto_passwd", "-b", str(passwords), user, password], check=True)
            lines += [f"password_file {passwords}", "allow_anonymous false"]
        else:
            lines.append("allow_anonymous true")
        self.config = folder / "mosquitto.conf"
        self.config.write_text("\n".join(lines) + "\n")
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> Mosquitto:
        log = (self.folder / "mosquitto.log").open("ab")
        self.process = subprocess.Popen(
            ["mosquitto", "-c", str(self.config)], stdout=log, stderr=subprocess.STDOUT
        )
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return self
            except OSError:
                if self.process.poll() is not None:
                    raise MosquittoError(f"mosquitto exited: {self.log()}") from None
                if time.monotonic() > deadline:
                    raise MosquittoError("mosquitto did not listen in time") from None
                time.sleep(0.1)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(10)

    def log(self) -> str:
        return (self.folder / "mosquitto.log").read_text(errors="replace")


@dataclass
class Message:
    topic: str
    payload: bytes
    retain: bool
    qos: int
    arrived_at: float  # time.time() when the subscriber received it


class Subscriber:
    """Subscribed to `topics` (QoS 1) on the broker; `messages` in the order they came, each also
    handed to `on_message` when given (on paho's network thread)."""

    def __init__(
        self,
        port: int,
        topics: list[str],
        username: str | None = None,
        password: str | None = None,
        on_message: Callable[[Message], None] | None = None,
    ):
        self.messages: list[Message] = []
        self._on_each = on_message
        self._lock = threading.Lock()
        self._ready = threading.Event()
        self._client = paho.Client(paho.CallbackAPIVersion.VERSION2, protocol=paho.MQTTv311)
        if username is not None:
            self._client.username_pw_set(username, password)
        self._client.on_connect = lambda client, *_: [client.subscribe(t, qos=1) for t in topics]
        self._client.on_subscribe = lambda *_: self._ready.set()
        self._client.on_message = self._on_message
        self._client.connect("127.0.0.1", port)
        self._client.loop_start()
        if not self._ready.wait(START_TIMEOUT_S):
            self.close()
            raise MosquittoError("the subscriber did not subscribe")

    def _on_message(self, _client: object, _data: object, message: paho.MQTTMessage) -> None:
        received = Message(message.topic, message.payload, bool(message.retain), message.qos, time.time())
        with self._lock:
            self.messages.append(received)
        if self._on_each is not None:
            self._on_each(received)

    def on(self, topic: str) -> list[Message]:
        with self._lock:
            return [m for m in self.messages if m.topic == topic]

    def close(self) -> None:
        self._client.disconnect()
        self._client.loop_stop()
