"""`stream-worker bench store-search`: the history store at a million sightings, SQLite and
PostgreSQL side by side.

A database is filled with `--sightings` sightings (default 1,000,000) of `--plates` distinct plates
in the Russian format (default 20,000; a few plates much more frequent than most, as residents'
cars are), from `--cameras` cameras over a year, inserted in bulk (executemany batches on SQLite,
COPY on PostgreSQL) with the plate_variants rows the writer would add, then the reports' counts
counted from them (store/report_counts.py). The filled SQLite file and
PostgreSQL cluster are kept under `--cache-dir` and reused by the next run with the same sizes.
Then `--queries` plate searches (half of them stored plates, the ten most frequent among them; a
quarter near misses, a stored plate with one character changed; a quarter never stored), each
exact and fuzzy (the first page of 50, newest first), timed one by one: p50/p95/max ms per
database and kind. Last, the writer's rate: `--writer-sightings` PlateSightings through
`store.writer.write_batch` in batches of `--writer-batch`, one transaction each, as the service
writes them, into the filled database (and deleted again after). The load average and the CPU of
this process (SQLite runs in it) and of PostgreSQL's server processes go in the tables and the
JSON report. The rows carry a short record and no pictures: searches do not read them.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

from bench import environment
from bench.cpu import self_cpu_s
from bench.report import format_table, write_json
from stream_worker.contracts.topics import FRAMES, PLATES

LETTERS = "ABEKMHOPCTYX"
DIGITS = "0123456789"
START = datetime(2025, 12, 1, tzinfo=UTC)
YEAR_S = 365 * 24 * 3600
DIRECTIONS = ("approaching", "receding", "left", "right", None)
ZONES = (None, None, "gate", "lane-1", "lane-2")
TARGET_P95_MS = 100.0
TARGET_WRITER_PER_S = 1000.0
FILL_BATCH = 20_000


def parser() -> argparse.ArgumentParser:
    from stream_worker.store.settings import StoreSettings

    p = argparse.ArgumentParser(prog="stream-worker bench store-search", description=__doc__.split("\n\n")[0])
    p.add_argument("--sightings", type=int, default=1_000_000)
    p.add_argument("--plates", type=int, default=20_000)
    p.add_argument("--cameras", type=int, default=50)
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--writer-sightings", type=int, default=20_000)
    p.add_argument(
        "--writer-batch",
        type=int,
        default=StoreSettings.model_fields["batch_records"].default,
        help="Sightings per transaction (the service's --batch-records).",
    )
    p.add_argument("--seed", type=int, default=28)
    p.add_argument(
        "--cache-dir", type=Path, default=Path(tempfile.gettempdir()) / "stream-worker-bench-store"
    )
    p.add_argument(
        "--postgres-url",
        default=None,
        help="An existing PostgreSQL database (filled when empty) instead of a cluster started here.",
    )
    p.add_argument("--no-postgres", action="store_true", help="SQLite only.")
    p.add_argument("--no-sqlite", action="store_true", help="PostgreSQL only.")
    p.add_argument("--allow-busy", action="store_true", help=environment.ALLOW_BUSY_HELP)
    p.add_argument("--report", type=Path, default=None, help="Write the JSON report here.")
    return p


# --- the data -----------------------------------------------------------------------------------
def random_plate(rng: random.Random) -> str:
    """A plate in the Russian format: letter, three digits, two letters, a 2- or 3-digit region."""
    region = "".join(rng.choices(DIGITS, k=rng.choice((2, 2, 3))))
    number = "".join(rng.choices(DIGITS, k=3))
    series = rng.choices(LETTERS, k=3)
    return f"{series[0]}{number}{series[1]}{series[2]}{region}"


def distinct_plates(rng: random.Random, count: int) -> list[str]:
    plates: dict[str, None] = {}
    while len(plates) < count:
        plates[random_plate(rng)] = None
    return list(plates)


def popularity(count: int) -> list[float]:
    """Cumulative weights: plate i is seen about 1/(i+20)^0.9 as often (a few regulars, a long tail)."""
    weights = [1 / (index + 20) ** 0.9 for index in range(count)]
    total, cumulative = 0.0, []
    for weight in weights:
        total += weight
        cumulative.append(total)
    return cumulative


def sighting_rows(args: argparse.Namespace) -> Iterator[list[dict[str, Any]]]:
    """The sightings in batches, oldest first (as the store receives them), deterministic per seed."""
    from stream_worker.store.plate_keys import fold

    rng = random.Random(args.seed)
    plates = distinct_plates(rng, args.plates)
    cumulative = popularity(len(plates))
    times = sorted(rng.random() * YEAR_S for _ in range(args.sightings))
    chosen = rng.choices(plates, cum_weights=cumulative, k=args.sightings)
    batch: list[dict[str, Any]] = []
    for offset, text in zip(times, chosen, strict=True):
        first = START + timedelta(seconds=offset)
        last = first + timedelta(seconds=rng.uniform(0.5, 8.0))
        sighting_id = str(uuid.UUID(int=rng.getrandbits(128), version=5))
        camera = f"camera-{rng.randrange(args.cameras):02d}"
        confidence = round(rng.uniform(0.6, 1.0), 4)
        batch.append(
            {
                "sighting_id": sighting_id,
                "camera_id": camera,
                "text": text,
                "text_key": fold(text),
                "format_valid": True,
                "confidence": confidence,
                "reads": rng.randint(1, 12),
                "direction": rng.choice(DIRECTIONS),
                "zone": rng.choice(ZONES),
                "first_seen": first,
                "last_seen": last,
                "closed_at": last + timedelta(seconds=2),
                "candidates": [{"text": text, "score": confidence}],
                "record": {"sighting_id": sighting_id, "camera_id": camera, "text": text},
                "has_picture": False,
                "stored_at": last + timedelta(seconds=3),
            }
        )
        if len(batch) == FILL_BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def variant_rows(args: argparse.Namespace) -> list[dict[str, str]]:
    from stream_worker.store.plate_keys import fold, variants

    plates = distinct_plates(random.Random(args.seed), args.plates)
    keys = {fold(plate) for plate in plates}
    return [
        {"variant": variant, "text_key": key} for key in sorted(keys) for variant in sorted(variants(key))
    ]


def search_texts(args: argparse.Namespace) -> list[tuple[str, str]]:
    """(kind, text): stored plates (the ten most frequent among them), near misses of stored plates
    (one character changed), plates never stored."""
    rng = random.Random(args.seed + 1)
    plates = distinct_plates(random.Random(args.seed), args.plates)
    known = set(plates)
    stored = args.queries // 2
    near = args.queries // 4
    # The most frequent plates (the slowest to search: thousands of sightings each), then a sample.
    regulars = plates[: min(10, stored)]
    texts = [
        ("stored", plate) for plate in regulars + rng.sample(plates[len(regulars) :], stored - len(regulars))
    ]
    while len(texts) < stored + near:
        plate = list(rng.choice(plates))
        index = rng.randrange(len(plate))
        plate[index] = rng.choice(LETTERS if plate[index] in LETTERS else DIGITS)
        text = "".join(plate)
        if text not in known:
            texts.append(("near", text))
    while len(texts) < args.queries:
        text = random_plate(rng)
        if text not in known:
            texts.append(("absent", text))
    return texts


# --- filling ------------------------------------------------------------------------------------
def _filled(database: Any, expected: int) -> bool:
    """True: filled by an earlier run; False: empty. Anything else is not this benchmark's to fill."""
    from sqlalchemy import func, select

    from stream_worker.store.schema import sightings

    with database.connect() as connection:
        count = connection.execute(select(func.count()).select_from(sightings)).scalar()
    if count not in (0, expected):
        raise SystemExit(f"error: {database.safe_url} holds {count} sightings: give an empty database")
    return count == expected


