"""`stream-worker bench triton-memory`: a local Triton driven with real frames of varying sizes, the
memory of each of its processes over time.

Starts Triton the way `up` does (`LocalTriton` on the model repository) and sends it
`plate_recognition` requests from `--clients` threads, as the worker does (micro-batches of 1 to
`--max-batch` frames, plate pictures asked for): the frames of ../shared/videos decoded with PyAV
and the photos of ../shared/evalset/scenes, each at its own size and at a few others, so that the
detector sees many canvas shapes and the recognizers many batch sizes. Every `--every-s` seconds it
records, per process (tritonserver and each backend stub, named by its model instance): resident
memory (RSS), its anonymous and shared-memory parts, and the proportional set size (PSS: shared
pages counted once); the Python backend's shared-memory regions in /dev/shm; frames answered and
Triton's CPU ms per frame. Printed: a table per sample, and the growth of each process from the end
of the first `--warmup-min` minutes to the end.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench import environment
from bench.cpu import group_cpu_s
from bench.report import format_table, write_json
from bench.soak_stack import PROFILES

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED = REPO_ROOT.parent / "shared"
# Long sides the frames are also sent at (besides their own): the sizes cameras send.
LONG_SIDES = (640, 1280, 1920)
SHM_DIR = Path("/dev/shm")
SHM_PREFIX = "triton_python_backend_shm_region_"


def frame_pool(videos: Path, photos: Path, limit_per_clip: int, varied: bool) -> list[bytes]:
    """JPEGs of the clips' frames and the photos, at their own size and at each of LONG_SIDES; not
    `varied`: the soak's two cameras' frames (the van's gate clip, the rainy dash clip) as they come."""
    import av
    import cv2

    images = []
    clips = sorted(videos.iterdir()) if varied else [videos / PROFILES[0].clip, videos / PROFILES[1].clip]
    for clip in clips:
        with av.open(str(clip)) as container:
            for index, frame in enumerate(container.decode(video=0)):
                if index >= limit_per_clip:
                    break
                images.append(frame.to_ndarray(format="bgr24"))
    for photo in sorted(photos.glob("*.jpg")) if varied else ():
        if (image := cv2.imread(str(photo))) is not None:
            images.append(image)
    pool = []
    for image in images:
        height, width = image.shape[:2]
        variants = [image]
        for side in LONG_SIDES if varied else ():
            scale = side / max(height, width)
            if abs(scale - 1.0) > 0.05:
                size = (max(32, round(width * scale)), max(32, round(height * scale)))
                variants.append(cv2.resize(image, size, interpolation=cv2.INTER_AREA))
        for variant in variants:
            pool.append(cv2.imencode(".jpg", variant, [cv2.IMWRITE_JPEG_QUALITY, 85])[1].tobytes())
    return pool


def _status_kib(pid: int) -> dict[str, int]:
    values = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmRSS", "RssAnon", "RssShmem"):
            values[key] = int(rest.split()[0])
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key == "Pss":
            values[key] = int(rest.split()[0])
    return values


def process_name(pid: int) -> str:
    """`tritonserver`, or the model instance a backend stub runs (`plate_detector_0_1`)."""
    arguments = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    program = Path(arguments[0].decode(errors="replace")).name
    if program == "triton_python_backend_stub":
        # Its arguments: model.py, shm region, its sizes, parent pid, libpython, ipc handle, instance.
        return arguments[8].decode(errors="replace") if len(arguments) > 8 else f"stub {pid}"
    return program


def tree(root: int) -> list[int]:
    parents = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
                parents[int(entry.name)] = int(stat[stat.rindex(")") + 2 :].split()[1])
            except (OSError, ValueError):
                continue
    found, grown = {root}, True
    while grown:
        children = {pid for pid, parent in parents.items() if parent in found} - found
        found |= children
        grown = bool(children)
    return sorted(found)


def sample_memory(root: int) -> dict[str, dict[str, float]]:
    """MiB per process of Triton's tree: rss, anon, shmem, pss."""
    memory = {}
    for pid in tree(root):
        try:
            name, kib = process_name(pid), _status_kib(pid)
        except (OSError, ValueError):
            continue
        memory[name] = {
            "rss": round(kib.get("VmRSS", 0) / 1024, 1),
            "anon": round(kib.get("RssAnon", 0) / 1024, 1),
            "shmem": round(kib.get("RssShmem", 0) / 1024, 1),
            "pss": round(kib.get("Pss", 0) / 1024, 1),
        }
    return memory


def shm_regions_mib(root: int) -> float:
    """Size of the shared-memory regions of this server's stubs (named in their arguments)."""
    total = 0
    for pid in tree(root):
        try:
            arguments = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if len(arguments) > 2 and arguments[2].startswith(SHM_PREFIX.encode()):
            region = SHM_DIR / arguments[2].decode()
            total += region.stat().st_size if region.exists() else 0
    return round(total / 2**20, 1)


class Driver:
    """`clients` threads sending micro-batches of random frames of the pool until stopped."""

    def __init__(self, url: str, pool: list[bytes], clients: int, max_batch: int, seed: int) -> None:
        from stream_worker.triton_client import PlateRecognitionClient

        self.client = PlateRecognitionClient(url, timeout_s=300.0)
        self.pool, self.max_batch = pool, max_batch
        self.frames = self.failures = 0
        self._lock, self._stop = threading.Lock(), threading.Event()
        self._threads = [
            threading.Thread(target=self._run, args=(random.Random(seed + k),), daemon=True)
            for k in range(clients)
        ]

    def _run(self, rng: random.Random) -> None:
        while not self._stop.is_set():
            frames = [rng.choice(self.pool) for _ in range(rng.randint(1, self.max_batch))]
            try:
                self.client.recognize(frames, plate_images=[True] * len(frames))
            except Exception:
                with self._lock:
                    self.failures += 1
                continue
            with self._lock:
                self.frames += len(frames)

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=310)
        self.client.close()


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="stream-worker bench triton-memory",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        epilog="Example: stream-worker bench triton-memory --minutes 10 --report reports/triton-memory.json",
    )
    p.add_argument("--minutes", type=float, default=10.0)
    p.add_argument("--every-s", type=float, default=30.0)
    p.add_argument("--warmup-min", type=float, default=2.0, help="Growth is measured from this minute on.")
    p.add_argument("--clients", type=int, default=4, help="Concurrent requests (the worker's default).")
    p.add_argument("--max-batch", type=int, default=16, help="Frames per request at most (the worker's).")
    p.add_argument("--frames-per-clip", type=int, default=40)
    p.add_argument(
        "--frames",
        choices=("varied", "soak"),
        default="varied",
        help="varied: clips and photos at several sizes; soak: the soak's two cameras' frames.",
    )
    p.add_argument("--repository", type=Path, default=REPO_ROOT / "model_repository")
    p.add_argument("--triton-arg", action="append", default=[], help="A further tritonserver flag.")
    p.add_argument("--env", action="append", default=[], metavar="KEY=VALUE", help="Triton's environment.")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument(
        "--trim-at-end",
        action="store_true",
        help="At the end, sample again idle, then after malloc_trim(0) in every process (needs gdb): "
        "what glibc held freed rather than what was in use.",
    )
    p.add_argument("--report", type=Path, default=None, help="Write the JSON report here.")
    return p


