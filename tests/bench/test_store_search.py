"""bench store-search at a toy size: the data it makes, its searches find what they should, the
writer's rate is measured, the filled database is reused, the report says it all."""

from __future__ import annotations

import random
import re
from pathlib import Path

import orjson
import pytest

import bench.store_search as store_search
from bench import environment

TOY = [
    "--sightings",
    "3000",
    "--plates",
    "150",
    "--cameras",
    "5",
    "--queries",
    "40",
    "--writer-sightings",
    "300",
]


def test_plates_are_in_the_russian_format_and_distinct() -> None:
    plates = store_search.distinct_plates(random.Random(1), 500)
    assert len(set(plates)) == 500
    assert all(re.fullmatch(r"[ABEKMHOPCTYX]\d{3}[ABEKMHOPCTYX]{2}\d{2,3}", plate) for plate in plates)


def test_the_searched_texts_are_stored_near_or_absent_as_labelled() -> None:
    args = store_search.parser().parse_args(TOY)
    plates = set(store_search.distinct_plates(random.Random(args.seed), args.plates))
    texts = store_search.search_texts(args)
    kinds = [kind for kind, _ in texts]
    assert (kinds.count("stored"), kinds.count("near"), kinds.count("absent")) == (20, 10, 10)
    for kind, text in texts:
        assert (text in plates) is (kind == "stored")
        if kind == "near":
            assert any(
                sum(a != b for a, b in zip(text, plate, strict=True)) == 1
                for plate in plates
                if len(plate) == len(text)
            )


def test_rows_are_oldest_first_over_a_year_from_few_cameras() -> None:
    args = store_search.parser().parse_args(TOY)
    rows = [row for batch in store_search.sighting_rows(args) for row in batch]
    assert len(rows) == 3000 and len({row["sighting_id"] for row in rows}) == 3000
    assert [row["last_seen"] for row in rows] == sorted(row["last_seen"] for row in rows)
    assert len({row["camera_id"] for row in rows}) == 5
    assert (rows[-1]["last_seen"] - rows[0]["last_seen"]).days > 300


def _run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *extra: str) -> dict:
    monkeypatch.setattr(environment, "load_average", lambda: [0.1, 0.1, 0.1])
    report = tmp_path / "report.json"
    code = store_search.main([*TOY, "--cache-dir", str(tmp_path / "cache"), "--report", str(report), *extra])
    assert code == 0
    return orjson.loads(report.read_bytes())


def _check(result: dict) -> None:
    exact, fuzzy = result["searches"]["exact"], result["searches"]["fuzzy"]
    # Most stored plates were seen (3000 sightings of 150 plates), no absent plate is; fuzzy also
    # finds stored plates for near misses.
    assert 15 <= exact["found"] <= 20
    assert fuzzy["found"] > exact["found"]
    assert 0 < exact["p50_ms"] <= exact["p95_ms"] <= exact["max_ms"]
    assert result["writer"]["sightings"] == 300 and result["writer"]["sightings_per_s"] > 0


def test_sqlite_filled_once_then_reused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    first = _run(tmp_path, monkeypatch, "--no-postgres")
    (result,) = first["results"]
    assert result["database"] == "sqlite" and result["fill_s"] is not None
    _check(result)
    out = capsys.readouterr().out
    assert "| sqlite   | exact" in out and "sightings_per_s" in out and "load average before" in out
    again = _run(tmp_path, monkeypatch, "--no-postgres")
    assert again["results"][0]["fill_s"] is None  # the cached file, its writer rows removed again
    assert again["results"][0]["searches"]["exact"]["found"] == result["searches"]["exact"]["found"]


@pytest.mark.integration
def test_postgresql(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, postgres_url: str) -> None:
    report = _run(tmp_path, monkeypatch, "--no-sqlite", "--postgres-url", postgres_url)
    (result,) = report["results"]
    assert result["database"] == "postgresql"
    _check(result)
