"""`stream-worker bench notify`: the same alerts delivered by `stream-worker notify` to a webhook,
an MQTT subscriber and an SMTP server at once, all local.

`--alerts` PlateAlerts (default 100) are published to an alerts topic of
the local broker (or `--bootstrap-servers`), paced at `--rate` alerts/s (default 20; 0 publishes
them all at once: `--alerts 1000 --rate 0` for throughput), each with its alerted_at set as it is
published. The service, run as its own process as production runs it (--allow-private-targets:
every receiver is on 127.0.0.1), delivers each to three targets: a webhook served by this process
(each signature checked with the secret; a bad one is counted, not delivered), an MQTT subscriber
(QoS 1) on a local mosquitto, and a local aiosmtpd SMTP server. Measured per target: alerts
delivered, and the latency from each alert's alerted_at to its first arrival at the receiver
(p50/p99/max); for the run: deliveries per second from the first alert published to the last
delivery received, and the notify process's CPU ms per delivery (all targets together: one
process serves them). The load average before the run goes in the table and the JSON report; a
busy machine is refused unless --allow-busy.
"""

from __future__ import annotations

import argparse
import email
import http.server
import os
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
from aiosmtpd.controller import Controller
from confluent_kafka import Producer

from bench import environment
from bench.cpu import process_cpu_s
from bench.report import format_table, latency_ms, write_json
from stream_worker.contracts import Box, PlateAlert, Source
from stream_worker.contracts.alerts import MatchKind
from stream_worker.contracts.notify import parse_target
from stream_worker.contracts.topics import ALERTS, FRAMES, NOTIFY_DLQ, NOTIFY_TARGETS, PLATES
from stream_worker.launchers.broker import LocalBroker, create_topics
from stream_worker.launchers.mosquitto import Mosquitto, MosquittoError, Subscriber
from stream_worker.launchers.ports import free_port
from stream_worker.launchers.service_child import ServiceChild, ServiceStartError
from stream_worker.notify.secrets import ENV_PREFIX as SECRET_ENV_PREFIX
from stream_worker.notify.targets import write_target
from stream_worker.notify.webhook import EVENT_HEADER, SIGNATURE_HEADER, signature

PARTITIONS = 3
SECRET_ENV = "BENCH_NOTIFY_SECRET"
SECRET = "bench secret/with a slash"
MQTT_PREFIX = "bench"
TARGETS = ("webhook", "mqtt", "email")
COLUMNS = ("target", "alerts", "delivered", "p50_ms", "p99_ms", "max_ms", "bad_signatures")
RUN_COLUMNS = ("alerts", "rate", "deliveries", "deliveries_per_s", "cpu_ms_per_delivery", "load_1m")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="stream-worker bench notify", description=__doc__.split("\n\n")[0])
    p.add_argument("--alerts", type=int, default=100, help="Alerts published (each delivered to 3 targets).")
    p.add_argument(
        "--rate", type=float, default=20.0, help="Alerts published per second; 0: all at once (a burst)."
    )
    p.add_argument(
        "--bootstrap-servers", default=None, help="Use this broker instead of starting the local one."
    )
    p.add_argument("--timeout-s", type=float, default=300.0, help="Give up when not all delivered by then.")
    p.add_argument("--report", type=Path, default=None, help="Write the JSON report here.")
    p.add_argument("--allow-busy", action="store_true", help=environment.ALLOW_BUSY_HELP)
    return p


class Arrivals:
    """Each target's first arrival time per alert id, and whether all of them are in."""

    def __init__(self, expected: int) -> None:
        self.expected = expected
        self.by_target: dict[str, dict[str, float]] = {name: {} for name in TARGETS}
        self.bad_signatures = 0
        self.lock = threading.Lock()
        self.all_in = threading.Event()

    def arrived(self, target: str, alert_id: str, at: float) -> None:
        with self.lock:
            self.by_target[target].setdefault(alert_id, at)
            if all(len(seen) >= self.expected for seen in self.by_target.values()):
                self.all_in.set()

    def snapshot(self) -> dict[str, dict[str, float]]:
        with self.lock:
            return {name: dict(seen) for name, seen in self.by_target.items()}