def main(argv: Sequence[str]) -> int:
    from stream_worker.launchers.triton import LocalTriton

    args = parser().parse_args(list(argv))
    pool = frame_pool(
        SHARED / "videos", SHARED / "evalset" / "scenes", args.frames_per_clip, args.frames == "varied"
    )
    print(
        f"{len(pool)} JPEGs, {sum(map(len, pool)) / 2**20:.1f} MiB; load {environment.load_average()}",
        flush=True,
    )
    rows: list[dict[str, Any]] = []
    for item in args.env:
        key, _, value = item.partition("=")
        os.environ[key] = value
    with LocalTriton(args.repository, extra_args=args.triton_arg) as server:
        assert server.pid is not None
        driver = Driver(server.grpc_url, pool, args.clients, args.max_batch, args.seed)
        started, cpu0 = time.monotonic(), group_cpu_s(server.pid)
        last_frames, last_cpu = 0, cpu0
        driver.start()
        try:
            while (elapsed := time.monotonic() - started) < args.minutes * 60:
                time.sleep(min(args.every_s, args.minutes * 60 - elapsed))
                cpu, frames = group_cpu_s(server.pid), driver.frames
                memory = sample_memory(server.pid)
                rows.append(
                    {
                        "minute": round((time.monotonic() - started) / 60, 2),
                        "load": environment.load_average()[0],
                        "frames": frames,
                        "failures": driver.failures,
                        "cpu_ms_per_frame": round(1000 * (cpu - last_cpu) / max(frames - last_frames, 1), 1),
                        "rss": round(sum(m["rss"] for m in memory.values()), 1),
                        "pss": round(sum(m["pss"] for m in memory.values()), 1),
                        "shm_regions": shm_regions_mib(server.pid),
                        "by_process": memory,
                    }
                )
                last_frames, last_cpu = frames, cpu
                row = rows[-1]
                detail = " ".join(
                    f"{n}={m['pss']:.0f}/{m['anon']:.0f}/{m['shmem']:.0f}" for n, m in memory.items()
                )
                print(
                    f"min {row['minute']:6.2f} load {row['load']:5.2f} frames {frames:6d} "
                    f"cpu/frame {row['cpu_ms_per_frame']:6.1f} ms "
                    f"rss {row['rss']:7.1f} pss {row['pss']:7.1f} "
                    f"shm {row['shm_regions']:6.1f} | pss/anon/shmem {detail}",
                    flush=True,
                )
        finally:
            driver.stop()
        if args.trim_at_end:
            rows += idle_and_trimmed(server.pid, started)
    growth = growth_table(rows, args.warmup_min)
    print(format_table(growth, ["process", "pss_start", "pss_end", "anon_start", "anon_end", "mib_per_min"]))
    if args.report:
        settings = {key: str(value) for key, value in vars(args).items()}
        report = {"machine": environment.machine(), "args": settings, "rows": rows, "growth": growth}
        write_json(args.report, report)
    return 0