def fill_sqlite(database: Any, args: argparse.Namespace) -> None:
    from sqlalchemy import insert

    from stream_worker.store.report_counts import rebuild
    from stream_worker.store.schema import plate_variants, sightings

    with database.connect() as connection:
        connection.exec_driver_sql("PRAGMA synchronous=OFF")  # this connection only: a crash loses the cache
        connection.commit()
        for batch in sighting_rows(args):
            with connection.begin():
                connection.execute(insert(sightings), batch)
        with connection.begin():
            connection.execute(insert(plate_variants), variant_rows(args))
            rebuild(connection)
        connection.exec_driver_sql("ANALYZE")
        connection.commit()


def fill_postgres(database: Any, args: argparse.Namespace) -> None:
    from stream_worker.store.report_counts import rebuild
    from stream_worker.store.schema import sightings

    columns = [column.name for column in sightings.columns if column.name != "seq"]
    json_columns = {"candidates", "record"}
    raw = database.engine.raw_connection()
    try:
        driver = raw.driver_connection
        with driver.cursor() as cursor:
            names = ", ".join(f'"{name}"' for name in columns)
            with cursor.copy(f"COPY sightings ({names}) FROM STDIN") as copy:
                for batch in sighting_rows(args):
                    for row in batch:
                        copy.write_row(
                            [
                                orjson.dumps(row[name]).decode() if name in json_columns else row[name]
                                for name in columns
                            ]
                        )
            with cursor.copy("COPY plate_variants (variant, text_key) FROM STDIN") as copy:
                for row in variant_rows(args):
                    copy.write_row([row["variant"], row["text_key"]])
        driver.commit()
    finally:
        raw.close()
    with database.begin() as connection:
        rebuild(connection)
    raw = database.engine.raw_connection()
    try:
        driver = raw.driver_connection
        driver.autocommit = True
        with driver.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE")
        driver.autocommit = False
    finally:
        raw.close()


