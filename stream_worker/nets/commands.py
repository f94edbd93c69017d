"""`stream-worker models prepare`: the Typer layer over nets/prepare.py (cli.py adds the `models`
group to the root app). The body imports torch and onnx, through nets/prepare.py, only when it runs.
"""

from __future__ import annotations

from pathlib import Path

import typer

from stream_worker.service.options import DEFAULT_REPOSITORY

models_app = typer.Typer(help="Prepare the model repository's artifacts.", no_args_is_help=True)


# --- models prepare ----------------------------------------------------------------
@models_app.command(
    "prepare",
    epilog=(
        "Examples:\n\n"
        "  LPR_WEIGHTS_DIR=../shared/weights stream-worker models prepare\n\n"
        "  stream-worker models prepare --download\n\n"
        "Exit codes: 0 artifacts up to date, 1 weights missing or corrupt, download or export failed."
    ),
)
def models_prepare(
    weights_dir: Path | None = typer.Option(
        None,
        "--weights-dir",
        help="Folder holding stn.pth, lprnet.pth, the plate detector y5fu_640x_sim.onnx and the "
        "recognizer cct_xs_v1_global.onnx "
        "(default: $LPR_WEIGHTS_DIR, else ~/.cache/stream-worker/weights).",
        show_default=False,
    ),
    repository: Path = typer.Option(DEFAULT_REPOSITORY, "--repository", help="Triton model repository."),
    download: bool = typer.Option(
        False, "--download", help="Fetch missing or corrupt weights files from the pinned upstream URLs."
    ),
) -> None:
    """Verify the weights' sha256, export STN and LPRNet to ONNX, make the detector batch-dynamic and
    place the global recognizer.

    Idempotent: artifacts already built from the same weights are kept.

    Example: LPR_WEIGHTS_DIR=../shared/weights stream-worker models prepare
    """
    import logging

    from stream_worker.nets.errors import ModelPrepareError
    from stream_worker.nets.prepare import prepare_models
    from stream_worker.nets.weights import default_weights_dir

    logging.basicConfig(format="%(message)s")
    logging.getLogger("stream_worker").setLevel(logging.INFO)
    try:
        prepare_models(weights_dir or default_weights_dir(), repository, download=download)
    except ModelPrepareError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(code=1) from error