def malloc_trim(pid: int) -> None:
    subprocess.run(
        ["gdb", "-p", str(pid), "-batch", "-ex", "call (int) malloc_trim(0)"],
        capture_output=True, timeout=120, check=False,
    )  # fmt: skip


def idle_and_trimmed(root: int, started: float) -> list[dict[str, Any]]:
    """Two more samples, once the requests have stopped: idle, then after malloc_trim(0) everywhere."""
    found = []
    for stage in ("idle", "trimmed"):
        if stage == "trimmed":
            for pid in tree(root):
                malloc_trim(pid)
        time.sleep(5)
        memory = sample_memory(root)
        found.append(
            {
                "minute": round((time.monotonic() - started) / 60, 2),
                "stage": stage,
                "rss": round(sum(m["rss"] for m in memory.values()), 1),
                "pss": round(sum(m["pss"] for m in memory.values()), 1),
                "by_process": memory,
            }
        )
        detail = " ".join(f"{n}={m['pss']:.0f}/{m['anon']:.0f}/{m['shmem']:.0f}" for n, m in memory.items())
        print(f"{stage}: pss {found[-1]['pss']:7.1f} | pss/anon/shmem {detail}", flush=True)
    return found


def growth_table(rows: list[dict[str, Any]], warmup_min: float) -> list[dict[str, Any]]:
    """Per process: PSS and anonymous RSS at the first sample after the warm-up and at the end."""
    after = [r for r in rows if r["minute"] >= warmup_min and "stage" not in r]
    if len(after) < 2:
        return []
    first, last = after[0], after[-1]
    minutes = max(last["minute"] - first["minute"], 1e-9)
    table = []
    for name in sorted(last["by_process"]):
        a, b = first["by_process"].get(name), last["by_process"][name]
        if a is None:
            continue
        table.append(
            {
                "process": name,
                "pss_start": a["pss"],
                "pss_end": b["pss"],
                "anon_start": a["anon"],
                "anon_end": b["anon"],
                "mib_per_min": round((b["pss"] - a["pss"]) / minutes, 2),
            }
        )
    table.append(
        {
            "process": "all",
            "pss_start": first["pss"],
            "pss_end": last["pss"],
            "mib_per_min": round((last["pss"] - first["pss"]) / minutes, 2),
        }
    )
    return table


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