def filled(name: str, database: Any, args: argparse.Namespace) -> float | None:
    """The database migrated and filled (None: by an earlier run, else the seconds it took)."""
    database.migrate()
    if _filled(database, args.sightings):
        return None
    print(
        f"{name}: filling {args.sightings:,} sightings (kept for the next run)...",
        file=sys.stderr,
        flush=True,
    )
    started = time.perf_counter()
    (fill_postgres if name == "postgresql" else fill_sqlite)(database, args)
    return round(time.perf_counter() - started, 1)


# --- measuring ----------------------------------------------------------------------------------
def percentile(values: Sequence[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))]


def time_searches(database: Any, texts: list[tuple[str, str]]) -> dict[str, dict[str, Any]]:
    from stream_worker.store.search import SearchQuery, search

    figures: dict[str, dict[str, Any]] = {}
    with database.connect() as connection:
        for fuzzy in (False, True):
            latencies, found, cpu = [], 0, self_cpu_s()
            for _kind, text in texts:
                started = time.perf_counter()
                page = search(connection, SearchQuery(text=text, fuzzy=fuzzy, limit=50))
                latencies.append((time.perf_counter() - started) * 1000)
                found += bool(page.items)
            figures["fuzzy" if fuzzy else "exact"] = {
                "p50_ms": round(statistics.median(latencies), 2),
                "p95_ms": round(percentile(latencies, 0.95), 2),
                "max_ms": round(max(latencies), 2),
                "found": found,
                "client_cpu_ms_per_query": round((self_cpu_s() - cpu) * 1000 / len(texts), 2),
            }
    return figures


def writer_rate(database: Any, args: argparse.Namespace) -> dict[str, Any]:
    """Sightings/s through store.writer.write_batch into the filled database, then removed again
    (as retention removes them: off the reports' counts too)."""
    from stream_worker.store.retention import delete_sightings
    from stream_worker.store.writer import write_batch

    records = list(plate_sightings(args))
    cpu, started = self_cpu_s(), time.perf_counter()
    for start in range(0, len(records), args.writer_batch):
        with database.begin() as connection:
            write_batch(connection, records[start : start + args.writer_batch], [])
    elapsed = time.perf_counter() - started
    cpu = self_cpu_s() - cpu
    with database.begin() as connection:
        delete_sightings(connection, [record.sighting_id for record in records])
    return {
        "sightings": len(records),
        "batch": args.writer_batch,
        "sightings_per_s": round(len(records) / elapsed, 1),
        "client_cpu_ms_per_sighting": round(cpu * 1000 / len(records), 3),
    }


