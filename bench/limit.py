"""`limit`: the same computation with no serving at all, the compute floor of this machine.

Decode, detect, crop, STN and LPRNet in this process: the model repository's own detector code
(`plate_detector/1/detectors.py`, with the parameters of its config.pbtxt), its crop/CTC helpers
(`plate_recognition/1/frames.py`) and its ONNX files through onnxruntime. No Triton, no gRPC, no
shared memory, no Kafka: what is left is what any serving design must pay.

How it uses the cores: `workers` micro-batches in flight (default 2, one per core), each going
through decode -> detect -> one STN run -> one LPRNet run, with its frames decoded and detected
one by one on a shared pool of `workers` threads, so that no core idles while a batch count does
not divide evenly. OpenCV and onnxruntime release the GIL in their kernels, so threads run in
parallel like Triton's two detector processes do, without the cost of moving decoded images
between processes. Each thread has its own Haar
classifier (OpenCV does not promise that one is thread-safe); the ONNX sessions are shared
(onnxruntime's run is thread-safe), one intra-op thread each so the workers do not oversubscribe.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from pathlib import Path
from types import ModuleType
from typing import Any

import cv2
import numpy as np
import onnxruntime as ort

from bench.cpu import meter
from bench.frames import BenchFrame
from bench.pipeline import BenchError, Measurement, Ours, batches, interleaved, timed_parallel
from bench.report import ratio

MAX_PIXELS = 40_000_000
STAGES = ("decode", "detect", "crop", "stn", "lprnet", "ctc")
PROFILE_FRAMES = 16
_PARAMETER = re.compile(
    r'parameters:\s*\{\s*key:\s*"(?P<key>[^"]+)"\s*,?\s*value:\s*\{\s*string_value:\s*"(?P<value>[^"]*)"\s*\}\s*\}'
)


def load_model_file(repository: Path, model: str, name: str) -> ModuleType:
    """A model's helper module loaded by path, the way the Python backend loads it."""
    path = repository / model / "1" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"bench_{model}_{name}", path)
    if spec is None or spec.loader is None or not path.is_file():
        raise BenchError(f"{path} not found: is --repository a stream_worker model repository?")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def config_path(repository: Path, model: str, model_config_name: str | None) -> Path:
    if model_config_name:
        return repository / model / "configs" / f"{model_config_name}.pbtxt"
    return repository / model / "config.pbtxt"


def config_parameters(path: Path) -> dict[str, str]:
    """The `parameters` of a config.pbtxt (string values), as the Python backend hands them over."""
    return {match["key"]: match["value"] for match in _PARAMETER.finditer(path.read_text())}


class StageClock:
    """Process CPU seconds per stage. Process-wide, so OpenCV's own threads count: only meaningful
    while a single thread does the work."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)

    @contextlib.contextmanager
    def stage(self, name: str) -> Iterator[None]:
        started = time.process_time()
        try:
            yield
        finally:
            self.seconds[name] += time.process_time() - started


def _untimed(_name: str) -> contextlib.AbstractContextManager[None]:
    return contextlib.nullcontext()


@contextlib.contextmanager
def opencv_threads(threads: int) -> Iterator[None]:
    """OpenCV's thread count for this process, for a while (it is process-wide)."""
    before = cv2.getNumThreads()
    cv2.setNumThreads(threads)
    try:
        yield
    finally:
        cv2.setNumThreads(before)


class InProcessPipeline:
    """decode -> detect -> crop -> STN -> LPRNet for a micro-batch, in the calling thread."""

    def __init__(
        self, repository: Path, model_config_name: str | None = None, providers: Sequence[str] = ()
    ) -> None:
        self.repository = repository
        self.detectors = load_model_file(repository, "plate_detector", "detectors")
        self.frames = load_model_file(repository, "plate_recognition", "frames")
        self.detector_parameters = config_parameters(
            config_path(repository, "plate_detector", model_config_name)
        )
        self.providers = list(providers) or ["CPUExecutionProvider"]
        self.stn = self._session("stn")
        self.lprnet = self._session("lprnet")
        self._local = threading.local()

    def _session(self, model: str) -> ort.InferenceSession:
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        path = self.repository / model / "1" / "model.onnx"
        if not path.is_file():
            raise BenchError(f"{path} missing: run `stream-worker models prepare`")
        return ort.InferenceSession(str(path), options, providers=self.providers)

    def _detector(self) -> Any:
        if not hasattr(self._local, "detector"):
            self._local.detector = self.detectors.make_detector(
                self.detector_parameters, self.repository / "plate_detector" / "1"
            )
        return self._local.detector

    def settings(self) -> dict[str, Any]:
        return {
            "detector_parameters": self.detector_parameters,
            "onnx_providers_asked": self.providers,
            "onnx_providers_used": self.stn.get_providers(),
            "onnx_intra_op_threads": 1,
        }

    def _decode(self, jpeg: bytes) -> np.ndarray:
        return self.frames.decode_jpeg(jpeg, MAX_PIXELS)

    def _detect(self, image: np.ndarray) -> np.ndarray:
        return self._detector().detect(image)[0]

    def recognize(
        self, jpegs: Sequence[bytes], clock: StageClock | None = None, pool: Executor | None = None
    ) -> list[list[str]]:
        """The plate texts of each frame; `clock` times each stage; `pool` decodes and detects."""
        stage: Callable[[str], contextlib.AbstractContextManager[None]] = clock.stage if clock else _untimed
        each = pool.map if pool else map
        with stage("decode"):
            images = list(each(self._decode, jpegs))
        with stage("detect"):
            detections = list(each(self._detect, images))
        owners: list[int] = []
        crops: list[np.ndarray] = []
        with stage("crop"):
            for index, (image, boxes) in enumerate(zip(images, detections, strict=True)):
                for box in boxes:
                    owners.append(index)
                    crops.append(self.frames.plate_tensor(image, box))
        texts: list[list[str]] = [[] for _ in images]
        if crops:
            with stage("stn"):
                (rectified,) = self.stn.run(["output"], {"input": np.stack(crops)})
            with stage("lprnet"):
                (logits,) = self.lprnet.run(["logits"], {"input": rectified})
            with stage("ctc"):
                for owner, plate_logits in zip(owners, logits, strict=True):
                    text, _ = self.frames.ctc_greedy_decode(plate_logits)
                    if text:
                        texts[owner].append(text)
        return texts