def webhook_handler(arrivals: Arrivals) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            now = time.time()
            if self.headers.get(SIGNATURE_HEADER) == signature(body, SECRET):
                arrivals.arrived("webhook", self.headers[EVENT_HEADER], now)
            else:
                with arrivals.lock:
                    arrivals.bad_signatures += 1
            self.send_response(204)
            self.end_headers()

        def log_message(self, *_args: object) -> None:
            pass

    return Handler


class Mailbox:
    """aiosmtpd's handler: each message's event id and arrival time."""

    def __init__(self, arrivals: Arrivals) -> None:
        self.arrivals = arrivals

    async def handle_DATA(self, _server: object, _session: object, envelope: Any) -> str:
        now = time.time()
        self.arrivals.arrived("email", email.message_from_bytes(envelope.content)[EVENT_HEADER], now)
        return "250 OK"


@contextmanager
def receivers(arrivals: Arrivals, folder: Path) -> Iterator[dict[str, dict[str, Any]]]:
    """The three receivers, running; yields each target's definition."""
    webhook = http.server.ThreadingHTTPServer(("127.0.0.1", 0), webhook_handler(arrivals))
    webhook.daemon_threads = True
    threading.Thread(target=webhook.serve_forever, daemon=True).start()
    mosquitto = Mosquitto(folder / "mosquitto").start()
    subscriber: Subscriber | None = None
    smtp = Controller(Mailbox(arrivals), hostname="127.0.0.1", port=free_port())
    try:
        subscriber = Subscriber(
            mosquitto.port,
            [f"{MQTT_PREFIX}/+/alert"],
            on_message=lambda message: arrivals.arrived(
                "mqtt", orjson.loads(message.payload)["alert_id"], message.arrived_at
            ),
        )
        smtp.start()
        yield {
            "webhook": {
                "type": "webhook",
                "url": f"http://127.0.0.1:{webhook.server_address[1]}/hook",
                "secret": f"${{{SECRET_ENV}}}",
            },
            "mqtt": {
                "type": "mqtt",
                "host": "127.0.0.1",
                "port": mosquitto.port,
                "tls": False,
                "topic_prefix": MQTT_PREFIX,
            },
            "email": {
                "type": "email",
                "host": "127.0.0.1",
                "port": smtp.port,
                "tls": False,
                "sender": "plates@example.com",
                "recipients": ["guard@example.com"],
            },
        }
    finally:
        smtp.stop()
        if subscriber is not None:
            subscriber.close()
        mosquitto.stop()
        webhook.shutdown()
        webhook.server_close()


def make_alert(k: int) -> PlateAlert:
    """Alert `k`, alerted now (its latency is measured from here)."""
    now = datetime.now(UTC)
    return PlateAlert(
        alert_id=str(uuid.uuid4()),
        list="bench",
        label=None,
        plate="B840CK197",
        match_kind=MatchKind.EXACT,
        distance=0.0,
        candidate="B840CK197",
        confidence=0.9,
        camera_id=f"gate-{k % 4}",
        frame_id=f"gate/{k}",
        event_id=f"event-{k}",
        captured_at=now,
        box=Box(x1=400, y1=300, x2=500, y2=330),
        source=Source(topic=PLATES.name, partition=0, offset=k),
        frame_source=Source(topic=FRAMES.name, partition=0, offset=k),
        alerted_at=now,
    )


