"""`stream-worker notify targets` on the real local broker: set, get, list, remove; a bad file or a
secret in clear refused whole, nothing written, the secret never echoed."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from stream_worker.cli import app
from stream_worker.notify.targets import read_targets

runner = CliRunner()
CLOSED = "127.0.0.1:9"  # nothing listens there

GATE_YAML = """\
type: webhook
url: https://hooks.example.com/gate
secret: ${GATE_SECRET}
rules:
  lists: [stolen]
  timezone: Europe/Berlin
  active_hours:
    - {days: [mon, tue, wed, thu, fri], start: "18:00", end: "07:00"}
  cooldown_s: 60
"""


def _targets(bootstrap: str, topic: str, *args: str):
    return runner.invoke(
        app,
        ["notify", "targets", *args, "--bootstrap-servers", bootstrap, "--topic", topic, "--timeout", "10"],
    )


@pytest.mark.integration
def test_set_get_list_remove(kafka_bootstrap: str, unique_name: str, tmp_path: Path) -> None:
    file = tmp_path / "gate.yaml"
    file.write_text(GATE_YAML)
    result = _targets(kafka_bootstrap, unique_name, "set", "gate", "--file", str(file))
    assert result.exit_code == 0, result.output
    assert "set gate: webhook" in result.output and "cooldown 60 s" in result.output

    got = _targets(kafka_bootstrap, unique_name, "get", "gate")
    assert got.exit_code == 0, got.output
    stored = orjson.loads(got.stdout)
    assert stored["secret"] == "${GATE_SECRET}" and stored["rules"]["lists"] == ["stolen"]
    copy = tmp_path / "copy.json"
    copy.write_text(got.stdout)  # `get` prints a file `set` takes back
    assert _targets(kafka_bootstrap, unique_name, "set", "gate-2", "--file", str(copy)).exit_code == 0

    listed = _targets(kafka_bootstrap, unique_name, "list", "--json")
    assert [orjson.loads(line)["name"] for line in listed.stdout.splitlines()] == ["gate", "gate-2"]
    table = _targets(kafka_bootstrap, unique_name, "list")
    assert table.stdout.splitlines()[0].split() == ["NAME", "TYPE", "ENABLED", "ADDRESS"]

    assert _targets(kafka_bootstrap, unique_name, "remove", "gate-2").exit_code == 0
    assert "nothing written" in _targets(kafka_bootstrap, unique_name, "remove", "gate-2").output
    assert set(read_targets(kafka_bootstrap, unique_name).values) == {"gate"}
    missing = _targets(kafka_bootstrap, unique_name, "get", "gate-2")
    assert missing.exit_code == 2 and "no target named" in missing.output


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (GATE_YAML.replace("${GATE_SECRET}", "'hunter 2/x'"), "secret"),
        ("type: webhook\nurl: https://me:hunter2@hooks.example.com/\n", "password in clear"),
        ("type: webhook\n", "needs a url"),
        ("- a list\n", "mapping"),
        ("type: [unclosed\n", "not valid JSON or YAML"),
    ],
)
def test_a_bad_file_is_refused_before_the_broker(tmp_path: Path, text: str, problem: str) -> None:
    file = tmp_path / "bad.yaml"
    file.write_text(text)
    result = _targets(CLOSED, "notify-targets", "set", "gate", "--file", str(file))
    assert result.exit_code == 2, result.output
    assert problem in result.output
    assert "hunter" not in result.output


@pytest.mark.parametrize("name", ["Gate One", "w-good\n", "w-good\r\n"])
def test_a_bad_name_is_refused(tmp_path: Path, name: str) -> None:
    file = tmp_path / "gate.yaml"
    file.write_text(GATE_YAML)
    result = _targets(CLOSED, "notify-targets", "set", name, "--file", str(file))
    assert result.exit_code == 2 and "lowercase" in result.output