def plate_sightings(args: argparse.Namespace) -> Iterator[Any]:
    """Real PlateSightings (the contract the service consumes), of the stored plates, newer than all."""
    from stream_worker.contracts.sightings import PlateSighting

    rng = random.Random(args.seed + 2)
    plates = distinct_plates(random.Random(args.seed), args.plates)
    now = START + timedelta(seconds=YEAR_S + 60)
    for index in range(args.writer_sightings):
        text = rng.choice(plates)
        seen = now + timedelta(milliseconds=index * 10)
        yield PlateSighting.model_validate(
            {
                "sighting_id": str(uuid.UUID(int=rng.getrandbits(128), version=5)),
                "camera_id": f"camera-{rng.randrange(args.cameras):02d}",
                "text": text,
                "confidence": 0.93,
                "format_valid": True,
                "candidates": [{"text": text, "score": 0.93}],
                "reads": 5,
                "first_seen": seen,
                "last_seen": seen,
                "direction": "approaching",
                "best_read": {
                    "frame_id": f"frame-{index}",
                    "event_id": f"event-{index}",
                    "source": {"topic": FRAMES.name, "partition": 0, "offset": index},
                    "captured_at": seen,
                    "text": text,
                    "confidence": 0.95,
                    "box": {"x1": 10, "y1": 10, "x2": 90, "y2": 30},
                },
                "closed_by": "gap",
                "closed_at": seen,
                "source": {"topic": PLATES.name, "partition": 0, "first_offset": index, "last_offset": index},
            }
        )


# --- PostgreSQL ---------------------------------------------------------------------------------
PG_BIN = Path("/usr/lib/postgresql/15/bin")
PG_PORT = 55428


def _as_postgres(command: list[str]) -> list[str]:
    """initdb and postgres refuse to run as root: run them as Debian's postgres user."""
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


