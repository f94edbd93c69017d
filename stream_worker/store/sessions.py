"""The console's sessions, kept in the store's database so that sign-out, a password change and an
admin's "sign out everywhere" end them on every replica at once.

A session's id is 32 random bytes that only its cookie carries; the row keeps its SHA-256 (a copy
of the table signs nobody in). A session ends when it is revoked (the row deleted), when it has
been idle longer than the idle lifetime or lived longer than the absolute one, or when its user's
password is no longer the one it was signed in with (`password_mark`).
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import Connection, delete, insert, or_, select, update

from stream_worker.store.rows import utc
from stream_worker.store.schema import console_sessions as table


@dataclass(frozen=True)
class Lifetimes:
    """How long a session lasts: `idle_s` without a request, `absolute_s` at most."""

    idle_s: float
    absolute_s: float

    @property
    def touch_every_s(self) -> float:
        """How stale `last_seen` may get before a request writes it again (not every request writes)."""
        return min(60.0, self.idle_s / 10)


@dataclass(frozen=True)
class Session:
    user: str
    password_mark: str


def new_id() -> str:
    return secrets.token_urlsafe(32)


def id_hash(session_id: str) -> str:
    return hashlib.sha256(session_id.encode("utf-8")).hexdigest()


def password_mark(password_hash: str) -> str:
    """Names the password a session was signed in with, so that changing it ends the session."""
    return hashlib.sha256(password_hash.encode("utf-8")).hexdigest()


def start(
    connection: Connection, user: str, mark: str, lifetimes: Lifetimes, now: datetime | None = None
) -> str:
    """A new session of `user`; returns its id (for the cookie). Ended sessions are purged here."""
    now = now or datetime.now(UTC)
    purge(connection, lifetimes, now)
    session_id = new_id()
    connection.execute(
        insert(table).values(
            id_hash=id_hash(session_id), user=user, password_mark=mark, created_at=now, last_seen=now
        )
    )
    return session_id


def find(
    connection: Connection,
    session_id: str,
    lifetimes: Lifetimes,
    now: datetime | None = None,
    touch: bool = True,
) -> Session | None:
    """The live session of this id, its `last_seen` moved on if `touch` (a request of its user);
    None (and the row gone) if it ended."""
    now = now or datetime.now(UTC)
    key = id_hash(session_id)
    row = connection.execute(select(table).where(table.c.id_hash == key)).first()
    if row is None:
        return None
    created, seen = utc(row.created_at), utc(row.last_seen)
    assert created is not None and seen is not None  # NOT NULL columns
    if now - created > timedelta(seconds=lifetimes.absolute_s) or now - seen > timedelta(
        seconds=lifetimes.idle_s
    ):
        connection.execute(delete(table).where(table.c.id_hash == key))
        return None
    if touch and now - seen > timedelta(seconds=lifetimes.touch_every_s):
        connection.execute(update(table).where(table.c.id_hash == key).values(last_seen=now))
    return Session(row.user, row.password_mark)


def end(connection: Connection, session_id: str) -> None:
    connection.execute(delete(table).where(table.c.id_hash == id_hash(session_id)))


def revoke(connection: Connection, user: str | None, keep: str | None = None) -> int:
    """End every session of `user` (None: of everyone) but the one whose id is `keep`; how many."""
    statement = delete(table)
    if user is not None:
        statement = statement.where(table.c.user == user)
    if keep is not None:
        statement = statement.where(table.c.id_hash != id_hash(keep))
    return connection.execute(statement).rowcount or 0


def purge(connection: Connection, lifetimes: Lifetimes, now: datetime | None = None) -> int:
    """Delete the rows of sessions that ended by age (they would be refused anyway)."""
    now = now or datetime.now(UTC)
    ended = or_(
        table.c.last_seen < now - timedelta(seconds=lifetimes.idle_s),
        table.c.created_at < now - timedelta(seconds=lifetimes.absolute_s),
    )
    return connection.execute(delete(table).where(ended)).rowcount or 0
