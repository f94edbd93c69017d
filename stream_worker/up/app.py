"""`stream-worker up`: the whole stack on this machine until Ctrl-C or SIGTERM.

Starts, in this order, the local Kafka broker durable in `<data dir>/broker`, the stack's topics,
the local Triton (exporting the models first if needed), the history store with its console
(its database in the data dir), the alerts, visits, notify and sightings services, the worker and the
camera connector, each a child process exactly as production runs it, with its log in
`<data dir>/logs`. It then prints the console's address (and, on the first start, the admin
password the store prints once) and keeps every child running: one that dies is started again
(supervisor.py; restarts.py says when). A stop signal stops the services first, newest first, then
Triton and the broker; a second one kills them at once. The watchdog (stream_worker.watchdog)
stops every child should `up` itself be killed. `<data dir>/up.json` says what runs (status.py).
The console takes `<data dir>/console.token`, new on each start and removed at the stop, as a
read-only viewer of its API: `cameras status` asks it rather than reading the topic.
"""

from __future__ import annotations

import logging
import signal
import threading
from datetime import datetime
from types import FrameType

from stream_worker.contracts import running_up
from stream_worker.launchers.broker import BrokerError
from stream_worker.launchers.service_child import ServiceStartError
from stream_worker.launchers.triton import TritonLaunchError
from stream_worker.nets.errors import ModelPrepareError
from stream_worker.nets.prepare import prepare_models
from stream_worker.nets.weights import default_weights_dir
from stream_worker.notify.secrets import create_secrets_file
from stream_worker.notify.secrets import file_problem as secrets_file_problem
from stream_worker.service.compacted import CompactedTopicError
from stream_worker.terminal import Terminal
from stream_worker.up import status as up_status
from stream_worker.up import topics as up_topics
from stream_worker.up.announcements import announcements
from stream_worker.up.children import BrokerChild, ServiceProcess, TritonChild
from stream_worker.up.options import EXIT_FAILED, EXIT_OK, UpError, UpOptions, format_duration
from stream_worker.up.restarts import RestartPolicy
from stream_worker.up.shedding import ShedWatch
from stream_worker.up.supervisor import Supervisor
from stream_worker.watchdog import Watchdog

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
CHECK_INTERVAL_S = 0.5

log = logging.getLogger(__name__)


