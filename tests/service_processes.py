"""A service run as its own process (`python -m stream_worker COMMAND ...`), as production runs it,
and a reader of whole topics: what the integration tests of the worker and of the sightings
service use to start, kill and watch them (importable: pytest's pythonpath has tests/)."""

from __future__ import annotations

import signal
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import orjson
from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

from stream_worker.launchers.service_child import ServiceChild

WAIT_S = 300.0  # generous bound for "eventually"; the CPU Triton is slow and the cores are shared
PARTITIONS = 3


@dataclass
class Record:
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: dict[str, bytes]

    @property
    def event(self) -> dict:
        return orjson.loads(self.value)

    @property
    def dlq_source(self) -> tuple[int, int]:
        return int(self.headers["source.partition"]), int(self.headers["source.offset"])


class TopicReader:
    """Reads a whole topic from the beginning, accumulating records across calls."""

    def __init__(self, bootstrap: str, topic: str, partitions: int = PARTITIONS) -> None:
        self._consumer = Consumer(
            {"bootstrap.servers": bootstrap, "group.id": f"reader-{topic}", "enable.auto.commit": False}
        )
        self._consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        self.records: list[Record] = []

    def poll(self, seconds: float = 0.5) -> None:
        deadline = time.monotonic() + seconds
        while (remaining := deadline - time.monotonic()) > 0:
            for message in self._consumer.consume(500, min(remaining, 0.2)):
                if message.error() is None:
                    self.records.append(
                        Record(
                            message.partition(),
                            message.offset(),
                            message.key(),
                            message.value(),
                            dict(message.headers() or ()),
                        )
                    )

    def close(self) -> None:
        self._consumer.close()


class ServiceProcess(ServiceChild):
    """The service as the integration tests run it: not in its own session, its log appended to,
    its HTTP port read from the start log line (`started`)."""

    def __init__(
        self, args: list[str], log_path: Path, command: str = "run", started: str = "worker started"
    ) -> None:
        super().__init__(command, args, log_path, own_session=False, append_log=True)
        self.started = started  # the log line that carries the metrics port

    def log_tail(self, count: int = 40) -> str:  # type: ignore[override]
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-count:])

    def assignments(self) -> list[list[str]]:
        return [line["partitions"] for line in self.log_lines() if line.get("msg") == "partitions assigned"]

    def wait_for_log(self, predicate: Callable[[dict], bool], what: str) -> dict:
        deadline = time.monotonic() + WAIT_S
        while True:
            for line in self.log_lines():
                if predicate(line):
                    return line
            assert self.is_running(), f"{self.command} exited with {self.returncode}:\n{self.log_tail()}"
            assert time.monotonic() < deadline, f"no log line for {what}:\n{self.log_tail()}"
            time.sleep(0.2)

    def started_port(self) -> int:
        """The metrics port, once the start line is written."""
        return self.wait_for_log(lambda line: line.get("msg") == self.started, "start")["metrics_port"]

    def scrape(self, path: str = "/metrics") -> tuple[int, str]:
        url = f"http://127.0.0.1:{self.started_port()}{path}"
        try:
            with urllib.request.urlopen(url, timeout=30) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()

    def metric(self, sample: str) -> float:
        for line in self.scrape()[1].splitlines():
            if line.startswith(sample + " "):
                return float(line.rsplit(" ", 1)[1])
        return 0.0

    def stop(self, signum: int = signal.SIGTERM, timeout_s: float = 120.0) -> int:  # type: ignore[override]
        code = super().stop(signum, timeout_s)
        assert code is not None, f"{self.command} was not started"
        return code


def wait_until(
    condition: Callable[[], object],
    what: str,
    services: ServiceProcess | Iterable[ServiceProcess],
    timeout_s: float = WAIT_S,
) -> None:
    """Waits until `condition()` holds; fails saying `what` (with the logs' tails) once `timeout_s`
    has passed or as soon as one of `services` has exited."""
    watched = [services] if isinstance(services, ServiceProcess) else list(services)
    deadline = time.monotonic() + timeout_s
    while not condition():
        for service in watched:
            assert service.is_running(), f"{service.command} exited:\n{service.log_tail()}"
        assert time.monotonic() < deadline, f"{what}:\n" + "\n".join(
            f"--- {service.command}\n{service.log_tail()}" for service in watched
        )
        time.sleep(0.1)


def committed_offsets(bootstrap: str, group: str, topic: str, partitions: int) -> dict[int, int]:
    """The group's committed offset per partition of `topic` (negative: none committed)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        positions = consumer.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=30)
    finally:
        consumer.close()
    return {tp.partition: tp.offset for tp in positions}
