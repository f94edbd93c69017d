"""`stream-worker bench store-reports`: each report of store/reports.py at a million sightings,
SQLite and PostgreSQL side by side.

The database is the one `bench store-search` fills (same flags, same cache: a year of sightings from
`--cameras` cameras; alerts are not filled, so `alerts` reads an empty table), with the cameras'
health of the year's last 31 days added (a row per camera per hour, as the store keeps the
connector's status records: `--cameras` x 744 rows). Each report is timed `--repeats` times over
each window ending at the year's end (the last day, 7 days, 30 days, the whole year; hourly and
health 31 days at most), all cameras and one camera: p50/p95/max ms, the CPU of this process per
report (SQLite runs in it) and of PostgreSQL's server processes, with the load average before and
after; then each report's worst p95 over its windows. With `--visits`
closed visits added over the same year for the `dwell` report (dwell times from a minute to two
days, log-uniform).
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import time
import uuid
from collections.abc import Iterator, Sequence
from datetime import timedelta
from typing import Any

from bench import environment, store_search
from bench.cpu import self_cpu_s
from bench.report import format_table

WINDOWS_DAYS = (1, 7, 30, 365)
TARGET_P95_MS = 1000.0


def parser() -> argparse.ArgumentParser:
    p = store_search.parser()
    p.prog = "stream-worker bench store-reports"
    p.description = __doc__.split("\n\n")[0]
    p.add_argument("--repeats", type=int, default=10, help="Timings per report, window and camera filter.")
    p.add_argument("--visits", type=int, default=500_000, help="Closed visits over the year (dwell).")
    return p


def visit_rows(args: argparse.Namespace) -> Iterator[list[dict[str, Any]]]:
    """Closed visits in batches, deterministic per seed: a plate, one of 5 sites, its entry and
    exit cameras, an entry time in the year and a dwell time from 60 s to 2 days (log-uniform)."""
    from stream_worker.store.plate_keys import fold

    rng = random.Random(args.seed + 1)
    plates = store_search.distinct_plates(rng, args.plates)
    batch: list[dict[str, Any]] = []
    for _ in range(args.visits):
        entered = store_search.START + timedelta(seconds=rng.random() * store_search.YEAR_S)
        dwell = math.exp(rng.uniform(math.log(60), math.log(2 * 86400)))
        left = entered + timedelta(seconds=dwell)
        plate = rng.choice(plates)
        site = rng.randrange(5)
        batch.append(
            {
                "visit_id": str(uuid.UUID(int=rng.getrandbits(128), version=5)),
                "site": f"site-{site}",
                "plate": plate,
                "text_key": fold(plate),
                "entry_camera_id": f"camera-{2 * site:02d}",
                "entry_sighting_id": str(uuid.UUID(int=rng.getrandbits(128), version=5)),
                "entered_at": entered,
                "closed_at": left,
                "ended_by": "exit",
                "dwell_s": dwell,
                "exit_camera_id": f"camera-{2 * site + 1:02d}",
                "exit_sighting_id": str(uuid.UUID(int=rng.getrandbits(128), version=5)),
                "exit_text": plate,
                "exited_at": left,
            }
        )
        if len(batch) == store_search.FILL_BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def fill_visits(database: Any, args: argparse.Namespace) -> None:
    """The visits, once: a database that holds some already keeps them."""
    from sqlalchemy import func, insert, select

    from stream_worker.store.schema import visits

    with database.connect() as connection:
        stored = connection.execute(select(func.count()).select_from(visits)).scalar()
        connection.commit()
        if stored:
            return
        for batch in visit_rows(args):
            with connection.begin():
                connection.execute(insert(visits), batch)
        connection.exec_driver_sql("ANALYZE")
        connection.commit()


def time_reports(database: Any, args: argparse.Namespace, server_cpu: Any) -> list[dict[str, Any]]:
    from stream_worker.store.reports import MAX_HOURLY_SPAN, REPORTS, ReportRange, report

    end = store_search.START + timedelta(seconds=store_search.YEAR_S + 60)
    rows = []
    with database.connect() as connection:
        for days in WINDOWS_DAYS:
            for camera in (None, "camera-07"):
                span = ReportRange(end - timedelta(days=days), end, camera)
                for name in REPORTS:
                    if name in ("hourly", "health") and timedelta(days=days) > MAX_HOURLY_SPAN:
                        continue
                    latencies, cpu = [], self_cpu_s()
                    server = server_cpu() if server_cpu else None
                    for _ in range(args.repeats):
                        started = time.perf_counter()
                        answer = report(connection, name, span)
                        latencies.append((time.perf_counter() - started) * 1000)
                    row = {
                        "report": name,
                        "days": days,
                        "camera": camera or "all",
                        "rows": len(answer.rows),
                        "p50_ms": round(statistics.median(latencies), 1),
                        "p95_ms": round(store_search.percentile(latencies, 0.95), 1),
                        "max_ms": round(max(latencies), 1),
                        "client_cpu_ms": round((self_cpu_s() - cpu) * 1000 / args.repeats, 1),
                    }
                    if server is not None:
                        row["server_cpu_ms"] = round((server_cpu() - server) * 1000 / args.repeats, 1)
                    rows.append(row)
    return rows


HEALTH_DAYS = 31


def health_rows(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Each camera's hours of the year's last HEALTH_DAYS days: streaming, with an outage of a few
    minutes in one hour of twenty, ~5 frames a second published."""
    from stream_worker.store.camera_health import CODES

    rng = random.Random(args.seed + 3)
    end = store_search.START + timedelta(seconds=store_search.YEAR_S)
    first = end.replace(minute=0, second=0, microsecond=0) - timedelta(days=HEALTH_DAYS)
    rows = []
    for camera in range(args.cameras):
        total = 0
        for index in range(HEALTH_DAYS * 24):
            minutes = [CODES["streaming"]] * 60
            if rng.random() < 0.05:
                start, length = rng.randrange(50), rng.randint(1, 10)
                minutes[start : start + length] = [CODES["unreachable"]] * length
            published = sum(code == CODES["streaming"] for code in minutes) * 60 * 5
            total += published
            hour = first + timedelta(hours=index)
            rows.append(
                {
                    "camera_id": f"camera-{camera:02d}",
                    "hour": hour,
                    "minutes": "".join(minutes),
                    "frames_published": published,
                    "frames_shed": 0,
                    "last_published": total,
                    "last_shed": 0,
                    "replica": "connector-1",
                    "updated_at": hour + timedelta(minutes=59, seconds=58),
                }
            )
    return rows


