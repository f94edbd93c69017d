"""The `stream-worker` command line: the root app, assembled from each package's own commands.

Each package declares its commands next to the code they run: worker/commands.py (`run`),
sightings/commands.py (`sightings`), visits/commands.py (`visits`), alerts/cli.py (`alerts`, the
`watchlist` group),
cameras/cli.py (the `cameras` group), notify/cli.py (`notify`, its `targets` group),
demo/commands.py (`demo`), launchers/commands.py (`triton`,
`broker`), nets/commands.py (the `models` group), evaluation/commands.py (`eval`) and
tools/commands.py (`recognize`, `produce`, `tail`, the `schemas` group), connector/commands.py
(`connect`, `cameras status`), store/commands.py (the `store` group, `search`), up/commands.py
(`up`); the options several of
them share are in service/options.py. Only `bench` is here: the benchmarks are the repository's
bench/ folder, not a package of stream_worker.

Each command's body only parses options and calls one function elsewhere, imported there, so the
commands stay importable (and `--help` works) without the servers, torch or the weights.
"""

from __future__ import annotations

import os

import typer

from stream_worker.alerts import cli as alerts
from stream_worker.cameras import cli as cameras
from stream_worker.connector import commands as connector
from stream_worker.contracts.plate_formats import BOOK_VARIABLE, FormatsError, default_book
from stream_worker.demo import commands as demo
from stream_worker.evaluation import commands as evaluation
from stream_worker.launchers import commands as launchers
from stream_worker.nets import commands as nets
from stream_worker.notify import cli as notify
from stream_worker.service.options import REPO_ROOT
from stream_worker.sightings import commands as sightings
from stream_worker.store import commands as store
from stream_worker.tools import commands as tools
from stream_worker.up import commands as up
from stream_worker.visits import commands as visits
from stream_worker.worker import commands as worker

app = typer.Typer(
    name="stream-worker",
    help="Read licence plates from Kafka camera feeds with an NVIDIA Triton pipeline.",
    epilog=(
        "Examples:\n\n"
        "  LPR_WEIGHTS_DIR=../shared/weights stream-worker demo\n\n"
        "  stream-worker recognize ../shared/samples/car.jpg\n\n"
        "  stream-worker run --bootstrap-servers kafka:9092 --triton-url triton:8001\n\n"
        "  stream-worker sightings --bootstrap-servers kafka:9092\n\n"
        "Each command's --help has its own examples and exit codes; every command: docs/reference/cli.md."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _check_plate_formats() -> None:
    # An operator's formats book ($STREAM_WORKER_PLATE_FORMATS) is checked before any command runs: a
    # bad row stops the command with the row and the reason, not a service midway through its input.
    # (No docstring: it would replace the app's help.)
    if os.environ.get(BOOK_VARIABLE):
        try:
            default_book()
        except FormatsError as error:
            typer.echo(f"error: {BOOK_VARIABLE}: {error}", err=True)
            raise typer.Exit(2) from None


def _add(package_commands: typer.Typer, *names: str) -> None:
    """Add the named commands of a package's `commands` Typer to the root app, in this order.

    The registrations (options, help, epilog) are taken over as they are; `--help` lists the
    commands in the order they are added, then the groups in the order of `add_typer`.
    """
    registered = {info.name or info.callback.__name__: info for info in package_commands.registered_commands}
    app.registered_commands.extend(registered[name] for name in names)


_add(launchers.commands, "triton")
_add(tools.commands, "recognize")
_add(evaluation.commands, "eval")
_add(launchers.commands, "broker")
_add(tools.commands, "produce", "tail")
_add(worker.commands, "run")
_add(sightings.commands, "sightings")
_add(alerts.commands, "alerts")
_add(visits.commands, "visits")
_add(connector.commands, "connect")
_add(demo.commands, "demo")
_add(up.commands, "up")
_add(store.commands, "search", "report")


# --- bench -------------------------------------------------------------------------
# The benchmarks live in the repository's bench/ folder (beside model_repository/, which they
# need), not in the installed package: the command works from a source checkout.
@app.command(
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    add_help_option=False,
)
def bench(ctx: typer.Context) -> None:
    """Benchmarks: pipeline | limit | stream | sweep | triton | all; a table and a JSON report (bench --help).

    Example: stream-worker bench pipeline --frames 64 --report reports/pipeline.json
    Faults: stream-worker bench chaos (worker and Triton SIGKILLs, hostile frames; bench chaos --help).
    """
    import sys

    if not (REPO_ROOT / "bench" / "main.py").is_file():
        typer.echo(f"error: the benchmarks need a source checkout ({REPO_ROOT}/bench is missing)", err=True)
        raise typer.Exit(2)
    if str(REPO_ROOT) not in sys.path:
        sys.path.insert(0, str(REPO_ROOT))
    import signal

    from bench.main import main
    from stream_worker.nets.weights import WeightsError

    def stop(signum: int, _frame: object) -> None:  # unwind, so each benchmark stops what it started
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    try:
        code = main(ctx.args)
    except WeightsError as error:  # no weights where the benchmark looked: say where, not a traceback
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(2) from None
    raise typer.Exit(code)


app.add_typer(nets.models_app, name="models")
app.add_typer(tools.schemas_app, name="schemas")
app.add_typer(alerts.watchlist_app, name="watchlist")
# `notify` alone runs the service; `notify targets ...` manages its targets (notify/cli.py).
app.add_typer(notify.notify_app, name="notify")
app.add_typer(store.store_app, name="store")
# `cameras status` reads what the connector reports: the cameras package, below the services, cannot.
cameras.cameras_app.registered_commands.extend(connector.status_commands.registered_commands)
app.add_typer(cameras.cameras_app, name="cameras")