def publish(bootstrap: str, topic: str, count: int, rate: float) -> dict[str, float]:
    """Publishes `count` alerts at `rate` per second (0: at once); each alert id's alerted_at."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    sent_at: dict[str, float] = {}
    started = time.monotonic()
    for k in range(count):
        if rate > 0:
            time.sleep(max(0.0, started + k / rate - time.monotonic()))
        alert = make_alert(k)
        sent_at[alert.alert_id] = alert.alerted_at.timestamp()
        producer.produce(topic, value=alert.to_json(), partition=k % PARTITIONS)
        producer.poll(0)
    producer.flush(60)
    return sent_at


def run(args: argparse.Namespace, bootstrap: str, folder: Path) -> dict[str, Any]:
    name = f"bench-notify-{uuid.uuid4().hex[:8]}"
    alerts_topic, dlq, targets_topic = (
        f"{name}-{topic.name}" for topic in (ALERTS, NOTIFY_DLQ, NOTIFY_TARGETS)
    )
    create_topics(bootstrap, [alerts_topic, dlq], PARTITIONS)
    arrivals = Arrivals(args.alerts)
    flags = {
        "--bootstrap-servers": bootstrap,
        "--group-id": f"{name}-group",
        "--input-topic": alerts_topic,
        "--targets-topic": targets_topic,
        "--dlq-topic": dlq,
        "--sightings-topic": f"{name}-sightings",
        "--sightings-group-id": f"{name}-sightings-group",
        "--watchlist-topic": f"{name}-watchlist",
        "--metrics-port": "0",
    }
    args_list = [part for flag, value in flags.items() for part in (flag, value)]
    service = ServiceChild("notify", [*args_list, "--allow-private-targets"], folder / "notify.log")
    os.environ[SECRET_ENV_PREFIX + SECRET_ENV] = SECRET  # the child inherits it
    with receivers(arrivals, folder) as definitions:
        for target_name, definition in definitions.items():
            write_target(bootstrap, target_name, parse_target(definition), targets_topic)
        try:
            service.start()
            service.wait_ready(120)
            pid = service.process.pid if service.process else 0
            cpu_before, started = process_cpu_s(pid), time.time()
            sent_at = publish(bootstrap, alerts_topic, args.alerts, args.rate)
            arrivals.all_in.wait(args.timeout_s)
            arrived = arrivals.snapshot()
            cpu_s = process_cpu_s(pid) - cpu_before
        finally:
            service.stop()
    per_target = {
        target: {
            "delivered": len(seen),
            **latency_ms([at - sent_at[i] for i, at in seen.items() if i in sent_at]),
        }
        for target, seen in arrived.items()
    }
    deliveries = sum(len(seen) for seen in arrived.values())
    finished = max((at for seen in arrived.values() for at in seen.values()), default=started)
    span_s = max(finished - started, 1e-9)
    return {
        "alerts": args.alerts,
        "rate": args.rate,
        "targets": per_target,
        "bad_signatures": arrivals.bad_signatures,
        "deliveries": deliveries,
        "seconds": round(span_s, 3),
        "deliveries_per_s": round(deliveries / span_s, 1),
        "cpu_ms_per_delivery": round(cpu_s * 1000 / max(1, deliveries), 3),
    }


def main(argv: Sequence[str]) -> int:
    args = parser().parse_args(list(argv))
    if args.alerts < 1 or args.rate < 0:
        print("error: --alerts must be at least 1 and --rate at least 0")
        return 2
    checked = environment.load_or_refuse(args.allow_busy)
    if checked is None:
        return 2
    load, busy = checked
    with tempfile.TemporaryDirectory(prefix="bench-notify-") as folder:
        try:
            if args.bootstrap_servers:
                result = run(args, args.bootstrap_servers, Path(folder))
            else:
                with LocalBroker() as broker:
                    result = run(args, broker.bootstrap_servers, Path(folder))
        except (ServiceStartError, MosquittoError) as error:
            print(f"error: {error}")
            return 1
    rows = [
        {"target": target, "alerts": args.alerts, **figures, "bad_signatures": None}
        for target, figures in result["targets"].items()
    ]
    rows[0]["bad_signatures"] = result["bad_signatures"]
    print(format_table(rows, COLUMNS))
    print(format_table([{**result, "load_1m": load[0]}], RUN_COLUMNS))
    if args.report is not None:
        report = {
            "scenario": "notify",
            "machine": environment.machine(),
            "versions": environment.versions(),
            "load_average_before": load,
            "busy": busy,
            "settings": {"alerts": args.alerts, "rate": args.rate, "partitions": PARTITIONS},
            "result": result,
        }
        write_json(args.report, report)
    complete = all(figures["delivered"] == args.alerts for figures in result["targets"].values())
    return 0 if complete and result["bad_signatures"] == 0 else 1
