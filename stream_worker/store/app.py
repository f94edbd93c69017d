"""The composition root of `stream-worker store`: consume sightings, alerts, visits and the cameras'
status -> decode -> write one transaction -> commit offsets, on one thread; the console served
beside it. A camera's status records become its health history (camera_health.py: each minute's
state, the frames of each hour); a tombstone (a camera removed) has nothing to keep.

Guarantees and how they are kept:
- Nothing lost: a batch's offsets are held (service/offsets.py) until its database transaction
  committed. A crash (SIGKILL included) between the two reads the batch again.
- Nothing twice: every row carries its message's id under a unique constraint and the writer
  skips ids already stored (writer.py), so a batch read again writes nothing; a visit's events
  are upserted into one row by its id, each setting its own columns, so a replay changes nothing.
- A database that fails (down, full, a lost connection): the batch is kept and written again with
  a capped backoff, consumption stops meanwhile (nothing is committed past it), /readyz says so.
- A record the store cannot write is counted, logged and sent to the dead-letter topic
  (--dlq-topic, store.dlq) with the reason, then committed with the rest: it would fail the same
  way on every replay. That is a record that is not the topic's contract (undecodable, a field over
  its column's limit: contracts/), or one the database refuses alone (a batch refused for its
  content is written again record by record, so that one record never holds back the others).
- SIGTERM/SIGINT: the batch in hand is written and committed, then the group is left.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError
from sqlalchemy.exc import DataError, IntegrityError, SQLAlchemyError

from stream_worker.cameras.status import decode_status
from stream_worker.contracts import ErrorReason, PlateAlert, PlateSighting, PlateVisit
from stream_worker.service.commits import Committer
from stream_worker.service.kafka import Partition
from stream_worker.service.lifecycle import LoopService, serve
from stream_worker.service.offsets import OffsetBook
from stream_worker.service.settings import ConfigError
from stream_worker.store.camera_health import Sample, sample
from stream_worker.store.console_thread import ConsoleError, start_console
from stream_worker.store.consumer import StoreConsumer, StoreRecord
from stream_worker.store.database import Database, DatabaseError
from stream_worker.store.dead_letters import DeadLetter, DeadLetterError, DeadLetters
from stream_worker.store.metrics import StoreMetrics
from stream_worker.store.retention import expire
from stream_worker.store.settings import StoreSettings, load_settings
from stream_worker.store.writer import Written, unwritable, write_batch

log = logging.getLogger("stream_worker.store")

POLL_S = 0.2
RETRY_FIRST_S, RETRY_MAX_S = 0.5, 10.0
# What the database says about a record's content (a value too long for its column, a NUL in a
# PostgreSQL text, a constraint): the same on every replay, unlike a database that is down.
CONTENT_ERRORS = (DataError, IntegrityError)

Message = PlateSighting | PlateAlert | PlateVisit
Decoded = tuple[StoreRecord, Message | Sample]


class StoreService(LoopService):
    log = log
    started_message = "store started"

    def __init__(self, settings: StoreSettings) -> None:
        self.settings = settings
        self.metrics = StoreMetrics()
        super().__init__(settings, self.metrics)
        self.database = Database(settings.resolved_database_url())
        self.database.migrate()
        self.metrics.database_up.set(1)
        self.book = OffsetBook()
        self._contracts: dict[str, type[Message]] = {
            settings.sightings_topic: PlateSighting,
            settings.alerts_topic: PlateAlert,
            settings.visits_topic: PlateVisit,
        }
        self._pending: list[StoreRecord] = []  # consumed, not yet in the database
        self._retry_s = 0.0
        self._retry_at = 0.0
        self._last_error = ""
        self._next_retention = 0.0
        # The console first: a port it cannot bind fails the start before the group is joined.
        skipped = self.metrics.console_skipped_records
        self.console = (
            start_console(settings, self.database, lambda topic: skipped.labels(topic).inc())
            if settings.console
            else None
        )
        self.dead_letters = DeadLetters(settings, self.metrics)
        self.consumer = StoreConsumer(settings, self.metrics, self._on_assign, self._on_revoke, self._on_lost)
        self.committer = Committer(self.consumer, self.book, self.metrics)
        self.closers.append(self.dead_letters.close)
        if self.console is not None:
            self.closers.append(self.console.stop)
        self.closers.append(self.database.dispose)

    # --- lifecycle -------------------------------------------------------------------------

    def _started_fields(self) -> dict[str, Any]:
        return {
            "topics": self.consumer.topics,
            "dlq_topic": self.settings.dlq_topic,
            "group_id": self.settings.group_id,
            "database": self.database.safe_url,
            "console": self.console.address if self.console else None,
        }

    def _turn(self) -> None:
        if not self._pending:
            self._pending = self.consumer.consume(self.settings.batch_records, POLL_S)
            for record in self._pending:
                self.book.consumed((record.topic, record.partition), record.offset, holds=1)
        if self._pending and time.monotonic() >= self._retry_at:
            self._write(self._pending)
        elif self._pending:
            time.sleep(min(POLL_S, self._retry_at - time.monotonic()))
        self._retain()
        self.loop_clock.tick()

    def _finish(self) -> dict[str, int]:
        if self._pending and self.fatal is None:
            self._write(self._pending)
        return {"unwritten": len(self._pending)}

    # --- the pipeline ----------------------------------------------------------------------

    def _decode(self, records: Sequence[StoreRecord]) -> tuple[list[Decoded], list[DeadLetter]]:
        decoded: list[Decoded] = []
        refused: list[DeadLetter] = []
        for record in records:
            self.metrics.records_in.labels(record.topic).inc()
            if record.topic == self.settings.camera_status_topic:
                self._decode_status(record, decoded, refused)
                continue
            contract = self._contracts.get(record.topic, PlateAlert)
            try:
                if record.value is None:
                    raise ValueError("no value (a tombstone)")
                message = contract.model_validate_json(record.value)
                problem = unwritable(message) if isinstance(message, PlateSighting | PlateVisit) else None
                if problem is not None:
                    raise ValueError(problem)
            except (ValidationError, ValueError) as error:
                self.metrics.invalid_records.labels(record.topic).inc()
                detail = f"not a {contract.__name__}: {_problems(error)}"
                refused.append(DeadLetter(record, ErrorReason.INVALID_RECORD, detail))
                continue
            decoded.append((record, message))
        return decoded, refused

    def _decode_status(self, record: StoreRecord, decoded: list[Decoded], refused: list[DeadLetter]) -> None:
        try:
            camera_id, status = decode_status(record.key, record.value)
            if status is None:
                return  # a camera removed: nothing to sample
            decoded.append((record, sample(camera_id, status)))
        except ValueError as error:
            self.metrics.invalid_records.labels(record.topic).inc()
            refused.append(DeadLetter(record, ErrorReason.INVALID_RECORD, str(error)))

    def _write(self, records: list[StoreRecord]) -> None:
        owned = [r for r in records if self.consumer.owns((r.topic, r.partition))]
        decoded, refused = self._decode(owned)
        started = time.perf_counter()
        try:
            written = self._write_decoded(decoded, refused)
        except (SQLAlchemyError, DatabaseError) as error:
            self._failed(error)
            return
        try:
            self.dead_letters.send(refused)
        except DeadLetterError as error:  # written, idempotently: written again with the retry
            self._failed(error, database_up=True)
            return
        self.metrics.write_seconds.observe(time.perf_counter() - started)
        self.metrics.database_up.set(1)
        self._retry_s, self._retry_at, self._last_error = 0.0, 0.0, ""
        self.metrics.rows_written.labels("sightings").inc(written.sightings)
        self.metrics.rows_written.labels("alerts").inc(written.alerts)
        self.metrics.rows_written.labels("pictures").inc(written.pictures)
        self.metrics.rows_written.labels("camera_health").inc(written.health)
        self.metrics.rows_written.labels("visits").inc(written.visits)
        for record in owned:
            self.book.release((record.topic, record.partition), record.offset)
        self._pending = []
        self.committer.commit()

    def _write_decoded(self, decoded: list[Decoded], refused: list[DeadLetter]) -> Written:
        """Write the batch in one transaction; when the database refuses it for a record's content,
        write it again one record a transaction, the records refused added to `refused`."""
        try:
            return self._transaction([message for _, message in decoded])
        except CONTENT_ERRORS as error:
            if len(decoded) == 1:
                refused.append(DeadLetter(decoded[0][0], ErrorReason.UNWRITABLE_RECORD, _first_line(error)))
                return Written()
            log.warning(
                "the database refused the batch for a record's content, writing it record by record",
                extra={"error": _first_line(error), "records": len(decoded)},
            )
        total = Written()
        for record, message in decoded:
            try:
                written = self._transaction([message])
            except CONTENT_ERRORS as error:
                refused.append(DeadLetter(record, ErrorReason.UNWRITABLE_RECORD, _first_line(error)))
                continue
            total = Written(
                total.sightings + written.sightings,
                total.alerts + written.alerts,
                total.pictures + written.pictures,
                total.health + written.health,
                total.visits + written.visits,
            )
        return total

    def _transaction(self, messages: Sequence[Message | Sample]) -> Written:
        batch_sightings = [m for m in messages if isinstance(m, PlateSighting)]
        batch_alerts = [m for m in messages if isinstance(m, PlateAlert)]
        batch_visits = [m for m in messages if isinstance(m, PlateVisit)]
        health = [m for m in messages if isinstance(m, Sample)]
        with self.database.begin() as connection:
            return write_batch(
                connection, batch_sightings, batch_alerts, health=health, batch_visits=batch_visits
            )

    def _failed(self, error: Exception, database_up: bool = False) -> None:
        """The batch is kept and written again after a capped backoff (`database_up`: the database
        took it, the dead-letter topic did not)."""
        self.metrics.write_failures.inc()
        self.metrics.database_up.set(1 if database_up else 0)
        self._retry_s = min(RETRY_MAX_S, max(RETRY_FIRST_S, self._retry_s * 2))
        self._retry_at = time.monotonic() + self._retry_s
        self._last_error = _first_line(error)
        log.warning(
            "dead letters not delivered, writing the batch again"
            if database_up
            else "database write failed, writing the batch again",
            extra={"error": self._last_error, "retry_in_s": self._retry_s, "records": len(self._pending)},
        )

    def _retain(self) -> None:
        if self.settings.retention_days <= 0 or time.monotonic() < self._next_retention:
            return
        self._next_retention = time.monotonic() + self.settings.retention_every_s
        try:
            with self.database.begin() as connection:
                deleted = expire(connection, self.settings.retention_days)
        except (SQLAlchemyError, DatabaseError) as error:
            log.warning("retention failed", extra={"error": _first_line(error)})
            return
        for table in ("sightings", "alerts", "pictures", "visits"):
            self.metrics.retention_deleted.labels(table).inc(getattr(deleted, table))
        self.metrics.retention_deleted.labels("camera_health").inc(deleted.health)
        if deleted.sightings or deleted.alerts:
            log.info(
                "retention deleted old rows", extra={"sightings": deleted.sightings, "alerts": deleted.alerts}
            )

    # --- rebalance -------------------------------------------------------------------------

    def _on_assign(self, partitions: list[Partition]) -> None:
        for partition in partitions:
            self.book.assign(partition)
        log.info("partitions assigned", extra={"partitions": [f"{t}:{p}" for t, p in partitions]})

    def _on_revoke(self, partitions: list[Partition]) -> None:
        if self.fatal is None and self._pending:
            self._write(self._pending)  # what was consumed is written and committed before it goes
        if self.fatal is None:
            self.committer.commit()
        self._forget(partitions)
        log.info("partitions revoked", extra={"partitions": [f"{t}:{p}" for t, p in partitions]})

    def _on_lost(self, partitions: list[Partition]) -> None:
        self._forget(partitions)
        log.warning("partitions lost", extra={"partitions": [f"{t}:{p}" for t, p in partitions]})

    def _forget(self, partitions: list[Partition]) -> None:
        self._pending = [r for r in self._pending if (r.topic, r.partition) not in partitions]
        for partition in partitions:
            self.book.forget(partition)

    # --- observability ---------------------------------------------------------------------

    def _readiness(self) -> tuple[bool, str]:
        if self._last_error:
            return False, f"database writes failing: {self._last_error}"
        if not self.consumer.assigned():
            return False, "no partitions assigned"
        return True, f"{len(self.consumer.assigned())} partitions assigned"


def _problems(error: Exception) -> str:
    """What is wrong with a record, field by field, without quoting its values (they may be huge)."""
    if not isinstance(error, ValidationError):
        return str(error)[:300]
    items = error.errors(include_url=False, include_input=False, include_context=False)
    parts = [
        f"{'.'.join(str(part) for part in item['loc']) or 'record'}: {item['msg']}" for item in items[:5]
    ]
    more = f" (and {len(items) - 5} more)" if len(items) > 5 else ""
    return "; ".join(parts) + more


def _first_line(error: Exception) -> str:
    original = getattr(error, "orig", None) or error
    text = str(original).strip()
    return text.splitlines()[0][:300] if text else type(original).__name__


def main(cli_args: Sequence[str]) -> int:
    """`stream-worker store`: 0 after a clean stop, 1 after a fatal Kafka error or a database that
    cannot be reached or migrated at start, 2 for bad settings or a console port it cannot bind."""
    try:
        settings = _checked(cli_args)
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    try:  # a database that cannot be reached or migrated is said before anything starts
        database = Database(settings.resolved_database_url())
        try:
            database.migrate()
        finally:
            database.dispose()
    except DatabaseError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    try:
        return serve(lambda: _checked(cli_args), StoreService)
    except ConsoleError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


def _checked(cli_args: Sequence[str]) -> StoreSettings:
    settings = load_settings(cli_args)
    try:
        settings.resolved_database_url()
    except ValueError as error:
        raise ConfigError(str(error)) from None
    return settings