def fill_health(database: Any, args: argparse.Namespace) -> None:
    from sqlalchemy import func, insert, select

    from stream_worker.store.schema import camera_health

    with database.begin() as connection:
        if connection.execute(select(func.count()).select_from(camera_health)).scalar():
            return
        connection.execute(insert(camera_health), health_rows(args))


def measure(name: str, url: str, args: argparse.Namespace, server_cpu: Any = None) -> dict[str, Any]:
    from stream_worker.store.database import Database

    database = Database(url)
    try:
        store_search.filled(name, database, args)
        fill_health(database, args)
        fill_visits(database, args)
        before = environment.load_average()
        reports = time_reports(database, args, server_cpu)
        return {"database": name, "reports": reports, "load_during": [before, environment.load_average()]}
    finally:
        database.dispose()


def main(argv: Sequence[str]) -> int:
    args = parser().parse_args(list(argv))
    checked = environment.load_or_refuse(args.allow_busy)
    if checked is None:
        return 3
    load, busy = checked
    results = store_search.on_each_database(args, measure)
    rows = [{"database": result["database"], **row} for result in results for row in result["reports"]]
    columns = ["database", "report", "days", "camera", "rows", "p50_ms", "p95_ms", "max_ms", "client_cpu_ms"]
    if any("server_cpu_ms" in row for row in rows):
        columns.append("server_cpu_ms")
    print(format_table(rows, columns))
    worst = {}
    for row in rows:
        key = (row["database"], row["report"])
        worst[key] = max(worst.get(key, 0.0), row["p95_ms"])
    print()
    print(
        format_table(
            [{"database": d, "report": r, "worst_p95_ms": ms} for (d, r), ms in worst.items()],
            ["database", "report", "worst_p95_ms"],
        )
    )
    store_search.finish(args, "store-reports", load, busy, results)
    print(f"target: p95 < {TARGET_P95_MS:g} ms for each report")
    return 0
