"""`limit`: the same computation with no serving at all, the compute floor of this machine.

Decode, letterbox, detect, boxes (decoding + NMS), crop (corner warp), STN, LPRNet and CTC in this
process: the model repository's own code (`plate_recognition/1/detections.py` and `frames.py`), the
parameters of its config.pbtxt (scales, thresholds, margins, batch limits) and its ONNX files
through onnxruntime. No Triton, no gRPC, no shared memory, no Kafka: what is left is what any
serving design must pay.

How it uses the cores: `workers` micro-batches in flight (default 2, one per core). Each one's
frames are decoded and letterboxed one by one on a shared pool of `workers` threads; then, as
`plate_recognition` does, all its canvases (frames x scales) go through the detector as one run
(chunked only beyond `detector_max_batch`), and all its plates through one STN and one LPRNet run.
OpenCV and onnxruntime release the GIL in their kernels, so the threads run in parallel. The ONNX
sessions are shared (onnxruntime's run is thread-safe), one intra-op thread each, so that the
workers do not oversubscribe the cores. A batch count that `workers` does not divide leaves a
core idle at the end: give a multiple (96 frames of 16 with 2 workers: 6 batches).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import onnxruntime as ort

from bench.cpu import meter
from bench.frames import BenchFrame
from bench.pipeline import BenchError, Measurement, Ours, batches, interleaved, timed_parallel
from bench.report import ratio
from bench.repository import config_parameters, config_path, load_model_file

STAGES = ("decode", "letterbox", "detect", "boxes", "crop", "stn", "lprnet", "ctc")
PROFILE_FRAMES = 16

__all__ = ["InProcessPipeline", "Limit", "config_parameters", "run_limit", "stage_profile"]


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
    """decode -> letterbox -> detect -> boxes -> crop -> STN -> LPRNet -> CTC for a micro-batch."""

    def __init__(
        self, repository: Path, model_config_name: str | None = None, providers: Sequence[str] = ()
    ) -> None:
        self.repository = repository
        self.detections = load_model_file(repository, "plate_recognition", "detections")
        self.frames = load_model_file(repository, "plate_recognition", "frames")
        self.parameters = config_parameters(config_path(repository, "plate_recognition", model_config_name))
        self.max_pixels = int(self.parameters.get("max_pixels", self.frames.DEFAULT_MAX_PIXELS))
        self.max_decoded_pixels = int(
            self.parameters.get("max_decoded_pixels", self.frames.DEFAULT_MAX_DECODED_PIXELS)
        )
        self.scales: tuple[float, ...] = self.detections.parse_scales(
            self.parameters.get("detector_scales", self.detections.DEFAULT_SCALES)
        )
        self.margins: tuple[int, ...] = self.detections.parse_margins(
            self.parameters.get("detector_margins", self.detections.DEFAULT_MARGINS), len(self.scales)
        )
        self.score_threshold = float(self.parameters.get("score_threshold", 0.25))
        self.nms_iou = float(self.parameters.get("nms_iou", 0.5))
        self.detector_max_batch = int(self.parameters.get("detector_max_batch", 32))
        self.recognizer_max_batch = int(self.parameters.get("recognizer_max_batch", 64))
        self.vertical_margin = float(self.parameters.get("crop_vertical_margin", 0.2))
        self.horizontal_margin = float(self.parameters.get("crop_horizontal_margin", 0.08))
        self.providers = list(providers) or ["CPUExecutionProvider"]
        self.model_config_name = model_config_name
        self.graphs = load_model_file(repository, "lprnet", "graphs")
        self.cpu_flags = self.graphs.cpu_flags()
        self.graph_files: dict[str, str] = {}
        detector_model = self.parameters.get("detector_model", "plate_detector")
        self.detector_parameters = config_parameters(
            config_path(repository, detector_model, model_config_name)
        )
        # plate_detector cuts each batch Triton hands it into ONNX Runtime runs of this size (0: all).
        self.detector_run_batch = int(self.detector_parameters.get("run_batch_size", 0))
        self.detector = self.session(detector_model)
        self.stn = self.session(self.parameters.get("stn_model", "stn"))
        self.lprnet = self.session(self.parameters.get("lprnet_model", "lprnet"))
        self.detector_input = self.detector.get_inputs()[0].name

    def session(self, model: str) -> ort.InferenceSession:
        """The model's graph as Triton's model.py picks it for this host (graphs.py)."""
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        parameters = config_parameters(config_path(self.repository, model, self.model_config_name))
        version_dir = self.repository / model / "1"
        path = self.graphs.onnx_file(version_dir, parameters, self.providers, self.cpu_flags)
        if not path.is_file():
            raise BenchError(f"{path} missing: run `stream-worker models prepare`")
        self.graph_files[model] = path.name
        return ort.InferenceSession(str(path), options, providers=self.providers)

    def settings(self) -> dict[str, Any]:
        return {
            "recognition_parameters": self.parameters,
            "detector_parameters": self.detector_parameters,
            "detector_images_per_run": self.detector_run_batch or self.detector_max_batch,
            "detector_scales": list(self.scales),
            "detector_margins": list(self.margins),
            "onnx_providers_asked": self.providers,
            "onnx_providers_used": self.detector.get_providers(),
            "onnx_graph_files": self.graph_files,
            "onnx_intra_op_threads": 1,
        }

    def decode(self, jpeg: bytes) -> np.ndarray:
        """As plate_recognition decodes (reduced beyond `max_decoded_pixels`: 1080p at 1/2)."""
        plan = self.frames.plan_decode(jpeg, self.max_pixels, self.max_decoded_pixels)
        return self.frames.decode_planned(jpeg, plan)

    def detect(self, canvases: Any, per_run: int | None = None) -> list[np.ndarray]:
        """The detector's rows for every view of `canvases` (detections.Canvases), `per_run`
        canvases of one shape per ONNX Runtime run (default: as plate_detector runs ours: requests
        of `detector_max_batch` cut into `run_batch_size`)."""
        size = per_run or min(self.detector_run_batch or self.detector_max_batch, self.detector_max_batch)
        rows: list[np.ndarray] = [np.zeros((0, 15), np.float32)] * len(canvases.placements)
        for batch in canvases.batches:
            for start in range(0, len(batch.views), size):
                (found,) = self.detector.run(None, {self.detector_input: batch.pixels[start : start + size]})
                for view, view_rows in zip(batch.views[start : start + size], found, strict=True):
                    rows[view] = view_rows
        return rows

    def locate(
        self,
        jpegs: Sequence[bytes],
        stage: Callable[[str], contextlib.AbstractContextManager[None]] = _untimed,
        pool: Executor | None = None,
    ) -> tuple[list[np.ndarray], list[int], list[np.ndarray]]:
        """The decoded frames, and for every plate found its frame's index and its four corners."""
        each = pool.map if pool else map
        with stage("decode"):
            images = list(each(self.decode, jpegs))
        scales = len(self.scales)
        with stage("letterbox"):
            canvases = self.detections.Canvases(
                [(image.shape[1], image.shape[0]) for image in images], self.scales, self.margins
            )
            list(each(canvases.draw, range(len(images)), images))
        with stage("detect"):
            rows = self.detect(canvases)
        with stage("boxes"):
            sizes = [(image.shape[1], image.shape[0]) for image in images]
            found = self.detections.frame_detections(
                rows, canvases.placements, sizes, scales, self.score_threshold, self.nms_iou
            )
        owners: list[int] = []
        quads: list[np.ndarray] = []
        for index, plates in enumerate(found):
            for corners, box in zip(plates.corners, plates.boxes, strict=True):
                owners.append(index)
                quads.append(self.detections.usable_corners(corners, box))
        return images, owners, quads

    def lprnet_crop(self, image: np.ndarray, quad: np.ndarray) -> np.ndarray:
        """The plate as STN + LPRNet take it (float [3, 24, 94])."""
        return self.frames.plate_tensor(image, quad, self.vertical_margin, self.horizontal_margin)

    def rectify(self, crops: np.ndarray) -> list[np.ndarray]:
        """STN over a stack of crops, `recognizer_max_batch` per run."""
        size = self.recognizer_max_batch
        return [
            self.stn.run(["output"], {"input": crops[i : i + size]})[0] for i in range(0, len(crops), size)
        ]

    def lprnet_logits(self, rectified: Sequence[np.ndarray]) -> np.ndarray:
        """LPRNet over STN's runs: the logits of every plate [N, 23, 18]."""
        return np.concatenate([self.lprnet.run(["logits"], {"input": part})[0] for part in rectified])

    def recognize(
        self, jpegs: Sequence[bytes], clock: StageClock | None = None, pool: Executor | None = None
    ) -> list[list[str]]:
        """The plate texts of each frame; `clock` times each stage; `pool` decodes and letterboxes."""
        stage: Callable[[str], contextlib.AbstractContextManager[None]] = clock.stage if clock else _untimed
        images, owners, quads = self.locate(jpegs, stage, pool)
        with stage("crop"):
            crops = [self.lprnet_crop(images[owner], quad) for owner, quad in zip(owners, quads, strict=True)]
        texts: list[list[str]] = [[] for _ in images]
        if crops:
            with stage("stn"):
                rectified = self.rectify(np.stack(crops))
            with stage("lprnet"):
                logits = self.lprnet_logits(rectified)
            with stage("ctc"):
                for owner, plate_logits in zip(owners, logits, strict=True):
                    text, _ = self.frames.ctc_greedy_decode(plate_logits)
                    if text:
                        texts[owner].append(text)
        return texts


