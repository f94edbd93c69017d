"""Run the real `tritonserver` from the nvidia-pytriton wheel as a local child process.

The wheel carries the server binary, the Python backend and one backend stub per Python version,
but not in the layout tritonserver expects. `LocalTriton` assembles a backend folder in a private
temp directory, points the loader at the wheel's bundled libraries, puts this interpreter's `bin/`
first on PATH (the stub takes its packages from the first `python3` there) and waits until the
server and `plate_recognition` answer ready. Every known way the start fails is checked first and
reported with the fix, because tritonserver's own messages for them are obscure.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Sequence
from pathlib import Path
from types import TracebackType

from stream_worker.launchers.ports import free_port

READY_MODEL = "plate_recognition"
# Artifacts `stream-worker models prepare` exports; checked only for models present in the repository.
ONNX_ARTIFACTS = (
    "stn/1/model.onnx",
    "lprnet/1/model.onnx",
    "plate_detector/1/model.onnx",
    "global_ocr/1/model.onnx",
)
STOP_GRACE_S = 20.0
LOG_TAIL_LINES = 40
# The Python backend's shared memory: one region per stub, unlinked only by a server that stops cleanly.
SHM_DIR = Path("/dev/shm")
SHM_REGION_PREFIX = "triton_python_backend_shm_region_"
STUB_EXIT_WAIT_S = 5.0


class TritonLaunchError(RuntimeError):
    """The local Triton could not be started; the message says why and what to do."""


def _site_packages() -> Path:
    return Path(sysconfig.get_paths()["purelib"])


def pytriton_dir() -> Path:
    return _site_packages() / "pytriton" / "tritonserver"


def pytriton_libs_dir() -> Path:
    return _site_packages() / "nvidia_pytriton.libs"


def python_version_tag() -> str:
    return f"{sys.version_info.major}.{sys.version_info.minor}"


def check_numpy_version(version: str | None) -> None:
    """The stub hands numpy arrays across a C ABI built for numpy 1.x: numpy 2 yields empty tensors."""
    if version is None:
        raise TritonLaunchError(
            f"numpy is not installed for {sys.executable}; the Triton Python backend needs numpy<2 "
            "(pip install 'numpy<2')."
        )
    if int(version.split(".")[0]) >= 2:
        raise TritonLaunchError(
            f"numpy {version} is installed for {sys.executable}, but the Triton Python backend stub "
            "of nvidia-pytriton 0.7 only works with numpy 1.x (numpy 2 makes it return empty "
            "tensors). Fix: pip install 'numpy<2'."
        )


def installed_numpy_version() -> str | None:
    try:
        return importlib.metadata.version("numpy")
    except importlib.metadata.PackageNotFoundError:
        return None


def libpython_name(version: str) -> str:
    return f"libpython{version}.so.1.0"


def find_libpython(version: str, search_dirs: Iterable[Path], ldconfig_listing: str) -> Path:
    """Where the shared libpython the stub embeds lives: the first search dir holding it, else ld.so's cache.

    Raises TritonLaunchError naming the missing file and how to get it.
    """
    name = libpython_name(version)
    for directory in search_dirs:
        candidate = directory / name
        if candidate.is_file():
            return candidate
    for line in ldconfig_listing.splitlines():
        library, _, path = line.strip().partition(" => ")
        if library.split(" ")[0] == name and Path(path).is_file():
            return Path(path)
    raise TritonLaunchError(
        f"{name} not found (looked in {', '.join(str(d) for d in search_dirs) or 'no directories'} "
        "and the ld.so cache). The Triton Python backend stub embeds the shared Python library. "
        f"Install it (Debian/Ubuntu: apt-get install libpython{version}; pyenv: "
        f"PYTHON_CONFIGURE_OPTS=--enable-shared pyenv install {version}) or add its directory to "
        "LD_LIBRARY_PATH."
    )


def _ldconfig_listing() -> str:
    try:
        return subprocess.run(["ldconfig", "-p"], capture_output=True, text=True, check=False).stdout
    except OSError:
        return ""


def _libpython_search_dirs() -> list[Path]:
    dirs = [Path(d) for d in os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep) if d]
    if libdir := sysconfig.get_config_var("LIBDIR"):
        dirs.insert(0, Path(libdir))
    return dirs


def check_artifacts(repository: Path, artifacts: Sequence[str] = ONNX_ARTIFACTS) -> None:
    """Fail early (instead of a model stuck UNAVAILABLE) when the exported networks are absent."""
    missing = [
        repository / artifact
        for artifact in artifacts
        if (repository / artifact.split("/")[0]).is_dir() and not (repository / artifact).is_file()
    ]
    if missing:
        raise TritonLaunchError(
            f"Model artifacts missing: {', '.join(str(p) for p in missing)}. "
            "Run `stream-worker models prepare` (needs the pinned weights: the STN/LPRNet checkpoints and "
            "the plate detector y5fu_640x_sim.onnx and the recognizer cct_xs_v1_global.onnx in "
            "$LPR_WEIGHTS_DIR, or add --download for those with a pinned URL; see README)."
        )


def build_backend_directory(target: Path, version: str) -> Path:
    """A `--backend-directory` holding the wheel's Python backend plus the stub for `version`."""
    source = pytriton_dir()
    stub = source / "python_backend_stubs" / version / "triton_python_backend_stub"
    if not stub.is_file():
        raise TritonLaunchError(
            f"nvidia-pytriton has no Python backend stub for Python {version} ({stub}); "
            "use a Python version it ships a stub for."
        )
    python_backend = target / "python"
    python_backend.mkdir(parents=True, exist_ok=True)
    for item in (source / "backends" / "python").iterdir():
        if item.is_file():
            _copy_replacing(item, python_backend / item.name)
    _copy_replacing(stub, python_backend / stub.name)
    return target


