"""`stream-worker eval`: send a labelled folder through Triton in batches and score every image.

Starts the local Triton (exporting the models first when needed) unless `--url` names a server,
prints one row per image as its batch comes back (a progress bar below them at a terminal), then
the totals. Exit codes: 0 done, 1 unusable folder or labels, Triton unreachable or failing,
report not written; 2 a --min-found / --min-exact rate not reached; 130 interrupted.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from stream_worker.console import Console
from stream_worker.evaluation.labels import ImageLabel, LabelsError, load_labels
from stream_worker.evaluation.report import EvalReport, image_row, summary_lines, table_header, write_report
from stream_worker.evaluation.scoring import ImageScore, Prediction, score_image, totals, unmet_thresholds
from stream_worker.evaluation.settings import EvalSettings
from stream_worker.launchers.triton import LocalTriton, TritonLaunchError
from stream_worker.recognition import FRAME_OK
from stream_worker.triton_client import PlateRecognitionClient, TritonError

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_BELOW_THRESHOLD = 2
EXIT_INTERRUPTED = 130
TRITON_START_TIMEOUT_S = 300.0


class EvalError(Exception):
    """The evaluation cannot go on; the message says what failed and what to do."""


@contextmanager
def _triton(settings: EvalSettings, console: Console) -> Iterator[str]:
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
        return path.read_bytes()
    except OSError as error:
        raise EvalError(f"cannot read image {path}: {error.strerror or error}") from error


def _evaluate(
    settings: EvalSettings, labels: dict[str, ImageLabel], url: str, console: Console
) -> EvalReport:
    """Every labelled image through Triton in batches of `settings.batch_size`, scored and shown."""
    names = list(labels)
    scores: list[ImageScore] = []
    with PlateRecognitionClient(url, timeout_s=settings.timeout_s, tls=settings.tls) as client:
        if not client.is_ready():
            raise EvalError(
                f"Triton at {url} is not ready (server or model plate_recognition); start one with "
                "`stream-worker triton`, or leave --url out to start the local one"
            )
        console.line(table_header(), style="bold")
        try:
            with console.counters({"images": len(names)}) as bars:
                for start in range(0, len(names), settings.batch_size):
                    batch = names[start : start + settings.batch_size]
                    results = client.recognize([_read(settings.folder / name) for name in batch])
                    for name, result in zip(batch, results, strict=True):
                        predictions = [Prediction(text=plate.text, box=plate.box) for plate in result.plates]
                        score = score_image(name, labels[name], result.status, predictions)
                        console.line(image_row(score), style=None if score.status == FRAME_OK else "red")
                        scores.append(score)
                    bars.update("images", len(scores))
            model_version = client.model_version
        except TritonError as error:
            raise EvalError(f"Triton failed after {len(scores)} of {len(names)} images: {error}") from error
    return EvalReport(
        created_at=datetime.now(UTC),
        settings=settings,
        triton_url=url,
        model_version=model_version,
        totals=totals(scores),
        images=scores,
    )


def run_eval(settings: EvalSettings, console: Console | None = None) -> int:
    """Score `settings.folder`; print the rows and totals, write the report; the exit status."""
    console = console or Console()
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)  # stop the local Triton too
    try:
        labels = load_labels(settings.folder)  # a bad folder fails before any server starts
        with _triton(settings, console) as url:
            report = _evaluate(settings, labels, url, console)
        console.line("")
        for line in summary_lines(report.totals):
            console.line(f"  {line}")
        if settings.report is not None:
            _write(settings.report, report)
            console.line(f"report: {settings.report}", style="dim")
    except (LabelsError, EvalError) as error:
        console.error(f"error: {error}")
        return EXIT_FAILED
    except KeyboardInterrupt:
        console.error("interrupted")
        return EXIT_INTERRUPTED
    finally:
        signal.signal(signal.SIGTERM, previous)
    unmet = unmet_thresholds(report.totals, settings.min_found, settings.min_exact)
    for line in unmet:
        console.error(f"below threshold: {line}")
    return EXIT_BELOW_THRESHOLD if unmet else EXIT_OK


def _write(path: Path, report: EvalReport) -> None:
    try:
        write_report(path, report)
    except OSError as error:
        raise EvalError(f"cannot write the report {path}: {error.strerror or error}") from error
