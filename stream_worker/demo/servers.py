"""The demo's servers: the local Triton (booting in the background while the rest starts), the
local Kafka broker, or checking a Triton given by URL. Each stop is registered as it starts."""

from __future__ import annotations

import contextlib
import threading
import time
from pathlib import Path

from stream_worker.demo.liveness import Liveness
from stream_worker.demo.options import DemoError
from stream_worker.launchers.broker import BrokerError, LocalBroker
from stream_worker.launchers.triton import LocalTriton
from stream_worker.terminal import Terminal
from stream_worker.triton_client import PlateRecognitionClient

TRITON_START_TIMEOUT_S = 300.0
EXTERNAL_TRITON_WAIT_S = 30.0
POLL_S = 0.2


class Servers:
    def __init__(self, console: Terminal, liveness: Liveness, cleanup: contextlib.ExitStack) -> None:
        self.console = console
        self.liveness = liveness
        self._cleanup = cleanup
        self._triton_thread: threading.Thread | None = None
        self._triton_error: BaseException | None = None
        self._triton_cancel = threading.Event()

    def start_triton(self, repository: Path) -> None:
        """Start the local Triton in the background: it boots while the broker and worker start."""
        triton = LocalTriton(repository)
        self.liveness.triton = triton
        self.liveness.triton_starting = True
        self._cleanup.callback(self._stop_triton)

        def start() -> None:
            try:
                triton.start(timeout_s=TRITON_START_TIMEOUT_S, cancel=self._triton_cancel)
            except BaseException as error:
                self._triton_error = error

        self._triton_thread = threading.Thread(target=start, name="triton-start", daemon=True)
        self._triton_thread.start()

    def wait_for_triton(self) -> str:
        triton = self.liveness.triton
        assert triton is not None and self._triton_thread is not None
        with self.console.step("starting the local Triton (plate_recognition, detector, STN, LPRNet)"):
            while self._triton_thread.is_alive():
                self.liveness.watch()
                self._triton_thread.join(POLL_S)
            self._triton_thread = None
            self.liveness.triton_starting = False
            if self._triton_error is not None:
                raise DemoError(f"the local Triton did not start: {self._triton_error}")
            self.liveness.watch()
        self.console.line(f"   Triton gRPC {triton.grpc_url} (pid {triton.pid})", style="dim")
        return str(triton.grpc_url)

    def _stop_triton(self) -> None:
        self._triton_cancel.set()  # a start still waiting for readiness stops the server itself
        if self._triton_thread is not None:
            self._triton_thread.join()
        if self.liveness.triton is not None:
            self.liveness.triton.close()

    def check_external_triton(self, url: str) -> None:
        with self.console.step(f"checking Triton at {url}"):
            client = PlateRecognitionClient(url, timeout_s=5.0)
            deadline = time.monotonic() + EXTERNAL_TRITON_WAIT_S
            while not client.is_ready():
                if time.monotonic() > deadline:
                    raise DemoError(
                        f"Triton at --triton-url {url} is not ready (server or model plate_recognition) "
                        "after 30 s; start it with `stream-worker triton` or leave --triton-url out"
                    )
                time.sleep(0.5)

    def start_broker(self) -> str:
        broker = LocalBroker()
        self.liveness.broker = broker
        self._cleanup.callback(broker.stop)
        with self.console.step("starting the local Kafka broker (Tansu, in memory)"):
            try:
                broker.start()
            except BrokerError as error:
                raise DemoError(f"the local broker did not start: {error}") from error
            self.liveness.watch()
        self.console.line(f"   bootstrap servers {broker.bootstrap_servers} (pid {broker.pid})", style="dim")
        return str(broker.bootstrap_servers)