def _copy_replacing(source: Path, target: Path) -> None:
    """Copy, then rename over `target`: a stub still running from it (its server killed) cannot make
    the copy fail with "Text file busy"."""
    partial = target.with_name(target.name + ".partial")
    shutil.copy2(source, partial)
    os.replace(partial, target)


def _held_paths(directory: Path) -> set[str]:
    """Files in `directory` that a live process maps or holds open (as far as /proc shows us)."""
    prefix = f"{directory}/"
    held: set[str] = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):  # ended meanwhile, or not ours to read
            for line in (entry / "maps").read_text(errors="replace").splitlines():
                path = line[line.find("/") :].removesuffix(" (deleted)") if "/" in line else ""
                if path.startswith(prefix):
                    held.add(path)
        with contextlib.suppress(OSError):
            for fd in (entry / "fd").iterdir():
                with contextlib.suppress(OSError):
                    if (path := os.readlink(fd)).startswith(prefix):
                        held.add(path.removesuffix(" (deleted)"))
    return held


def remove_stale_shm_regions(directory: Path = SHM_DIR) -> list[str]:
    """Remove the Python backend's shared-memory regions that no live process maps or holds open.

    A server or stub killed with SIGKILL leaves its regions behind (they grow with the requests
    served: tens of MiB each); where /dev/shm is small, as in a container, they would leave a
    restarted server no room. Returns the names removed.
    """
    directory = directory.resolve()
    regions = [path for path in directory.glob(f"{SHM_REGION_PREFIX}*") if path.is_file()]
    if not regions:
        return []
    held = _held_paths(directory)
    removed = []
    for region in regions:
        if str(region) not in held:
            with contextlib.suppress(OSError):  # another user's, or removed meanwhile
                region.unlink()
                removed.append(region.name)
    return removed


def _wait_group_exit(pgid: int, timeout_s: float) -> bool:
    """Until no live (non-zombie) process is left in process group `pgid`; False on timeout."""
    deadline = time.monotonic() + timeout_s
    while True:
        alive = False
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            with contextlib.suppress(OSError, ValueError):
                stat = (entry / "stat").read_text()
                fields = stat[stat.rindex(")") + 2 :].split()
                if int(fields[2]) == pgid and fields[0] != "Z":
                    alive = True
                    break
        if not alive:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)


