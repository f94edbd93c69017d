"""The target secrets (notify/secrets.py): only the secrets file and STREAM_WORKER_SECRET_* can be
named, the file is read again when it changes, and one that others may read is refused."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from stream_worker.notify.secrets import MissingSecret, Secrets, create_secrets_file, parse_secrets, resolve


def secrets_file(path: Path, text: str, mode: int = 0o600) -> Path:
    path.write_text(text)
    path.chmod(mode)
    return path


def test_only_target_secrets_can_be_named_never_another_variable(tmp_path: Path) -> None:
    environ = {"DB_PASSWORD": "TopSecretDbPw-42", "STREAM_WORKER_SECRET_HOOK": "from-env"}
    secrets = Secrets(secrets_file(tmp_path / "s.env", "GATE=from file\n"), environ)
    assert resolve("${GATE}", secrets)[0] == "from file"
    assert resolve("${HOOK}", secrets)[0] == "from-env"
    with pytest.raises(MissingSecret) as missing:
        resolve("${DB_PASSWORD}", secrets)
    # The error is the same whether or not such a variable exists: it tells nothing.
    with pytest.raises(MissingSecret) as absent:
        resolve("${NO_SUCH_VARIABLE}", Secrets(None, {}))
    assert str(missing.value).replace("DB_PASSWORD", "X") == str(absent.value).replace(
        "NO_SUCH_VARIABLE", "X"
    )
    assert "environment variable" not in str(missing.value)
    assert secrets.names() == ["GATE", "HOOK"]


def test_the_file_is_read_again_when_it_changes(tmp_path: Path) -> None:
    path = secrets_file(tmp_path / "s.env", "# target secrets\nA=1\n")
    secrets = Secrets(path, {}, check_every_s=0)
    assert "B" not in secrets
    secrets_file(path, "A=1\nB=two words/and = sign\n")
    os.utime(path, ns=(1, 1))  # a change within the clock's resolution is still seen (size, time)
    assert secrets["B"] == "two words/and = sign"
    path.unlink()
    assert "A" not in secrets


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o644])
def test_a_file_others_may_read_is_refused(tmp_path: Path, mode: int) -> None:
    secrets = Secrets(secrets_file(tmp_path / "s.env", "A=1\n", mode), {})
    assert "A" not in secrets and "chmod 600" in (secrets.problem or "")


def test_lines_that_are_not_name_value_are_skipped_by_number() -> None:
    assert parse_secrets("A=1\nnot a line\n\n  # note\nB=\n") == ({"A": "1", "B": ""}, [2])


def test_up_creates_an_empty_file_only_its_owner_reads_and_never_overwrites_one(tmp_path: Path) -> None:
    path = tmp_path / "notify-secrets.env"
    assert create_secrets_file(path) is True
    assert path.stat().st_mode & 0o777 == 0o600 and Secrets(path, {}).names() == []
    path.write_text("A=1\n")
    assert create_secrets_file(path) is False and path.read_text() == "A=1\n"
