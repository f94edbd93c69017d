"""How the store's lists page: newest first by (time, row number), a page's `next_cursor` naming
its last row (search.py, visits.py, queries.py); and the live feed's polls, oldest first after the
last row number seen. A plain range on the time (its indexes serve it) with the tie broken by the
row number, so that a page never repeats or skips a row that shares its time."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import Column, Connection, RowMapping, and_, or_, select

from stream_worker.store.rows import decode_cursor, encode_cursor


def newest_first(
    connection: Connection,
    columns: Sequence[Any],
    time: Column[Any],
    seq: Column[Any],
    conditions: Iterable[Any],
    cursor: str | None,
    limit: int,
) -> tuple[Sequence[RowMapping], str | None]:
    """At most `limit` rows of `columns` (among them `time` and `seq`) that meet `conditions`,
    after the row `cursor` names, and the cursor of the page after them (None: the last page).
    ValueError for a cursor this store did not make."""
    where = list(conditions)
    if cursor is not None:
        at, last_seq = decode_cursor(cursor)
        where.append(and_(time <= at, or_(time < at, seq < last_seq)))
    statement = select(*columns).where(*where).order_by(time.desc(), seq.desc()).limit(limit + 1)
    rows = connection.execute(statement).mappings().all()
    if len(rows) <= limit:
        return rows, None
    last = rows[limit - 1]
    return rows[:limit], encode_cursor(last[time.key], last[seq.key])


def live_feed(
    connection: Connection, columns: Sequence[Any], seq: Column[Any], after_seq: int | None, limit: int
) -> Sequence[RowMapping]:
    """The rows stored after `after_seq`, oldest first, at most `limit` (poll again from the last
    one's seq); without `after_seq`, the newest `limit`, oldest first."""
    statement = select(*columns)
    if after_seq is None:
        rows = connection.execute(statement.order_by(seq.desc()).limit(limit)).mappings().all()
        return list(reversed(rows))
    return connection.execute(statement.where(seq > after_seq).order_by(seq).limit(limit)).mappings().all()
