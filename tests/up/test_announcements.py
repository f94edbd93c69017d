"""Only the store's plain lines about signing in are passed on, from its last start."""

from __future__ import annotations

import sys
from pathlib import Path

from stream_worker.launchers.service_child import ServiceChild
from stream_worker.up.announcements import announcements


def test_the_sign_in_lines_of_the_last_start_are_passed_on(tmp_path: Path) -> None:
    log_path = tmp_path / "store.log"
    log_path.write_text("console admin password: old-one\n")
    lines = [
        '{"message": "store started", "password_set": true}',
        "Console ready: sign in as admin with password Xy7-secret (shown once)",
        "some library warning",
    ]
    child = ServiceChild("store", [], log_path, append_log=True)
    child.argv = [sys.executable, "-c", f"print({chr(10).join(lines)!r})"]
    child.start()
    assert child.process is not None and child.process.wait(30) == 0
    assert announcements(child) == ["Console ready: sign in as admin with password Xy7-secret (shown once)"]
