"""The children `up` supervises, each behind one small interface (`Child`): the durable local
broker, the local Triton and the `stream-worker COMMAND` services. `start` returns once the child
runs (the broker and Triton: once they serve); `process_groups` are what the watchdog must stop
should `up` itself be killed."""

from __future__ import annotations

import signal
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from stream_worker.launchers import service_child
from stream_worker.launchers.broker import LocalBroker
from stream_worker.launchers.ports import free_port
from stream_worker.launchers.triton import LocalTriton

TRITON_START_TIMEOUT_S = 300.0
SERVICE_READY_TIMEOUT_S = 120.0


class Child(Protocol):
    name: str

    def start(self, stopping: threading.Event) -> None: ...

    def is_running(self) -> bool: ...

    def process_groups(self) -> list[int]: ...

    def stop(self) -> None: ...

    def exit_reason(self) -> str: ...

    def status(self) -> dict[str, object]: ...


def describe_exit(code: int | None) -> str:
    if code is None:
        return "running"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


class BrokerChild:
    """Tansu on `port`, durable in `data_dir` (its object store is a second process group)."""

    name = "broker"

    def __init__(self, port: int, data_dir: Path) -> None:
        self.broker = LocalBroker(port, data_dir)

    @property
    def bootstrap_servers(self) -> str:
        return self.broker.bootstrap_servers

    def start(self, stopping: threading.Event) -> None:
        self.broker.stop()  # whichever of Tansu and its object store is left of a crash
        self.broker.start()

    def is_running(self) -> bool:
        return self.broker.is_serving()

    def process_groups(self) -> list[int]:
        return self.broker.pids

    def stop(self) -> None:
        self.broker.stop()

    def exit_reason(self) -> str:
        return "Tansu exited" if not self.broker.is_running() else "its object store exited"

    def status(self) -> dict[str, object]:
        return {"bootstrap_servers": self.bootstrap_servers, "data_dir": str(self.broker.data_dir)}


class TritonChild:
    """The local tritonserver on free ports; restarted on the same ones."""

    name = "triton"

    def __init__(self, repository: Path) -> None:
        self.triton = LocalTriton(repository)

    @property
    def grpc_url(self) -> str:
        return self.triton.grpc_url

    def start(self, stopping: threading.Event) -> None:
        self.triton.start(timeout_s=TRITON_START_TIMEOUT_S, cancel=stopping)

    def is_running(self) -> bool:
        return self.triton.is_running()

    def process_groups(self) -> list[int]:
        return [self.triton.pid] if self.triton.pid is not None else []

    def stop(self) -> None:
        self.triton.stop()

    def close(self) -> None:
        self.triton.close()

    def exit_reason(self) -> str:
        return f"tritonserver exited; its log: {self.triton.log_path}"

    def status(self) -> dict[str, object]:
        return {"grpc_url": self.grpc_url, "log": str(self.triton.log_path)}


class ServiceProcess:
    """`python -m stream_worker COMMAND ...` with its HTTP port (kept across restarts) and its log
    (appended to across restarts) under `logs_dir`."""

    def __init__(
        self, name: str, command: str, args: Sequence[str], logs_dir: Path, shutdown_timeout_s: float
    ) -> None:
        self.name = name
        self.port = free_port()
        self.shutdown_timeout_s = shutdown_timeout_s
        args = [*args, "--metrics-host", "127.0.0.1", "--shutdown-timeout-s", str(shutdown_timeout_s)]
        self.child = service_child.ServiceChild(
            command, args, logs_dir / f"{name}.log", metrics_port=self.port, append_log=True
        )

    @property
    def log_path(self) -> Path:
        return self.child.log_path

    def start(self, stopping: threading.Event) -> None:
        self.child.start()

    def wait_ready(self, stopping: threading.Event) -> None:
        """Until its /readyz answers 200; ServiceStartError when it exits or is too slow, or a stop
        is asked (exit_code None)."""

        def check() -> None:
            if stopping.is_set():
                raise service_child.ServiceStartError(f"{self.name}: stopped before it was ready")

        self.child.wait_ready(SERVICE_READY_TIMEOUT_S, check=check)

    def is_ready(self) -> bool:
        return self.is_running() and service_child.http_ok(f"http://127.0.0.1:{self.port}/readyz")

    def is_running(self) -> bool:
        return self.child.is_running()

    def process_groups(self) -> list[int]:
        return [self.child.pid] if self.child.process is not None else []

    def stop(self) -> None:
        """SIGTERM (it drains, commits and exits), SIGKILL if it overruns its shutdown timeout."""
        self.child.stop(timeout_s=self.shutdown_timeout_s + 5.0)

    def exit_reason(self) -> str:
        return describe_exit(self.child.returncode)

    def status(self) -> dict[str, object]:
        return {"metrics_url": f"http://127.0.0.1:{self.port}/metrics", "log": str(self.log_path)}
