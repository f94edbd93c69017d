"""An operator's own formats book through $STREAM_WORKER_PLATE_FORMATS: every region comes from it,
and a bad one stops any command before it starts (a formats file with a bad pattern)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from stream_worker.cli import app
from stream_worker.contracts import plate_formats
from stream_worker.contracts.plate_formats import BOOK_VARIABLE, known_regions, region

OWN_BOOK = (
    plate_formats.BOOK_PATH.read_text(encoding="utf-8")
    + """
[countries.zz]
name = "Example"
recognizers = ["global"]
source = "https://example.org/plates"
[[countries.zz.formats]]
name = "standard"
pattern = "AA-000"
"""
)


@pytest.fixture
def fresh_book() -> Iterator[None]:
    """The book and its regions are cached per process: read again under the test's variable."""
    plate_formats.default_book.cache_clear()
    plate_formats.region.cache_clear()
    yield
    plate_formats.default_book.cache_clear()
    plate_formats.region.cache_clear()


def test_the_variable_names_the_book_every_region_comes_from(tmp_path: Path, monkeypatch, fresh_book) -> None:
    assert "zz" not in known_regions()
    plate_formats.default_book.cache_clear()
    own = tmp_path / "formats.toml"
    own.write_text(OWN_BOOK, encoding="utf-8")
    monkeypatch.setenv(BOOK_VARIABLE, str(own))
    assert "zz" in known_regions() and "ru" in known_regions()
    assert region("zz").fit("AB123") is not None


def test_a_bad_book_stops_any_command_with_the_row_and_the_reason(
    tmp_path: Path, monkeypatch, fresh_book
) -> None:
    bad = tmp_path / "formats.toml"
    bad.write_text(OWN_BOOK.replace('pattern = "AA-000"', 'pattern = "AA-00Q"'), encoding="utf-8")
    monkeypatch.setenv(BOOK_VARIABLE, str(bad))
    result = CliRunner().invoke(app, ["schemas", "export", "--check"])
    assert result.exit_code == 2, result.output
    assert f"error: {BOOK_VARIABLE}: {bad}" in result.stderr
    assert "country 'zz' format 1 (standard) pattern 'AA-00Q'" in result.stderr


def test_a_good_book_lets_the_command_run(tmp_path: Path, monkeypatch, fresh_book) -> None:
    own = tmp_path / "formats.toml"
    own.write_text(OWN_BOOK, encoding="utf-8")
    monkeypatch.setenv(BOOK_VARIABLE, str(own))
    result = CliRunner().invoke(app, ["schemas", "export", "--check"])
    assert result.exit_code == 0, result.output
