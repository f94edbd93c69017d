"""`pipeline`: Triton only. Our micro-batched `plate_recognition` against the original design.

Ours: JPEG bytes over gRPC, `batch` frames per request, `concurrency` requests in flight, through
the worker's own client. Baseline: the original design's client, per frame: decode the JPEG,
resize to 1920x1080, one HTTP request with the raw uint8 image to the `baseline` BLS (the same
plate detector in the model's own ONNX Runtime session at one canvas per run, then STN, then
LPRNet, blocking, for that frame only; see baseline_repository/baseline/1/model.py), configured as
the original was (Triton's default of one instance); `baseline_per_core` is the same code with one
instance per core. Same frames, same server process, same cores, same client concurrency; the
systems alternate round by round (A/B/C/A/B/C) so that other load on the machine hits them alike.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import cv2
import numpy as np
import tritonclient.http as httpclient

from bench.cpu import CpuMeter, meter
from bench.frames import CAMERA_HEIGHT, CAMERA_WIDTH, BenchFrame
from bench.report import latency_ms, rate, ratio
from stream_worker.triton_client import PlateRecognitionClient

# The original design as configured there (no instance_group: Triton's default of one instance),
# and the same code with one instance per core.
BASELINE_MODELS = ("baseline", "baseline_per_core")
REQUEST_TIMEOUT_S = 600.0


class BenchError(RuntimeError):
    """A benchmark run went wrong (a frame failed, a server refused): its figures would lie."""


@dataclass
class Measurement:
    """One timed run of one system over a list of frames."""

    system: str
    frames: int
    seconds: float
    frame_latencies_s: list[float]
    frames_with_plates: int
    cpu_seconds: float

    def summary(self) -> dict[str, Any]:
        return {
            "system": self.system,
            "frames": self.frames,
            "seconds": round(self.seconds, 3),
            "frames_per_s": rate(self.frames, self.seconds),
            **latency_ms(self.frame_latencies_s),
            "frames_with_plates": self.frames_with_plates,
            **cpu_figures(self.cpu_seconds, self.frames),
        }


def cpu_figures(cpu_seconds: float, frames: int) -> dict[str, float | None]:
    """CPU per frame, and the rate it allows with every usable core busy on this work only."""
    per_frame = cpu_seconds / frames if frames else None
    return {
        "cpu_s": round(cpu_seconds, 2),
        "cpu_ms_per_frame": round(per_frame * 1000, 1) if per_frame else None,
        "cpu_bound_fps": round(len(os.sched_getaffinity(0)) / per_frame, 2) if per_frame else None,
    }


def merge(system: str, runs: Sequence[Measurement]) -> Measurement:
    """All rounds of a system as one: frames and seconds summed, latencies pooled."""
    return Measurement(
        system,
        sum(r.frames for r in runs),
        sum(r.seconds for r in runs),
        [latency for r in runs for latency in r.frame_latencies_s],
        sum(r.frames_with_plates for r in runs),
        sum(r.cpu_seconds for r in runs),
    )


def batches(frames: Sequence[BenchFrame], size: int) -> list[list[BenchFrame]]:
    return [list(frames[start : start + size]) for start in range(0, len(frames), size)]


def timed_parallel(
    system: str,
    jobs: Sequence[Sequence[BenchFrame]],
    concurrency: int,
    handle: Callable[[Sequence[BenchFrame]], int],
    cpu: CpuMeter,
) -> Measurement:
    """Run `handle` (returns the job's frames with plates) over `jobs`, `concurrency` at a time.

    Each frame's latency is its job's: the time from sending until its answer is back. `cpu`
    reads the CPU seconds of the processes doing the work (client and servers).
    """

    def one(job: Sequence[BenchFrame]) -> tuple[float, int, int]:
        started = time.perf_counter()
        with_plates = handle(job)
        return time.perf_counter() - started, len(job), with_plates

    cpu_before = cpu()
    started = time.perf_counter()
    with ThreadPoolExecutor(concurrency, thread_name_prefix=system) as pool:
        outcomes = list(pool.map(one, jobs))
    seconds = time.perf_counter() - started
    cpu_seconds = cpu() - cpu_before
    return Measurement(
        system,
        sum(count for _, count, _ in outcomes),
        seconds,
        [latency for latency, count, _ in outcomes for _ in range(count)],
        sum(with_plates for _, _, with_plates in outcomes),
        cpu_seconds,
    )


class Ours:
    """`plate_recognition` through the worker's client: one gRPC request per micro-batch."""

    def __init__(self, grpc_url: str, batch: int, concurrency: int, cpu: CpuMeter) -> None:
        self.client = PlateRecognitionClient(grpc_url, timeout_s=REQUEST_TIMEOUT_S)
        self.batch = batch
        self.concurrency = concurrency
        self.cpu = cpu

    def settings(self) -> dict[str, Any]:
        return {"transport": "grpc", "frames_per_request": self.batch, "requests_in_flight": self.concurrency}

    def handle(self, frames: Sequence[BenchFrame]) -> int:
        results = self.client.recognize([frame.jpeg for frame in frames])
        failed = [result.status for result in results if not result.ok]
        if failed:
            raise BenchError(f"plate_recognition failed frames: {failed[:3]}")
        return sum(1 for result in results if result.plates)

    def run(self, frames: Sequence[BenchFrame]) -> Measurement:
        return timed_parallel("ours", batches(frames, self.batch), self.concurrency, self.handle, self.cpu)


class Baseline:
    """The original design's client: decode, resize to 1920x1080, one HTTP request per frame."""

    def __init__(
        self, http_url: str, concurrency: int, cpu: CpuMeter, model: str = BASELINE_MODELS[0]
    ) -> None:
        self.http_url = http_url
        self.concurrency = concurrency
        self.cpu = cpu
        self.model = model
        self._local = threading.local()  # tritonclient's HTTP client is not thread-safe: one per thread

    def settings(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "transport": "http",
            "frames_per_request": 1,
            "requests_in_flight": self.concurrency,
            "image": f"uint8 {CAMERA_WIDTH}x{CAMERA_HEIGHT}x3, decoded and resized by the client",
        }

    def _client(self) -> httpclient.InferenceServerClient:
        if not hasattr(self._local, "client"):
            self._local.client = httpclient.InferenceServerClient(
                self.http_url, connection_timeout=REQUEST_TIMEOUT_S, network_timeout=REQUEST_TIMEOUT_S
            )
        return self._local.client

    def handle(self, frames: Sequence[BenchFrame]) -> int:
        (frame,) = frames
        image = cv2.imdecode(np.frombuffer(frame.jpeg, np.uint8), cv2.IMREAD_COLOR)
        if image is None:
            raise BenchError(f"baseline client could not decode {frame.name}")
        image = cv2.resize(image, (CAMERA_WIDTH, CAMERA_HEIGHT), interpolation=cv2.INTER_LINEAR)
        tensor = httpclient.InferInput("image", list(image.shape), "UINT8")
        tensor.set_data_from_numpy(image, binary_data=True)
        outputs = [httpclient.InferRequestedOutput(name, binary_data=True) for name in ("boxes", "texts")]
        result = self._client().infer(self.model, [tensor], outputs=outputs)
        texts = result.as_numpy("texts")
        return int(texts is not None and any(text for text in texts.reshape(-1)))

    def run(self, frames: Sequence[BenchFrame]) -> Measurement:
        jobs = [[frame] for frame in frames]
        return timed_parallel(self.model, jobs, self.concurrency, self.handle, self.cpu)


def interleaved(
    systems: Sequence[Any], frames: Sequence[BenchFrame], rounds: int, warmup: Sequence[BenchFrame]
) -> tuple[list[dict[str, Any]], dict[str, Measurement]]:
    """A/B/A/B: every round runs each system over the same frames, one after the other.

    An untimed warm-up first (model sessions, connections, caches). Returns the per-round rows and
    each system's rounds merged.
    """
    for system in systems:
        system.run(warmup)
    rows: list[dict[str, Any]] = []
    measured: dict[str, list[Measurement]] = {}
    for round_index in range(rounds):
        for system in systems:
            measurement = system.run(frames)
            measured.setdefault(measurement.system, []).append(measurement)
            rows.append({"round": round_index + 1, **measurement.summary()})
    return rows, {name: merge(name, runs) for name, runs in measured.items()}


def run_pipeline(
    grpc_url: str,
    http_url: str,
    triton_pid: int,
    frames: Sequence[BenchFrame],
    rounds: int,
    batch: int,
    concurrency: int,
    baseline_concurrency: int,
) -> dict[str, Any]:
    # All clients run in this process, all servers in Triton's process group.
    cpu = meter(groups=[triton_pid])
    ours = Ours(grpc_url, batch, concurrency, cpu)
    baselines = [Baseline(http_url, baseline_concurrency, cpu, model) for model in BASELINE_MODELS]
    rows, merged = interleaved([ours, *baselines], frames, rounds, warmup=frames[: max(batch, 2)])
    summaries = {name: measurement.summary() for name, measurement in merged.items()}
    return {
        "settings": {
            "frames_per_round": len(frames),
            "rounds": rounds,
            "order": "per round: " + ", then ".join(summaries),
            "ours": ours.settings(),
            **{baseline.model: baseline.settings() for baseline in baselines},
        },
        # What crosses the network per frame: the camera's JPEG, or the decoded image.
        "request_bytes_per_frame": {
            "ours": round(sum(len(frame.jpeg) for frame in frames) / len(frames)),
            "baseline": CAMERA_WIDTH * CAMERA_HEIGHT * 3,
        },
        "rounds": rows,
        "systems": summaries,
        # ours / baseline in frames/s; baseline / ours in CPU per frame (above 1: ours is better).
        "ratio_frames_per_s": {
            model: ratio(summaries["ours"]["frames_per_s"], summaries[model]["frames_per_s"])
            for model in BASELINE_MODELS
        },
        "ratio_cpu_per_frame": {
            model: ratio(summaries[model]["cpu_ms_per_frame"], summaries["ours"]["cpu_ms_per_frame"])
            for model in BASELINE_MODELS
        },
    }
