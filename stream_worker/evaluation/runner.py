"""`stream-worker eval`: send a labelled folder through Triton in batches and score every image.

Starts the local Triton (exporting the models first when needed) unless `--url` names a server,
prints one row per image as its batch comes back (a progress bar below them at a terminal), then
the totals. Exit codes: 0 done, 1 unusable folder or labels, Triton unreachable or failing,
report not written; 2 a --min-found / --min-exact rate not reached or a plate worse than in
--baseline; 130 interrupted.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from stream_worker.contracts.plate_formats import UnknownRegionError
from stream_worker.evaluation.compare import compare, comparison_lines, load_images
from stream_worker.evaluation.labels import LabelsError
from stream_worker.evaluation.layouts import Layout
from stream_worker.evaluation.plan import EvalPlan, plan_eval
from stream_worker.evaluation.report import (
    EvalReport,
    country_lines,
    image_row,
    summary_lines,
    table_header,
    write_report,
)
from stream_worker.evaluation.scoring import (
    ImageScore,
    Prediction,
    totals,
    totals_by_country,
    unmet_thresholds,
)
from stream_worker.evaluation.settings import EvalSettings
from stream_worker.launchers.triton import LocalTriton, TritonLaunchError
from stream_worker.media import MediaSupportMissing, as_jpeg
from stream_worker.plates.reading import read_plate
from stream_worker.recognition import FRAME_OK, FrameResult
from stream_worker.terminal import Terminal
from stream_worker.triton_client import PlateRecognitionClient, TritonError

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_BELOW_THRESHOLD = 2
EXIT_INTERRUPTED = 130
TRITON_START_TIMEOUT_S = 300.0


class EvalError(Exception):
    """The evaluation cannot go on; the message says what failed and what to do."""


@contextmanager
def _triton(settings: EvalSettings, console: Terminal) -> Iterator[str]:
    """The gRPC address to evaluate against: `--url`, else a local Triton started for this run."""
    if settings.url is not None:
        yield settings.url
        return
    # Only here: evaluating against a given server needs none of the export machinery.
    from stream_worker.nets.errors import ModelPrepareError
    from stream_worker.nets.prepare import prepare_models
    from stream_worker.nets.weights import default_weights_dir

    with console.step(f"checking the models in {settings.repository} (first run exports them)"):
        try:
            prepare_models(settings.weights_dir or default_weights_dir(), settings.repository)
        except ModelPrepareError as error:
            raise EvalError(str(error)) from error
    server = LocalTriton(settings.repository)
    try:
        with console.step("starting the local Triton"):
            try:
                server.start(timeout_s=TRITON_START_TIMEOUT_S)
            except TritonLaunchError as error:
                raise EvalError(f"the local Triton did not start: {error}") from error
        yield server.grpc_url
    finally:
        server.close()


def _read(path: Path) -> bytes:
    try:
        data = path.read_bytes()
    except OSError as error:
        raise EvalError(f"cannot read image {path}: {error.strerror or error}") from error
    try:
        return as_jpeg(data, "eval on a folder of PNG crops")
    except MediaSupportMissing as error:
        raise EvalError(str(error)) from error


def _predictions(plan: EvalPlan, result: FrameResult) -> list[Prediction]:
    """The frame's plates as scoring sees them: read through the region's formats, or `--raw`."""
    if plan.raw:
        return [Prediction(text=plate.text, box=plate.box) for plate in result.plates]
    predictions = []
    for plate in result.plates:
        try:
            reading = read_plate(plan.region, plate.lprnet_probs, plate.global_probs)
        except ValueError as error:  # Triton answered without the recognizers asked for
            raise EvalError(
                f"Triton's answer cannot be read for region {plan.region.code}: {error}"
            ) from error
        predictions.append(
            Prediction(
                text=reading.text,
                box=plate.box,
                country=reading.country,
                format=reading.format,
                recognizer=reading.recognizer,
            )
        )
    return predictions


def _evaluate(settings: EvalSettings, plan: EvalPlan, url: str, console: Terminal) -> EvalReport:
    """Every labelled item through Triton in batches of `settings.batch_size`, scored and shown."""
    items = plan.items
    scores: list[ImageScore] = []
    with PlateRecognitionClient(url, timeout_s=settings.timeout_s, tls=settings.tls) as client:
        if not client.is_ready():
            raise EvalError(
                f"Triton at {url} is not ready (server or model plate_recognition); start one with "
                "`stream-worker triton`, or leave --url out to start the local one"
            )
        console.line(table_header(), style="bold")
        try:
            with console.counters({"images": len(items)}) as bars:
                for start in range(0, len(items), settings.batch_size):
                    batch = items[start : start + settings.batch_size]
                    results = client.recognize(
                        [item.jpeg or _read(settings.folder / item.file) for item in batch],
                        recognizers=[plan.region.recognizers] * len(batch),
                        frame_is_plate=[plan.layout is Layout.CROPS] * len(batch),
                        detector_scales=[settings.detector_scales] * len(batch),
                    )
                    for item, result in zip(batch, results, strict=True):
                        score = item.score(result.status, _predictions(plan, result))
                        console.line(image_row(score), style=None if score.status == FRAME_OK else "red")
                        scores.append(score)
                    bars.update("images", len(scores))
            model_version = client.model_version
        except TritonError as error:
            raise EvalError(f"Triton failed after {len(scores)} of {len(items)} images: {error}") from error
    return EvalReport(
        created_at=datetime.now(UTC),
        settings=settings,
        layout=plan.layout,
        region=plan.region.code,
        triton_url=url,
        model_version=model_version,
        totals=totals(scores),
        by_country=totals_by_country(scores),
        images=scores,
    )


def run_eval(settings: EvalSettings, console: Terminal | None = None) -> int:
    """Score `settings.folder`; print the rows and totals, write the report; the exit status."""
    console = console or Terminal()
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)  # stop the local Triton too
    try:
        plan = plan_eval(settings)  # a bad folder or region fails before any server starts
        before = load_images(settings.baseline) if settings.baseline is not None else None
        console.line(
            f"{plan.layout} layout, {len(plan.items)} labelled, region {plan.region.code}", style="dim"
        )
        with _triton(settings, console) as url:
            report = _evaluate(settings, plan, url, console)
        console.line("")
        for line in summary_lines(report.totals):
            console.line(f"  {line}")
        for line in country_lines(report.by_country):
            console.line(line)
        if before is not None and settings.baseline is not None:
            report = report.model_copy(update={"baseline": compare(before, report.images)})
            console.line("")
            for line in comparison_lines(report.baseline, settings.baseline):  # type: ignore[arg-type]
                console.line(line, style="red" if line.startswith("  worse") else None)
        if settings.report is not None:
            _write(settings.report, report)
            console.line(f"report: {settings.report}", style="dim")
    except (LabelsError, EvalError, UnknownRegionError) as error:
        console.error(f"error: {error}")
        return EXIT_FAILED
    except KeyboardInterrupt:
        console.error("interrupted")
        return EXIT_INTERRUPTED
    finally:
        signal.signal(signal.SIGTERM, previous)
    unmet = unmet_thresholds(report.totals, settings.min_found, settings.min_exact)
    if report.baseline is not None and report.baseline.worse:
        unmet.append(f"{len(report.baseline.worse)} plate(s) worse than in {settings.baseline}")
    for line in unmet:
        console.error(f"below threshold: {line}")
    return EXIT_BELOW_THRESHOLD if unmet else EXIT_OK


def _write(path: Path, report: EvalReport) -> None:
    try:
        write_report(path, report)
    except OSError as error:
        raise EvalError(f"cannot write the report {path}: {error.strerror or error}") from error
