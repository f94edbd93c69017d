"""Every `stream-worker` command answers `--help` without any server, torch or weights, and shows
examples. Each runs as its own subprocess, as a user would type it, so a heavy import at module
level or a help text that needs a server fails here."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import typer

from stream_worker.cli import app


def _command_paths(command: object, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    paths = [prefix]
    for name, sub in getattr(command, "commands", {}).items():  # a group (typer vendors click)
        paths += _command_paths(sub, (*prefix, name))
    return paths


COMMANDS = _command_paths(typer.main.get_command(app))


def _help(path: tuple[str, ...]) -> subprocess.CompletedProcess[str]:
    # Point every server setting at a closed port: a --help that connects anywhere would hang or fail.
    env = {
        **os.environ,
        "COLUMNS": "120",
        "STREAM_WORKER_BOOTSTRAP_SERVERS": "127.0.0.1:9",
        "STREAM_WORKER_TRITON_URL": "127.0.0.1:9",
    }
    return subprocess.run(
        [sys.executable, "-m", "stream_worker", *path, "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )


def test_every_command_is_listed() -> None:
    expected = {
        "demo",
        "run",
        "broker",
        "produce",
        "tail",
        "triton",
        "recognize",
        "eval",
        "models",
        "schemas",
        "store",
        "search",
    }
    assert expected <= {path[0] for path in COMMANDS if path}
    assert {("store", "run"), ("store", "migrate"), ("store", "forget")} <= set(COMMANDS)


@pytest.mark.parametrize("path", COMMANDS, ids=lambda path: " ".join(path) or "stream-worker")
def test_help_runs_without_servers(path: tuple[str, ...]) -> None:
    result = _help(path)
    assert result.returncode == 0, result.stderr
    assert "usage" in result.stdout.lower()
    assert "Traceback" not in result.stdout + result.stderr


@pytest.mark.parametrize(
    "path",
    [
        path
        for path in COMMANDS
        if path not in {("models",), ("schemas",)}  # groups: their commands carry the examples
    ],
    ids=lambda path: " ".join(path) or "stream-worker",
)
def test_help_shows_examples(path: tuple[str, ...]) -> None:
    output = _help(path).stdout
    assert "Example" in output
    assert "stream-worker" in output.split("Example", 1)[1]


def test_demo_help_documents_exit_codes() -> None:
    output = _help(("demo",)).stdout
    assert "Exit codes:" in output
    for code in ("0 ", "1 ", "2 ", "130 "):
        assert code in output


@pytest.fixture(scope="module")
def every_help() -> dict[str, str]:
    """Every command's help as the CLI reference renders it (in this process: quick), by command."""
    from stream_worker.docs_reference import cli_page

    sections = cli_page().split("\n## `")[1:]
    return {section.split("`", 1)[0]: section.split("```text\n", 1)[1] for section in sections}


def test_every_command_has_the_same_help_layout(every_help: dict[str, str]) -> None:
    """typer's layout for the tools, the services and the benchmarks alike."""
    for command, shown in every_help.items():
        assert shown.lstrip().startswith(f"Usage: {command} "), command
        assert "╭─ Options ─" in shown, command
        assert "usage:" not in shown, command  # argparse's


def test_every_command_spells_the_kafka_settings_one_way(every_help: dict[str, str]) -> None:
    """--kafka-config KEY=VALUE, -X its alias, in the Kafka panel, wherever extra librdkafka settings go."""
    taking = {command: shown for command, shown in every_help.items() if "librdkafka setting" in shown}
    assert {
        "stream-worker run",
        "stream-worker sightings",
        "stream-worker produce",
        "stream-worker cameras set",
        "stream-worker watchlist add",
        "stream-worker notify targets set",
        "stream-worker cameras status",
    } <= set(taking)
    for command, shown in taking.items():
        kafka = shown.split("╭─ Kafka ─", 1)[1]
        assert "--kafka-config" in kafka and "-X" in kafka, command
        assert "--config" not in shown.replace("--kafka-config", ""), command


@pytest.mark.parametrize("name", sorted(__import__("bench.main").main.OWN_FLAGS))
def test_every_benchmark_with_flags_of_its_own_has_the_same_help_layout(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from bench.main import main as bench_main

    assert bench_main([name, "--help"]) == 0
    shown = capsys.readouterr().out
    assert shown.lstrip().startswith(f"Usage: stream-worker bench {name} "), shown[:200]
    assert "╭─ Options ─" in shown and "usage:" not in shown