class Up:
    def __init__(self, options: UpOptions, console: Terminal) -> None:
        self.options = options
        self.console = console
        self.stopping = threading.Event()
        self.watchdog: Watchdog | None = None
        self.supervisor: Supervisor | None = None
        self.broker: BrokerChild | None = None
        self.triton: TritonChild | None = None
        self.triton_url = options.triton_url
        self.services: list[ServiceProcess] = []
        self._last_status: tuple[str, dict[str, object]] | None = None

    # --- lifecycle ---------------------------------------------------------------------------

    def run(self) -> None:
        """Start everything, then supervise until a stop signal (UpError when it cannot start)."""
        options = self.options
        if options.triton_url is None:
            self._prepare_models()
        self.watchdog = Watchdog()  # before the first child
        self.supervisor = Supervisor(self.watchdog, RestartPolicy(), self.stopping, self._say)
        self.broker = BrokerChild(options.broker_port, options.broker_dir)
        self._step(f"starting the local Kafka broker (Tansu, durable in {options.broker_dir})", self.broker)
        kept = f"frames kept {format_duration(options.frames_retention_ms)}"
        if options.plates_retention_ms != options.frames_retention_ms:
            kept += f", plates {format_duration(options.plates_retention_ms)}"
        with self.console.step(f"creating the topics ({kept})"):
            up_topics.create(
                self.broker.bootstrap_servers,
                options.partitions,
                options.frames_retention_ms,
                options.plates_retention_ms,
            )
        if options.triton_url is None:
            self.triton = TritonChild(options.repository)
            self._step("starting the local Triton", self.triton)
            self.triton_url = self.triton.grpc_url
        # The console's read-only token for the CLI (contracts/running_up.py), new on each start.
        try:
            running_up.write_console_token(options.data_dir)
        except OSError as error:
            raise UpError(f"cannot write {options.console_token_path}: {error.strerror}") from error
        self.services = self._services()
        names = ", ".join(service.name for service in self.services)
        with self.console.step(f"starting {names} (they join their groups)"):
            for service in self.services:
                self.supervisor.start(service)
            for service in self.services:
                service.wait_ready(self.stopping)
        self._announce()  # before "running": whoever waits for that status finds the address said
        self._write_status("running")
        self._point_the_cli()
        connector = next(service for service in self.services if service.name == "connector")
        shedding = ShedWatch(self._say)
        while not self.stopping.wait(CHECK_INTERVAL_S):
            self.supervisor.check()
            self._write_status("running")
            shedding.look(connector.port)

    def stop(self) -> None:
        """Services first (newest first), then Triton and the broker; then release the watchdog."""
        running_up.remove_pointer(self.options.status_path)
        self._write_status("stopping")
        if self.supervisor is not None:
            self.supervisor.stop()
        if self.triton is not None:
            self.triton.close()
        if self.watchdog is not None:
            self.watchdog.release()
        running_up.remove_console_token(self.options.data_dir)
        self._write_status("stopped")

    def request_stop(self, signum: int, _frame: FrameType | None) -> None:
        """The first stop signal stops in order; a second kills every child at once."""
        if self.stopping.is_set():
            if self.watchdog is not None:
                self.watchdog.kill_all()
            return
        self.stopping.set()

    # --- setting up --------------------------------------------------------------------------

    def _prepare_models(self) -> None:
        weights_dir = self.options.weights_dir or default_weights_dir()
        with self.console.step(f"checking the models in {self.options.repository} (first run exports them)"):
            try:
                prepare_models(weights_dir, self.options.repository)
            except ModelPrepareError as error:
                raise UpError(str(error)) from error

    def _step(self, text: str, child: BrokerChild | TritonChild) -> None:
        assert self.supervisor is not None
        with self.console.step(text):
            self.supervisor.start(child)
        where = ", ".join(f"{key} {value}" for key, value in child.status().items())
        pids = ", ".join(str(pid) for pid in child.process_groups())
        self.console.line(f"   {child.name}: pid {pids}, {where}", style="dim")

    def _services(self) -> list[ServiceProcess]:
        options = self.options
        assert self.broker is not None and self.triton_url is not None
        logs = options.logs_dir
        timeout = options.shutdown_timeout_s
        common = ["--bootstrap-servers", self.broker.bootstrap_servers, "--local-broker",
                  "--session-timeout-ms", str(options.session_timeout_ms)]  # fmt: skip
        console = ["--console-host", options.console_host, "--console-port", str(options.console_port)]
        store_args = [*common, "--data-dir", str(options.data_dir), *console,
                      "--viewer-token-file", str(options.console_token_path)]  # fmt: skip
        # Each plate's picture in its event (a JPEG of at most 16 KB): the console shows it with the
        # sighting, which is what an operator checking a sighting or an alert looks at first.
        worker_args = [*common, "--triton-url", self.triton_url, "--plate-images"]
        # Each notification's JSON then carries `picture_url`, its sighting's picture in this console.
        # Its targets' secrets: a file in the data dir, read again when it changes (no restart).
        notify_args = [*common, "--console-url", options.console_url,
                       "--secrets-file", str(options.secrets_path)]  # fmt: skip
        return [
            ServiceProcess("store", "store", store_args, logs, timeout),
            ServiceProcess("alerts", "alerts", common, logs, timeout),
            ServiceProcess("visits", "visits", common, logs, timeout),
            ServiceProcess("notify", "notify", notify_args, logs, timeout),
            ServiceProcess("sightings", "sightings", common, logs, timeout),
            ServiceProcess("worker", "run", worker_args, logs, timeout),
            ServiceProcess("connector", "connect", common, logs, timeout),
        ]

    # --- saying what runs --------------------------------------------------------------------

    def _announce(self) -> None:
        options = self.options
        assert self.broker is not None
        for service in self.services:
            self.console.line(f"   {service.name}: pid {service.process_groups()[0]}, log {service.log_path}",
                              style="dim")  # fmt: skip
        store = next(service for service in self.services if service.name == "store")
        self.console.line(f"console: {options.console_url}", style="bold")
        self.console.line(
            f"notification secrets: {options.secrets_path} (NAME=value lines for the targets' ${{NAME}}; "
            "read again when it changes)",
            style="dim",
        )
        for line in announcements(store.child):
            self.console.line(line, style="bold")
        self.console.line(
            f"Kafka: {self.broker.bootstrap_servers} (the CLI finds it: stream-worker cameras set CAMERA "
            f"--file cam.yaml); data in {options.data_dir}; status in {options.status_path}; Ctrl-C to stop"
        )

    def _point_the_cli(self) -> None:
        """The CLI's commands reach this `up` without flags (contracts/running_up.py)."""
        try:
            running_up.write_pointer(self.options.status_path)
        except OSError as error:
            log.warning("cannot write %s: %s", running_up.pointer_path(), error)

    def _say(self, text: str) -> None:
        self.console.line(f"{datetime.now().strftime('%H:%M:%S')} {text}", style="yellow")

    def _write_status(self, state: str) -> None:
        options = self.options
        fields: dict[str, object] = {
            "data_dir": str(options.data_dir),
            "console_url": options.console_url,
            "bootstrap_servers": self.broker.bootstrap_servers if self.broker is not None else None,
            "triton_url": self.triton_url,
            "children": self.supervisor.status() if self.supervisor is not None else {},
        }
        if (state, fields) == self._last_status:
            return  # rewritten only when something changed
        self._last_status = (state, fields)
        try:
            up_status.write(options.status_path, state, fields)
        except OSError as error:
            log.warning("cannot write %s: %s", options.status_path, error)


def run_up(options: UpOptions, console: Terminal | None = None) -> int:
    """Run until a stop signal; the exit status (0 stopped by a signal, 1 could not start)."""
    console = console or Terminal()
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    options.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    options.logs_dir.mkdir(exist_ok=True, mode=0o700)  # the store's log holds a first start's password
    create_secrets_file(options.secrets_path)  # the targets' secrets, added to it while up runs
    problem = secrets_file_problem(options.secrets_path)
    if problem is not None:
        console.error(f"warning: {options.secrets_path} {problem}; notify refuses it until it is fixed")
    lock = up_status.DataDirLock(options.lock_path)
    try:
        lock.acquire()
    except UpError as error:
        console.error(f"error: {error}")
        return EXIT_FAILED
    up = Up(options, console)
    previous = {sig: signal.signal(sig, up.request_stop) for sig in STOP_SIGNALS}
    status = EXIT_OK
    try:
        up.run()
    except (UpError, BrokerError, TritonLaunchError, ServiceStartError, CompactedTopicError) as error:
        if not up.stopping.is_set():
            console.error(f"error: {error}")
            status = EXIT_FAILED
    finally:
        with console.step("stopping the services, then Triton and the broker"):
            up.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        lock.release()
    return status
