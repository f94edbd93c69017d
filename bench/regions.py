"""`regions`: what the second recognizer (global_ocr, Latin plates) costs beside LPRNet.

Per plate, in this process on one thread as `limit` measures stages: the bench frames' plates
(detected, cut as plate_recognition cuts them) read by STN + LPRNet and by global_ocr, one plate
per ONNX Runtime run and `batch` per run; CPU ms per plate.

Per 1080p frame through Triton, as `pipeline` measures ours (client and server CPU together): the
same frames read for today's `ru` (LPRNet alone), a single Latin region (global_ocr alone) and
`auto` (both), each plate read through its region's formats in the client as the worker does; the
arms alternate round by round, and each one's CPU per frame is given as a ratio to `ru`. The
recognizers' batches in Triton (its statistics) show whether dynamic batching merged plates.
"""

from __future__ import annotations

import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from bench.cpu import meter
from bench.frames import BenchFrame
from bench.limit import InProcessPipeline, opencv_threads
from bench.pipeline import BenchError, Ours, interleaved
from bench.report import ratio
from stream_worker.contracts.plate_formats import DEFAULT_REGION, Region, region
from stream_worker.plates.reading import read_plate

# The targets: CPU per frame over today's (ru), in a single Latin region and in auto.
SINGLE_REGION_TARGET = 1.10
AUTO_TARGET = 1.25
GLOBAL_MODEL = "global_ocr"
RECOGNIZER_MODELS = ("lprnet", GLOBAL_MODEL)
PLATES_PER_RUN = 32  # the batched figure: a middle one of global_ocr's preferred batch sizes
PLATES_TIMED = 128  # each figure's plates: the bench frames' few plates, repeated


class RegionArm(Ours):
    """Ours, asking Triton for a region's recognizers and reading each plate through its formats."""

    def __init__(self, chosen: Region, grpc_url: str, batch: int, concurrency: int, cpu: Any) -> None:
        super().__init__(grpc_url, batch, concurrency, cpu)
        self.region = chosen
        self.name = f"ours-{chosen.code}"

    def settings(self) -> dict[str, Any]:
        return {
            **super().settings(),
            "region": self.region.code,
            "recognizers": list(self.region.recognizers),
        }

    def handle(self, frames: Sequence[BenchFrame]) -> int:
        results = self.client.recognize(
            [frame.jpeg for frame in frames], recognizers=[self.region.recognizers] * len(frames)
        )
        failed = [result.status for result in results if not result.ok]
        if failed:
            raise BenchError(f"plate_recognition failed frames: {failed[:3]}")
        for result in results:
            for plate in result.plates:
                read_plate(self.region, plate.lprnet_probs, plate.global_probs)
        return sum(1 for result in results if result.plates)

    def run(self, frames: Sequence[BenchFrame]) -> Any:
        measurement = super().run(frames)
        measurement.system = self.name
        return measurement


def global_crop(pipeline: InProcessPipeline, image: np.ndarray, quad: np.ndarray) -> np.ndarray:
    """The plate as plate_recognition cuts it for global_ocr (its config's margins), 128x64 RGB."""
    margins = (
        float(pipeline.parameters.get("global_crop_vertical_margin", 0.1)),
        float(pipeline.parameters.get("global_crop_horizontal_margin", 0.04)),
    )
    return pipeline.frames.global_crop(image, quad, *margins)


def _cpu_ms_per_plate(run: Any, crops: np.ndarray, per_run: int) -> float:
    started = time.process_time()
    for start in range(0, len(crops), per_run):
        run(crops[start : start + per_run])
    return round((time.process_time() - started) * 1000 / len(crops), 2)