def _detector_cost(pipeline: InProcessPipeline, frames: Sequence[BenchFrame], batch: int) -> dict[str, float]:
    """The detector alone at `batch` canvases per run over the frames' canvases: CPU ms per
    canvas, and canvas area per frame in 640x640 canvases (its work grows with the pixels)."""
    images = [pipeline.decode(frame.jpeg) for frame in frames]
    canvases = pipeline.detections.canvases_for(images, pipeline.scales, pipeline.margins)
    started = time.process_time()
    pipeline.detect(canvases, batch)
    seconds = time.process_time() - started
    square = pipeline.detections.INPUT_SIZE**2
    return {
        "cpu_ms_per_canvas": round(seconds * 1000 / len(canvases.placements), 1),
        "cpu_ms_per_square_canvas": round(seconds * 1000 * square / canvases.pixels, 1),
        "square_canvases_per_frame": round(canvases.pixels / square / len(images), 3),
    }


def stage_profile(pipeline: InProcessPipeline, frames: Sequence[BenchFrame], batch: int) -> dict[str, Any]:
    """Where the compute goes: CPU per frame of each stage, one batch at a time in this thread.

    OpenCV and onnxruntime run single-threaded meanwhile, so that the figures are the work itself,
    without the cost of splitting one image over threads. `detector_bound_frames_per_s` is then
    what every core running the detector and nothing else would reach: no design that runs this
    detector on every canvas, serving or not, can exceed it. The detector is also timed alone at
    one canvas per run (how the baseline runs it) on the same canvases.
    """
    clock = StageClock()
    with opencv_threads(1):
        for job in batches(frames, batch):
            pipeline.recognize([frame.jpeg for frame in job], clock)
        single = _detector_cost(pipeline, frames, 1)
    per_frame = {name: clock.seconds[name] / len(frames) for name in STAGES}
    total = sum(per_frame.values())
    canvases = len(pipeline.scales)
    cores = len(os.sched_getaffinity(0))
    return {
        "frames": len(frames),
        "frames_per_batch": batch,
        "opencv_threads": 1,
        "onnx_intra_op_threads": 1,
        "canvases_per_frame": canvases,
        "canvas_area_per_frame": single["square_canvases_per_frame"],
        "stage_cpu_ms_per_frame": {name: round(seconds * 1000, 2) for name, seconds in per_frame.items()},
        "total_cpu_ms_per_frame": round(total * 1000, 1),
        "detect_share": round(per_frame["detect"] / total, 3),
        "detector_images_per_run": pipeline.detector_run_batch or pipeline.detector_max_batch,
        "detector_cpu_ms_per_canvas": {
            "batched": round(per_frame["detect"] * 1000 / canvases, 1),
            "one_per_run": single["cpu_ms_per_canvas"],
            "one_per_run_per_640x640": single["cpu_ms_per_square_canvas"],
        },
        "detector_bound_frames_per_s": round(cores / per_frame["detect"], 2),
        "compute_bound_frames_per_s": round(cores / total, 2),
    }


class Limit:
    """The in-process pipeline over micro-batches, `workers` batches at a time.

    OpenCV runs single-threaded meanwhile: with one worker thread per core, its own threads would
    only compete with them, and the floor is the best setting.
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
