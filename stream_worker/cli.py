"""The `stream-worker` command line: thin commands that hand over to the module doing the work.

Each command's body only parses options and calls one function elsewhere, so the commands stay
importable (and `--help` works) without the servers, torch or the weights.
"""

from __future__ import annotations

from pathlib import Path

import typer

app = typer.Typer(
    name="stream-worker",
    help="Read licence plates from Kafka camera feeds with an NVIDIA Triton pipeline.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
models_app = typer.Typer(help="Prepare the model repository's artifacts.", no_args_is_help=True)
app.add_typer(models_app, name="models")

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_REPOSITORY = REPO_ROOT / "model_repository"


# --- models prepare ---------------------------------------------------------------- (issue 2)
# --- triton ------------------------------------------------------------------------ (issue 2)
# --- recognize --------------------------------------------------------------------- (issue 2/4)
# --- broker / produce / tail / run ------------------------------------------------- (issue 3)
# --- demo -------------------------------------------------------------------------- (issue 4)
# --- bench ------------------------------------------------------------------------- (issue 5)