def stage_profile(pipeline: InProcessPipeline, frames: Sequence[BenchFrame], batch: int) -> dict[str, Any]:
    """Where the compute goes: CPU per frame of each stage, one batch at a time in this thread.

    OpenCV runs single-threaded meanwhile, so that the figures are the work itself, without the
    cost of splitting one image over threads. `detector_bound_frames_per_s` is then what every
    core running the detector and nothing else would reach: no design that runs this detector on
    every frame, serving or not, can exceed it.
    """
    clock = StageClock()
    with opencv_threads(1):
        for job in batches(frames, batch):
            pipeline.recognize([frame.jpeg for frame in job], clock)
    per_frame = {name: clock.seconds[name] / len(frames) for name in STAGES}
    total = sum(per_frame.values())
    return {
        "frames": len(frames),
        "opencv_threads": 1,
        "stage_cpu_ms_per_frame": {name: round(seconds * 1000, 2) for name, seconds in per_frame.items()},
        "total_cpu_ms_per_frame": round(total * 1000, 1),
        "detect_share": round(per_frame["detect"] / total, 3),
        "detector_bound_frames_per_s": round(len(os.sched_getaffinity(0)) / per_frame["detect"], 2),
    }


class Limit:
    """The in-process pipeline over micro-batches, `workers` batches at a time.

    OpenCV runs single-threaded meanwhile: with one worker thread per core, its own threads would
    only compete with them (measured: 11.7 frames/s single-threaded against 10.9 with OpenCV's
    default threads, 166 against 178 CPU ms per frame), and the floor is the best setting.
    """

    def __init__(self, pipeline: InProcessPipeline, batch: int, workers: int) -> None:
        self.pipeline = pipeline
        self.batch = batch
        self.workers = workers
        self.cpu = meter()  # this process only
        self.frame_pool = ThreadPoolExecutor(workers, thread_name_prefix="limit-frames")

    def settings(self) -> dict[str, Any]:
        return {
            "frames_per_batch": self.batch,
            "worker_threads": self.workers,
            "opencv_threads": 1,
            **self.pipeline.settings(),
        }

    def handle(self, frames: Sequence[BenchFrame]) -> int:
        texts = self.pipeline.recognize([frame.jpeg for frame in frames], pool=self.frame_pool)
        return sum(1 for plates in texts if plates)

    def run(self, frames: Sequence[BenchFrame]) -> Measurement:
        with opencv_threads(1):
            return timed_parallel("limit", batches(frames, self.batch), self.workers, self.handle, self.cpu)


def run_limit(
    repository: Path,
    grpc_url: str,
    triton_pid: int,
    frames: Sequence[BenchFrame],
    rounds: int,
    batch: int,
    workers: int,
    concurrency: int,
    model_config_name: str | None = None,
    providers: Sequence[str] = (),
) -> dict[str, Any]:
    """The floor, alternating with ours end to end through Triton (same frames, same batches)."""
    limit = Limit(InProcessPipeline(repository, model_config_name, providers), batch, workers)
    ours = Ours(grpc_url, batch, concurrency, meter(groups=[triton_pid]))
    try:
        rows, merged = interleaved([limit, ours], frames, rounds, warmup=frames[: max(batch, 2)])
    finally:
        limit.frame_pool.shutdown()
    profile = stage_profile(limit.pipeline, frames[:PROFILE_FRAMES], batch)
    limit_fps = merged["limit"].summary()["frames_per_s"]
    ours_fps = merged["ours"].summary()["frames_per_s"]
    return {
        "settings": {
            "frames_per_round": len(frames),
            "rounds": rounds,
            "order": "A/B per round: limit then ours",
            "limit": limit.settings(),
            "ours": ours.settings(),
        },
        "rounds": rows,
        "systems": {name: measurement.summary() for name, measurement in merged.items()},
        "limit_frames_per_s": limit_fps,
        "ours_fraction_of_limit": ratio(ours_fps, limit_fps),
        "ours_cpu_fraction_of_limit": ratio(
            merged["limit"].summary()["cpu_ms_per_frame"], merged["ours"].summary()["cpu_ms_per_frame"]
        ),
        "stage_profile": profile,
    }
