"""What starting `stream-worker` costs in imports: the command line is assembled without a pydantic
model (the contracts load on first use), and a service imports only what it runs (notify loads
httpx when it sends a webhook). Each import is CPU paid on every start, and the tests start
services hundreds of times."""

from __future__ import annotations

import subprocess
import sys

import pytest


def imported(code: str, modules: tuple[str, ...]) -> list[str]:
    """Which of `modules` a fresh interpreter has loaded after running `code`."""
    probe = f"{code}\nimport sys\nprint(' '.join(m for m in {modules!r} if m in sys.modules))"
    answer = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return answer.stdout.split()


def test_the_command_line_is_assembled_without_the_contracts_models() -> None:
    assert imported("import stream_worker.cli", ("pydantic", "httpx", "rich", "confluent_kafka")) == []


@pytest.mark.parametrize("service", ["notify", "sightings", "alerts"])
def test_a_service_imports_no_http_client_nor_terminal_renderer(service: str) -> None:
    assert imported(f"import stream_worker.{service}.app", ("httpx", "rich")) == []


def test_the_contracts_are_still_exported_from_the_package() -> None:
    import stream_worker.contracts as contracts

    for name in contracts.__all__:
        assert getattr(contracts, name) is not None, name