class LocalTriton:
    """tritonserver as a child process; context manager; restartable on the same ports."""

    def __init__(
        self,
        repository: Path,
        grpc_port: int | None = None,
        http_port: int | None = None,
        metrics_port: int | None = None,
        model_config_name: str | None = None,
        host: str = "127.0.0.1",
        extra_repositories: Sequence[Path] = (),
        extra_args: Sequence[str] = (),
    ) -> None:
        self.repository = Path(repository).resolve()
        # Served next to `repository` (one --model-repository each), e.g. the benchmark's baseline.
        self.extra_repositories = [Path(path).resolve() for path in extra_repositories]
        self.grpc_port = grpc_port or free_port()
        self.http_port = http_port or free_port()
        self.metrics_port = metrics_port or free_port()
        self.model_config_name = model_config_name
        self.host = host  # the address Triton binds; clients always use 127.0.0.1
        # More tritonserver flags, e.g. the tests' --grpc-use-ssl and its certificates.
        self.extra_args = list(extra_args)
        self._workdir = Path(tempfile.mkdtemp(prefix="stream-worker-triton-"))
        self.log_path = self._workdir / "tritonserver.log"
        self._process: subprocess.Popen[bytes] | None = None
        self.removed_shm_regions: list[str] = []  # stale regions removed by the last start

    @property
    def grpc_url(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"

    @property
    def http_url(self) -> str:
        return f"127.0.0.1:{self.http_port}"

    @property
    def metrics_url(self) -> str:
        return f"http://127.0.0.1:{self.metrics_port}/metrics"

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    def _binary(self) -> Path:
        binary = pytriton_dir() / "bin" / "tritonserver"
        if not binary.is_file():
            raise TritonLaunchError(
                f"tritonserver not found at {binary}: install the local extras "
                "(pip install -e '.[local]', which brings nvidia-pytriton)."
            )
        return binary

    def _environment(self, libpython: Path) -> dict[str, str]:
        env = dict(os.environ)
        interpreter_bin = str(Path(sys.executable).parent)
        env["PATH"] = os.pathsep.join([interpreter_bin, env.get("PATH", "")])
        library_dirs = [str(pytriton_libs_dir()), str(libpython.parent), env.get("LD_LIBRARY_PATH", "")]
        env["LD_LIBRARY_PATH"] = os.pathsep.join(d for d in library_dirs if d)
        return env

    def command(self, backend_directory: Path) -> list[str]:
        args = [
            str(self._binary()),
            f"--model-repository={self.repository}",
            *(f"--model-repository={path}" for path in self.extra_repositories),
            f"--backend-directory={backend_directory}",
            f"--grpc-port={self.grpc_port}",
            f"--http-port={self.http_port}",
            f"--metrics-port={self.metrics_port}",
            f"--grpc-address={self.host}",
            f"--http-address={self.host}",
            f"--metrics-address={self.host}",
            "--exit-timeout-secs=10",
        ]
        if self.model_config_name:
            args.append(f"--model-config-name={self.model_config_name}")
        return args + self.extra_args

    def start(self, timeout_s: float = 600.0, cancel: threading.Event | None = None) -> None:
        """Start the server; return once it and `plate_recognition` are ready.

        `cancel` set while waiting stops the server and raises TritonLaunchError (Ctrl-C in `serve`).
        """
        if self._process and self._process.poll() is None:
            return
        if self._process is not None:
            # The last server died (e.g. SIGKILL): its stubs, orphaned, still hold their memory, the
            # stub binary and their shared-memory regions. Kill them; their regions go below.
            pgid = self._process.pid
            self.stop()
            _wait_group_exit(pgid, STUB_EXIT_WAIT_S)
        self.removed_shm_regions = remove_stale_shm_regions()
        check_numpy_version(installed_numpy_version())
        libpython = find_libpython(python_version_tag(), _libpython_search_dirs(), _ldconfig_listing())
        check_artifacts(self.repository)
        backend_directory = build_backend_directory(self._workdir / "backends", python_version_tag())
        with self.log_path.open("ab") as log:
            self._process = subprocess.Popen(
                self.command(backend_directory),
                env=self._environment(libpython),
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: stop() also reaches the backend stubs
            )
        try:
            self._wait_ready(timeout_s, cancel or threading.Event())
        except BaseException:
            self.stop()
            raise

    def _wait_ready(self, timeout_s: float, cancel: threading.Event) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if cancel.is_set():
                raise TritonLaunchError("start-up cancelled")
            assert self._process is not None
            if (code := self._process.poll()) is not None:
                raise TritonLaunchError(
                    f"tritonserver exited with code {code} during start-up. Log tail "
                    f"({self.log_path}):\n{self.log_tail()}"
                )
            if self.is_ready():
                return
            time.sleep(0.5)
        raise TritonLaunchError(
            f"tritonserver not ready after {timeout_s:.0f} s. Log tail ({self.log_path}):\n{self.log_tail()}"
        )

    def _http_ok(self, path: str) -> bool:
        try:
            with urllib.request.urlopen(f"http://{self.http_url}{path}", timeout=2) as response:
                return response.status == 200
        except (urllib.error.URLError, OSError):
            return False

    def is_ready(self) -> bool:
        return self._http_ok("/v2/health/ready") and self._http_ok(f"/v2/models/{READY_MODEL}/ready")

    def is_running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def log_tail(self, lines: int = LOG_TAIL_LINES) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop(self, grace_s: float = STOP_GRACE_S) -> None:
        """SIGTERM (Triton unloads models and stops its stubs), then SIGKILL to the whole group."""
        process, self._process = self._process, None
        if process is None:
            return
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        # Stubs outliving the server would hold shared memory; they are in the server's group.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self._workdir, ignore_errors=True)

    def __enter__(self) -> LocalTriton:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


def serve(
    repository: Path,
    grpc_port: int = 8001,
    http_port: int = 8000,
    metrics_port: int = 8002,
    model_config_name: str | None = None,
    host: str = "127.0.0.1",
) -> int:
    """Run Triton in the foreground until SIGINT/SIGTERM; returns the process exit code."""
    stop_requested = threading.Event()
    previous = {
        sig: signal.signal(sig, lambda *_: stop_requested.set()) for sig in (signal.SIGINT, signal.SIGTERM)
    }
    server = LocalTriton(repository, grpc_port, http_port, metrics_port, model_config_name, host)
    try:
        print(f"Starting tritonserver (log: {server.log_path}) ...", flush=True)
        started = time.monotonic()
        server.start(cancel=stop_requested)
        print(
            f"Triton ready in {time.monotonic() - started:.1f} s: grpc {server.grpc_url}, "
            f"http http://{server.http_url}, metrics {server.metrics_url}",
            flush=True,
        )
        while not stop_requested.wait(1.0):
            if not server.is_running():
                print(f"tritonserver exited unexpectedly. Log tail:\n{server.log_tail()}", file=sys.stderr)
                return 1
        print("Stopping tritonserver ...", flush=True)
        return 0
    except TritonLaunchError as error:
        if stop_requested.is_set():
            return 0
        print(f"error: {error}", file=sys.stderr)
        return 1
    finally:
        server.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