class LocalPostgres:
    """A PostgreSQL 15 cluster kept under the cache folder (unix socket only), started for the run."""

    def __init__(self, folder: Path):
        self.data = folder / "data"
        self.socket = folder / "socket"
        self.log = folder / "server.log"
        self.folder = folder

    def start(self) -> str:
        self.folder.mkdir(parents=True, exist_ok=True)
        self.socket.mkdir(exist_ok=True)
        if os.geteuid() == 0:
            shutil.chown(self.folder, "postgres", "postgres")
            shutil.chown(self.socket, "postgres", "postgres")
        if not (self.data / "PG_VERSION").is_file():
            subprocess.run(
                _as_postgres([str(PG_BIN / "initdb"), "-D", str(self.data), "-U", "postgres", "-A", "trust"]),
                check=True,
                capture_output=True,
            )
        options = f"-p {PG_PORT} -k {self.socket} -c listen_addresses='' -c shared_buffers=256MB"
        subprocess.run(
            _as_postgres(
                [
                    str(PG_BIN / "pg_ctl"),
                    "-D",
                    str(self.data),
                    "-l",
                    str(self.log),
                    "-o",
                    options,
                    "-w",
                    "start",
                ]
            ),
            check=True,
            capture_output=True,
        )
        created = subprocess.run(
            _as_postgres(["psql", "-h", str(self.socket), "-p", str(PG_PORT), "-c", "CREATE DATABASE bench"]),
            capture_output=True,
            text=True,
        )
        if created.returncode != 0 and "already exists" not in created.stderr:
            raise RuntimeError(created.stderr.strip())
        return f"postgresql+psycopg://postgres@/bench?host={self.socket}&port={PG_PORT}"

    def server_cpu_s(self) -> float:
        """CPU seconds of the cluster's processes (the postmaster's children included)."""
        from bench.cpu import process_cpu_s, stat_fields

        try:
            postmaster = int((self.data / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return 0.0
        total = process_cpu_s(postmaster)
        for entry in os.listdir("/proc"):
            fields = stat_fields(entry) if entry.isdigit() else None
            if fields is not None and int(fields[1]) == postmaster:
                total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        return total

    def stop(self) -> None:
        subprocess.run(
            _as_postgres([str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop"]),
            check=False,
            capture_output=True,
        )


# --- the run ------------------------------------------------------------------------------------
def measure(name: str, url: str, args: argparse.Namespace, server_cpu: Any = None) -> dict[str, Any]:
    from stream_worker.store.database import Database

    database = Database(url)
    try:
        fill_s = filled(name, database, args)
        texts = search_texts(args)
        load_before = environment.load_average()
        server_before = server_cpu() if server_cpu else None
        searches = time_searches(database, texts)
        server_search = server_cpu() - server_before if server_cpu else None
        writer = writer_rate(database, args)
        result: dict[str, Any] = {
            "database": name,
            "fill_s": fill_s,
            "searches": searches,
            "writer": writer,
            "load_during": [load_before, environment.load_average()],
        }
        if server_search is not None:
            result["server_cpu_ms_per_query"] = round(server_search * 1000 / (2 * len(texts)), 2)
        return result
    finally:
        database.dispose()


def schema_fingerprint() -> str:
    """A short hash of the tables and indexes: a cached database of another schema is not reused."""
    import hashlib

    from sqlalchemy.dialects import sqlite
    from sqlalchemy.schema import CreateIndex, CreateTable

    from stream_worker.store.schema import sightings

    statements = []
    for table in sightings.metadata.sorted_tables:
        statements.append(str(CreateTable(table).compile(dialect=sqlite.dialect())))
        statements += sorted(
            str(CreateIndex(index).compile(dialect=sqlite.dialect())) for index in table.indexes
        )
    return hashlib.sha256("\n".join(statements).encode()).hexdigest()[:10]


Measure = Callable[[str, str, argparse.Namespace, Any], dict[str, Any]]


def on_each_database(args: argparse.Namespace, measure: Measure) -> list[dict[str, Any]]:
    """`measure(name, url, args, server_cpu)` on SQLite and PostgreSQL (unless left out), each filled
    by the same generator and cached under --cache-dir; PostgreSQL a cluster started for the run
    (server_cpu: its processes' CPU seconds) unless --postgres-url names one."""
    args.cache_dir.mkdir(parents=True, exist_ok=True)
    tag = f"{args.sightings}-{args.plates}-{args.cameras}-{args.seed}-{schema_fingerprint()}"
    results = []
    if not args.no_sqlite:
        results.append(measure("sqlite", f"sqlite:///{args.cache_dir / f'sqlite-{tag}.db'}", args, None))
    if not args.no_postgres:
        if args.postgres_url:
            results.append(measure("postgresql", args.postgres_url, args, None))
        else:
            cluster = LocalPostgres(args.cache_dir / f"postgres-{tag}")
            url = cluster.start()
            try:
                results.append(measure("postgresql", url, args, cluster.server_cpu_s))
            finally:
                cluster.stop()
    return results


def finish(
    args: argparse.Namespace, scenario: str, load: Any, busy: bool, results: list[dict[str, Any]]
) -> None:
    """The load after the run, said and, with --report, written with the results as JSON."""
    load_after = environment.load_average()
    print(f"\nload average before {load} after {load_after}{' (busy: figures inflated)' if busy else ''}")
    if args.report:
        settings = {
            key: str(value) if isinstance(value, Path) else value for key, value in vars(args).items()
        }
        report = {
            "scenario": scenario,
            "settings": settings,
            "machine": environment.machine(),
            "versions": environment.versions(),
            "load_before": load,
            "load_after": load_after,
            "busy": busy,
            "results": results,
        }
        write_json(args.report, report)


def main(argv: Sequence[str]) -> int:
    args = parser().parse_args(list(argv))
    checked = environment.load_or_refuse(args.allow_busy)
    if checked is None:
        return 3
    load, busy = checked
    results = on_each_database(args, measure)
    rows = []
    for result in results:
        for kind, figures in result["searches"].items():
            rows.append({"database": result["database"], "search": kind, **figures})
    print(
        format_table(
            rows, ["database", "search", "p50_ms", "p95_ms", "max_ms", "found", "client_cpu_ms_per_query"]
        )
    )
    print()
    print(
        format_table(
            [
                {
                    "database": result["database"],
                    "fill_s": result["fill_s"] if result["fill_s"] is not None else "cached",
                    "server_cpu_ms_per_query": result.get("server_cpu_ms_per_query"),
                    **result["writer"],
                }
                for result in results
            ],
            [
                "database",
                "fill_s",
                "server_cpu_ms_per_query",
                "sightings",
                "batch",
                "sightings_per_s",
                "client_cpu_ms_per_sighting",
            ],
        )
    )
    finish(args, "store-search", load, busy, results)
    print(
        f"targets: p95 < {TARGET_P95_MS:g} ms for each search; writer >= {TARGET_WRITER_PER_S:g} sightings/s"
    )
    return 0
