"""The command-line options and helpers that several packages' commands share: the repository's
folders, the Kafka connection options (--bootstrap-servers, --kafka-config/-X, spelled as the
services spell them), `topic_command` (the options of every command that reads or writes one topic:
`watchlist`, `cameras`, `notify targets`), and the TLS options to Triton (`recognize`, `eval
--url`; `run` has its own --triton-tls-* settings).

Only typer is imported here: each package's commands module and `stream_worker/cli.py` import
this module for `--help`, which must work without the servers, torch or the weights.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from copy import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import typer

REPO_ROOT = Path(__file__).resolve().parent.parent.parent
DEFAULT_REPOSITORY = REPO_ROOT / "model_repository"

# --- the local pipeline that `demo` and `up` start (the models exported, Triton) --------
TRITON_URL_OPTION = typer.Option(
    None,
    "--triton-url",
    help="Use this Triton (gRPC HOST:PORT) instead of exporting the models and starting the local one.",
    show_default=False,
)
WEIGHTS_DIR_OPTION = typer.Option(
    None,
    "--weights-dir",
    help="Folder holding the weights the models are exported from (default: $LPR_WEIGHTS_DIR).",
    show_default=False,
)
REPOSITORY_OPTION = typer.Option(DEFAULT_REPOSITORY, "--repository", help="Triton model repository.")


# --- TLS to Triton (recognize, eval --url; `run` has its own --triton-tls-* settings) -------
TLS_CA_OPTION = typer.Option(
    None,
    "--tls-ca-file",
    exists=True,
    dir_okay=False,
    help="PEM roots that sign Triton's gRPC certificate; any --tls-* option switches to TLS.",
    show_default=False,
)
TLS_CERT_OPTION = typer.Option(
    None,
    "--tls-cert-file",
    exists=True,
    dir_okay=False,
    help="PEM client certificate for mutual TLS (with --tls-key-file).",
    show_default=False,
)
TLS_KEY_OPTION = typer.Option(
    None,
    "--tls-key-file",
    exists=True,
    dir_okay=False,
    help="PEM key of --tls-cert-file.",
    show_default=False,
)


def triton_tls(ca_file: Path | None, cert_file: Path | None, key_file: Path | None):  # -> TritonTLS | None
    from stream_worker.triton_client import tls_from_files

    try:
        return tls_from_files(ca_file, cert_file, key_file)
    except ValueError as error:
        raise typer.BadParameter(str(error), param_hint="'--tls-cert-file' / '--tls-key-file'") from None


# --- Kafka: every command that reaches the broker, the services' own flags spelled the same -------
KAFKA_PANEL = "Kafka"  # the help panel of the broker connection's options, services' included


def parse_client_config(pairs: list[str]) -> dict[str, str]:
    """`--kafka-config key=value` (`-X key=value`) options as librdkafka settings (SASL/TLS...)."""
    config = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise typer.BadParameter(f"{pair!r} is not KEY=VALUE", param_hint="'--kafka-config' / '-X'")
        config[name.strip()] = value
    return config


DEFAULT_BOOTSTRAP = "localhost:9092"


def default_bootstrap() -> str:
    """The running `stream-worker up`'s broker (contracts/running_up.py), else localhost:9092."""
    from stream_worker.contracts.running_up import running_up

    found = running_up()
    return found.bootstrap_servers if found is not None else DEFAULT_BOOTSTRAP


BOOTSTRAP_OPTION = typer.Option(
    ...,
    "--bootstrap-servers",
    default_factory=default_bootstrap,
    envvar="STREAM_WORKER_BOOTSTRAP_SERVERS",
    show_default=False,
    help="Kafka bootstrap servers (default: the running `stream-worker up`'s, else localhost:9092).",
    rich_help_panel=KAFKA_PANEL,
)
CLIENT_CONFIG_OPTION = typer.Option(
    [],
    "--kafka-config",
    "-X",
    metavar="KEY=VALUE",
    help="Extra librdkafka setting; repeatable (e.g. security.protocol=SSL).",
    rich_help_panel=KAFKA_PANEL,
)


# --- the commands that read or write one topic (watchlist, cameras, notify targets) --------------
DEFAULT_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class Connection:
    """The broker, the topic and the client settings a command uses."""

    bootstrap_servers: str
    topic: str
    config: Mapping[str, str] = field(default_factory=dict)
    timeout_s: float = DEFAULT_TIMEOUT_S


SETTINGS_TIMEOUT_OPTION = typer.Option(
    DEFAULT_TIMEOUT_S,
    "--timeout",
    min=0.1,
    help="Seconds to wait for the broker on each step.",
    rich_help_panel=KAFKA_PANEL,
)
SETTINGS_EXIT_CODES = "Exit codes: 0 done, 1 the broker failed or timed out, 2 bad input (nothing written)."


def settings_connection(
    bootstrap_servers: str, topic: str, client_config: list[str], timeout: float
) -> Connection:
    """Where a `watchlist` or `cameras` command reads and writes its compacted topic."""
    return Connection(bootstrap_servers, topic, parse_client_config(client_config), timeout)


def topic_command(topic_option: Any) -> Callable[[Callable[..., int]], Callable[..., None]]:
    """The options every command that reads or writes one topic takes, declared once.

    The decorated function takes its own options and a keyword-only `connection` (a `Connection`)
    and returns the exit status; the command typer sees has the same
    options, `connection` replaced by --bootstrap-servers, the topic (`topic_option`: its flag, env
    variable and default), --kafka-config/-X and --timeout.
    """

    def decorate(body: Callable[..., int]) -> Callable[..., None]:
        own = [
            parameter.replace(annotation=_evaluated(parameter.annotation, body))
            for name, parameter in inspect.signature(body).parameters.items()
            if name != "connection"
        ]
        shared = [
            inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=option, annotation=annotation)
            for name, option, annotation in (
                ("bootstrap_servers", BOOTSTRAP_OPTION, str),
                ("topic", _in_kafka_panel(topic_option), str),
                ("client_config", CLIENT_CONFIG_OPTION, list[str]),
                ("timeout", SETTINGS_TIMEOUT_OPTION, float),
            )
        ]

        def command(**values: Any) -> None:
            connection = settings_connection(
                values.pop("bootstrap_servers"),
                values.pop("topic"),
                values.pop("client_config"),
                values.pop("timeout"),
            )
            raise typer.Exit(body(connection=connection, **values))

        parameters = [*own, *shared]
        command.__name__, command.__qualname__ = body.__name__, body.__qualname__
        command.__doc__, command.__module__ = body.__doc__, body.__module__
        command.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
        command.__annotations__ = {parameter.name: parameter.annotation for parameter in parameters}
        return command

    return decorate


def _in_kafka_panel(option: Any) -> Any:
    shown = copy(option)
    shown.rich_help_panel = KAFKA_PANEL
    return shown


def _evaluated(annotation: Any, function: Callable[..., Any]) -> Any:
    """A parameter's annotation as a type (a module with `from __future__ import annotations`
    holds it as a string, which typer cannot read from a signature it is given)."""
    return eval(annotation, function.__globals__) if isinstance(annotation, str) else annotation


def echo_err(line: str) -> None:
    typer.echo(line, err=True)
