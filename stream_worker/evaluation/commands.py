"""`stream-worker eval`: the Typer layer over evaluation/runner.py (cli.py adds it to the root app).
The body imports the runner, and through it the Triton client, only when it runs.
"""

from __future__ import annotations

from pathlib import Path

import typer

from stream_worker.service.options import (
    DEFAULT_REPOSITORY,
    TLS_CA_OPTION,
    TLS_CERT_OPTION,
    TLS_KEY_OPTION,
    triton_tls,
)

commands = typer.Typer()  # this package's commands; cli.py adds them to the root app


# --- eval -------------------------------------------------------------------------------------
@commands.command(
    "eval",
    epilog=(
        "Examples:\n\n"
        "  LPR_WEIGHTS_DIR=../shared/weights stream-worker eval ../shared/evalset/scenes\n\n"
        "  stream-worker eval ../shared/evalset/boxes_only --url triton:8001 --report reports/boxes.json\n\n"
        "  stream-worker eval photos/ --min-found 0.9 --min-exact 0.7\n\n"
        "  stream-worker eval ../shared/plates-world/us-crops --region auto\n\n"
        "  stream-worker eval ../shared/plates-world/ro-scenes\n\n"
        "  stream-worker eval ../shared/evalset/scenes --region auto --baseline reports/scenes-main.json\n\n"
        "Layouts, told from the folder's files: labels.json (photos: boxes and texts), labels.csv or "
        "labels.tsv (plate crops, each read whole), Pascal VOC *.xml beside the images (boxes only), "
        "video clips named after their plate (every frame). Region: --region, else the folder name's "
        "country code when it is a known region (us-crops: us; auto when none); photos and clips: "
        "the default region (ru).\n\n"
        "Exit codes: 0 done, 1 the folder, its labels or --baseline unusable, an unknown region, Triton "
        "unreachable or failing, the report not written, 2 a --min-found/--min-exact rate not reached "
        "or a plate worse than in --baseline, 130 interrupted."
    ),
)
def evaluate(
    folder: Path = typer.Argument(
        ...,
        help="Photos with labels.json, crops with labels.csv/.tsv, scenes with Pascal VOC .xml, or clips.",
    ),
    region: str | None = typer.Option(
        None,
        "--region",
        help="Read the plates for this region (a country code, eu, auto; see docs/regions.md).",
        show_default=False,
    ),
    raw: bool = typer.Option(
        False, "--raw", help="Score the recognizers' unconstrained reads instead of the format reading."
    ),
    detector_scales: str | None = typer.Option(
        None,
        "--detector-scales",
        help="The detector's scales for every image, as a camera's detector_scales setting asks "
        "(e.g. 1.0,0.5,3.0 for dash cameras); default: Triton's.",
        show_default=False,
    ),
    url: str | None = typer.Option(
        None,
        "--url",
        help="Triton gRPC HOST:PORT (default: export the models if needed and start the local one).",
        show_default=False,
    ),
    report: Path | None = typer.Option(None, "--report", help="Write the JSON report here."),
    batch_size: int = typer.Option(8, "--batch-size", min=1, help="Images per Triton request."),
    min_found: float | None = typer.Option(
        None, "--min-found", min=0.0, max=1.0, help="Exit 2 below this fraction of plate boxes found."
    ),
    min_exact: float | None = typer.Option(
        None, "--min-exact", min=0.0, max=1.0, help="Exit 2 below this fraction of texts read exactly."
    ),
    baseline: Path | None = typer.Option(
        None,
        "--baseline",
        help="An earlier --report of this folder: list the plates read (or found) then and not now, "
        "and the reverse; exit 2 when one is worse.",
    ),
    timeout: float = typer.Option(120.0, "--timeout", min=0.1, help="Seconds to wait for each request."),
    weights_dir: Path | None = typer.Option(
        None,
        "--weights-dir",
        help="Checkpoints for the local Triton (default: $LPR_WEIGHTS_DIR).",
        show_default=False,
    ),
    repository: Path = typer.Option(
        DEFAULT_REPOSITORY, "--repository", help="Model repository (local Triton)."
    ),
    tls_ca_file: Path | None = TLS_CA_OPTION,
    tls_cert_file: Path | None = TLS_CERT_OPTION,
    tls_key_file: Path | None = TLS_KEY_OPTION,
) -> None:
    """Score a labelled folder through the Triton pipeline: plates found, texts read by country, a report."""
    from stream_worker.evaluation.runner import run_eval
    from stream_worker.evaluation.settings import EvalSettings

    tls = triton_tls(tls_ca_file, tls_cert_file, tls_key_file)
    if tls is not None and url is None:
        raise typer.BadParameter("needs --url: the local Triton speaks plain text", param_hint="'--tls-*'")
    settings = EvalSettings(
        folder=folder,
        region=region,
        raw=raw,
        detector_scales=_scales(detector_scales),
        url=url,
        tls=tls,
        repository=repository,
        weights_dir=weights_dir,
        batch_size=batch_size,
        timeout_s=timeout,
        min_found=min_found,
        min_exact=min_exact,
        report=report,
        baseline=baseline,
    )
    raise typer.Exit(run_eval(settings))


def _scales(text: str | None) -> tuple[float, ...]:
    """`--detector-scales 1.0,0.5,3.0` checked as a camera's setting is; None: Triton's default."""
    from stream_worker.contracts.cameras import parse_detector_scales

    try:
        return parse_detector_scales(text or "") or ()
    except ValueError as error:
        raise typer.BadParameter(str(error), param_hint="'--detector-scales'") from None
