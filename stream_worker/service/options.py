"""The command-line options and helpers that several packages' commands share: the repository's
folders, the Kafka connection options (`-X`, --bootstrap-servers), those of the commands that
manage a compacted settings topic (`watchlist`, `cameras`), and the TLS options to Triton
(`recognize`, `eval --url`; `run` has its own --triton-tls-* settings).

Only typer is imported here: each package's commands module and `stream_worker/cli.py` import
this module for `--help`, which must work without the servers, torch or the weights.
"""

from __future__ import annotations

from pathlib import Path

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


# --- Kafka (broker / produce / tail, watchlist, cameras) ------------------------------------
def parse_client_config(pairs: list[str]) -> dict[str, str]:
    """`-X key=value` options as librdkafka settings (SASL/TLS and the like)."""
    config = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise typer.BadParameter(f"{pair!r} is not KEY=VALUE", param_hint="'-X'")
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
)
CLIENT_CONFIG_OPTION = typer.Option(
    [],
    "-X",
    "--config",
    metavar="KEY=VALUE",
    help="Extra librdkafka setting; repeatable (e.g. security.protocol=SSL).",
)


# --- the compacted settings topics (watchlist, cameras) ------------------------
# CLIENT_CONFIG_OPTION's flags, plus --kafka-config.
SETTINGS_CONFIG_OPTION = typer.Option(
    [],
    "-X",
    "--config",
    "--kafka-config",
    metavar="KEY=VALUE",
    help="Extra librdkafka setting; repeatable (e.g. security.protocol=SSL).",
)
SETTINGS_TIMEOUT_OPTION = typer.Option(
    30.0, "--timeout", min=0.1, help="Seconds to wait for the broker on each step."
)
SETTINGS_EXIT_CODES = "Exit codes: 0 done, 1 the broker failed or timed out, 2 bad input (nothing written)."


def settings_connection(bootstrap_servers: str, topic: str, client_config: list[str], timeout: float):
    """Where a `watchlist` or `cameras` command reads and writes its compacted topic."""
    from stream_worker.service.topic_actions import Connection

    return Connection(bootstrap_servers, topic, parse_client_config(client_config), timeout)


def echo_err(line: str) -> None:
    typer.echo(line, err=True)