def plate_costs(
    pipeline: InProcessPipeline, frames: Sequence[BenchFrame], batch: int = PLATES_PER_RUN
) -> dict[str, Any]:
    """CPU ms per plate of the STN, of LPRNet (on the STN's output), their sum, and of global_ocr,
    one plate per run and `batch` per run."""
    path = pipeline.repository / GLOBAL_MODEL / "1" / "model.onnx"
    if not path.is_file():
        raise BenchError(f"{path} missing: run `stream-worker models prepare`")
    session = pipeline.session(GLOBAL_MODEL)
    name = session.get_inputs()[0].name
    with opencv_threads(1):
        images, owners, quads = pipeline.locate([frame.jpeg for frame in frames])
        if not quads:
            raise BenchError("the bench frames gave no plate to read")
        pairs = list(zip(owners, quads, strict=True))
        lprnet_crops = np.stack([pipeline.lprnet_crop(images[owner], quad) for owner, quad in pairs])
        global_crops = np.stack([global_crop(pipeline, images[owner], quad) for owner, quad in pairs])
        plates = max(PLATES_TIMED, len(pairs))
        lprnet_crops = np.resize(lprnet_crops, (plates, *lprnet_crops.shape[1:]))
        global_crops = np.resize(global_crops, (plates, *global_crops.shape[1:]))

        rectified = np.concatenate(pipeline.rectify(lprnet_crops))

        def stn(crops: np.ndarray) -> None:
            pipeline.rectify(crops)

        def lprnet(crops: np.ndarray) -> None:
            pipeline.lprnet_logits([crops])

        def global_ocr(crops: np.ndarray) -> None:
            session.run(None, {name: crops})

        stn(lprnet_crops[:batch])  # warm-up: first runs allocate
        lprnet(rectified[:batch])
        global_ocr(global_crops[:batch])
        runs = {
            "stn": (stn, lprnet_crops),
            "lprnet": (lprnet, rectified),
            "global_ocr": (global_ocr, global_crops),
        }
        costs = {
            model: {
                "one_per_run": _cpu_ms_per_plate(run, crops, 1),
                "batched": _cpu_ms_per_plate(run, crops, batch),
            }
            for model, (run, crops) in runs.items()
        }
        costs["stn_lprnet"] = {
            per: round(costs["stn"][per] + costs["lprnet"][per], 2) for per in costs["stn"]
        }
    return {
        "plates": plates,
        "distinct_plates": len(pairs),
        "plates_per_batched_run": batch,
        "onnx_intra_op_threads": 1,
        "cpu_ms_per_plate": costs,
        "global_over_lprnet_batched": ratio(costs["global_ocr"]["batched"], costs["stn_lprnet"]["batched"]),
    }


def model_batches(http_url: str) -> dict[str, dict[str, int]]:
    """Triton's counts for the recognizers: plates inferred and runs executed (their ratio: the
    mean batch dynamic batching made)."""
    counts = {}
    for model in RECOGNIZER_MODELS:
        with urllib.request.urlopen(f"http://{http_url}/v2/models/{model}/stats", timeout=10) as answer:
            stats = orjson.loads(answer.read())["model_stats"]
        counts[model] = {
            "inferences": sum(int(s.get("inference_count", 0)) for s in stats),
            "executions": sum(int(s.get("execution_count", 0)) for s in stats),
        }
    return counts


def _batching(before: dict[str, dict[str, int]], after: dict[str, dict[str, int]]) -> dict[str, Any]:
    figures = {}
    for model in RECOGNIZER_MODELS:
        inferences = after[model]["inferences"] - before[model]["inferences"]
        executions = after[model]["executions"] - before[model]["executions"]
        figures[model] = {
            "plates": inferences,
            "runs": executions,
            "mean_batch": round(inferences / executions, 2) if executions else None,
        }
    return figures


def run_regions(
    repository: Path,
    grpc_url: str,
    http_url: str,
    triton_pid: int,
    frames: Sequence[BenchFrame],
    rounds: int,
    batch: int,
    concurrency: int,
    latin_region: str,
    model_config_name: str | None = None,
) -> dict[str, Any]:
    """Per plate in process, then per frame through Triton for ru, `latin_region` and auto."""
    pipeline = InProcessPipeline(repository, model_config_name)
    per_plate = plate_costs(pipeline, [frame for frame in frames if frame.has_plate])
    cpu = meter(groups=[triton_pid])
    arms = [
        RegionArm(region(code), grpc_url, batch, concurrency, cpu)
        for code in (DEFAULT_REGION, latin_region, "auto")
    ]
    before = model_batches(http_url)
    rows, merged = interleaved(arms, frames, rounds, warmup=frames[: max(batch, 2)])
    batching = _batching(before, model_batches(http_url))
    systems = {name: measurement.summary() for name, measurement in merged.items()}
    today = systems[arms[0].name]["cpu_ms_per_frame"]
    cpu_over_today = {name: ratio(system["cpu_ms_per_frame"], today) for name, system in systems.items()}
    return {
        "settings": {
            "frames_per_round": len(frames),
            "rounds": rounds,
            "order": "per round: " + ", then ".join(systems),
            **{arm.name: arm.settings() for arm in arms},
        },
        "per_plate": per_plate,
        "rounds": rows,
        "systems": systems,
        "cpu_per_frame_over_ru": cpu_over_today,
        "targets": {"single_region": SINGLE_REGION_TARGET, "auto": AUTO_TARGET},
        "targets_met": {
            "single_region": (cpu_over_today[arms[1].name] or 0) <= SINGLE_REGION_TARGET,
            "auto": (cpu_over_today[arms[2].name] or 0) <= AUTO_TARGET,
        },
        "triton_batches": batching,
    }
