"""`stream-worker store hash-password`: an entry the users file takes, whose password and token
sign in; nothing printed holds the password."""

from __future__ import annotations

import re

import yaml
from typer.testing import CliRunner

from stream_worker.cli import app
from stream_worker.store.web.users import parse_users


def test_the_printed_entry_signs_in_with_its_password_and_token() -> None:
    result = CliRunner().invoke(
        app,
        ["store", "hash-password", "--stdin", "--token", "--name", "alice", "--role", "viewer"],
        input="correct horse battery\n",
    )
    assert result.exit_code == 0, result.output
    assert "correct horse battery" not in result.output
    entry = result.stdout
    [token] = re.findall(r"Bearer TOKEN\): (\S+)", result.stderr)
    users = parse_users(yaml.safe_load("users:\n" + entry), "users.yaml")
    alice = users.authenticate("alice", "correct horse battery")
    assert alice is not None and alice.role == "viewer"
    assert users.authenticate("alice", "wrong") is None
    assert users.by_token(token) is alice and users.by_token(token + "x") is None


def test_a_short_password_or_an_unknown_role_is_refused() -> None:
    short = CliRunner().invoke(app, ["store", "hash-password", "--stdin"], input="short\n")
    role = CliRunner().invoke(
        app, ["store", "hash-password", "--stdin", "--role", "root"], input="long enough\n"
    )
    assert (short.exit_code, role.exit_code) == (2, 2)
