"""`stream-worker bench notify`: alerts delivered to a local webhook by `stream-worker notify`.

`--alerts` PlateAlerts (default 1,000) are published at once to an alerts topic of the local
broker (or `--bootstrap-servers`); the service, run as its own process as production runs it,
POSTs each, signed, to one webhook target served by this process (a threaded HTTP server on
127.0.0.1, so the service runs with --allow-private-targets). Measured: deliveries per second
from the first alert published to the last delivery received, the latency of each delivery from
its alert's alerted_at (set when published) to its arrival (p50/p99), and the notify process's CPU
ms per delivery over the same span. The load average before the run goes in the table and the
JSON report; a busy machine is refused unless --allow-busy.
"""

from __future__ import annotations

import argparse
import http.server
import os
import tempfile
import threading
import time
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from confluent_kafka import Producer

from bench import environment
from bench.cpu import process_cpu_s
from bench.report import format_table, latency_ms, write_json
from stream_worker.contracts import Box, PlateAlert, Source
from stream_worker.contracts.alerts import MatchKind
from stream_worker.contracts.notify import parse_target
from stream_worker.launchers.broker import LocalBroker, create_topics
from stream_worker.launchers.service import ServiceChild, ServiceStartError
from stream_worker.notify.targets import write_target

PARTITIONS = 3
SECRET_ENV = "BENCH_NOTIFY_SECRET"
COLUMNS = ("alerts", "delivered", "deliveries_per_s", "p50_ms", "p99_ms", "cpu_ms_per_delivery", "load_1m")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="stream-worker bench notify", description=__doc__.split("\n\n")[0])
    p.add_argument("--alerts", type=int, default=1000, help="Alerts published (and deliveries awaited).")
    p.add_argument(
        "--bootstrap-servers", default=None, help="Use this broker instead of starting the local one."
    )
    p.add_argument("--timeout-s", type=float, default=300.0, help="Give up when not all delivered by then.")
    p.add_argument("--report", type=Path, default=None, help="Write the JSON report here.")
    p.add_argument("--allow-busy", action="store_true", help=environment.ALLOW_BUSY_HELP)
    return p


class Receiver:
    """The webhook: each event id's first arrival time."""

    def __init__(self) -> None:
        self.arrived: dict[str, float] = {}
        self.lock = threading.Lock()
        self.all_in = threading.Event()
        self.expected = 0

    def handler(self) -> type[http.server.BaseHTTPRequestHandler]:
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers["Content-Length"]))
                now = time.time()
                with receiver.lock:
                    receiver.arrived.setdefault(self.headers["X-Stream-Worker-Event"], now)
                    if len(receiver.arrived) >= receiver.expected:
                        receiver.all_in.set()
                self.send_response(204)
                self.end_headers()

            def log_message(self, *_args: object) -> None:
                pass

        return Handler


def make_alerts(count: int) -> list[PlateAlert]:
    now = datetime.now(UTC)
    return [
        PlateAlert(
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
            source=Source(topic="plates", partition=0, offset=k),
            frame_source=Source(topic="frames", partition=0, offset=k),
            alerted_at=now,
        )
        for k in range(count)
    ]


def run(args: argparse.Namespace, bootstrap: str, folder: Path) -> dict[str, Any]:
    name = f"bench-notify-{uuid.uuid4().hex[:8]}"
    alerts_topic, dlq = f"{name}-alerts", f"{name}-dlq"
    create_topics(bootstrap, [alerts_topic, dlq], PARTITIONS)
    receiver = Receiver()
    receiver.expected = args.alerts
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), receiver.handler())
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/hook"
    target = parse_target({"type": "webhook", "url": url, "secret": f"${{{SECRET_ENV}}}"})
    write_target(bootstrap, "bench", target, f"{name}-targets")
    flags = {
        "--bootstrap-servers": bootstrap,
        "--group-id": f"{name}-group",
        "--input-topic": alerts_topic,
        "--targets-topic": f"{name}-targets",
        "--dlq-topic": dlq,
        "--sightings-topic": f"{name}-sightings",
        "--sightings-group-id": f"{name}-sightings-group",
        "--watchlist-topic": f"{name}-watchlist",
        "--metrics-port": "0",
    }
    args_list = [part for flag, value in flags.items() for part in (flag, value)]
    service = ServiceChild("notify", [*args_list, "--allow-private-targets"], folder / "notify.log")
    os.environ.setdefault(SECRET_ENV, "bench secret/with a slash")  # the child inherits it
    try:
        service.start()
        service.wait_ready(120)
        pid = service.process.pid if service.process else 0
        alerts = make_alerts(args.alerts)
        producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
        cpu_before, started = process_cpu_s(pid), time.time()
        for k, alert in enumerate(alerts):
            producer.produce(alerts_topic, value=alert.to_json(), partition=k % PARTITIONS)
            producer.poll(0)
        producer.flush(60)
        receiver.all_in.wait(args.timeout_s)
        with receiver.lock:
            arrived = dict(receiver.arrived)
        finished = max(arrived.values(), default=started)
        cpu_s = process_cpu_s(pid) - cpu_before
    finally:
        service.stop()
        server.shutdown()
        server.server_close()
    sent_at = {alert.alert_id: alert.alerted_at.timestamp() for alert in alerts}
    latencies = [arrived[i] - sent_at[i] for i in arrived if i in sent_at]
    span_s = max(finished - started, 1e-9)
    return {
        "alerts": args.alerts,
        "delivered": len(arrived),
        "seconds": round(span_s, 3),
        "deliveries_per_s": round(len(arrived) / span_s, 1),
        **latency_ms(latencies),
        "cpu_ms_per_delivery": round(cpu_s * 1000 / max(1, len(arrived)), 3),
    }


def main(argv: Sequence[str]) -> int:
    args = parser().parse_args(list(argv))
    if args.alerts < 1:
        print("error: --alerts must be at least 1")
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
        except ServiceStartError as error:
            print(f"error: {error}")
            return 1
    row = {**result, "load_1m": load[0]}
    print(format_table([row], COLUMNS))
    if args.report is not None:
        report = {
            "scenario": "notify",
            "machine": environment.machine(),
            "versions": environment.versions(),
            "load_average_before": load,
            "busy": busy,
            "settings": {"alerts": args.alerts, "partitions": PARTITIONS},
            "result": result,
        }
        write_json(args.report, report)
    return 0 if result["delivered"] == args.alerts else 1
