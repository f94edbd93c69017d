"""The console's side of sessions: the signed cookie carries one random id (`sid`), the database
(store/sessions.py) says whether it is signed in, as whom, and for how long yet. The CSRF token is
an HMAC of the id, so the cookie holds nothing else a session needs; a visitor not signed in gets
an id too (never stored), for the sign-in form's token, and a new one on sign-in."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import MutableMapping
from typing import Any

from stream_worker.store import sessions as stored
from stream_worker.store.database import Database
from stream_worker.store.web.users import User, Users

SID = "sid"
Cookie = MutableMapping[str, Any]


class SessionBook:
    """Sessions of `users` in `database`, signed in for `lifetimes`; `key` makes the CSRF tokens."""

    def __init__(self, database: Database, users: Users, lifetimes: stored.Lifetimes, key: str) -> None:
        self.database, self.users, self.lifetimes = database, users, lifetimes
        self._key = key.encode("utf-8")

    @staticmethod
    def _sid(cookie: Cookie) -> str | None:
        sid = cookie.get(SID)
        return sid if isinstance(sid, str) and 0 < len(sid) <= 128 else None

    def user(self, cookie: Cookie, touch: bool = True) -> User | None:
        """Who this cookie's session is signed in as (None: nobody, or the session has ended); a
        request of the user's `touch`es it (its idle time starts again), a check does not."""
        sid = self._sid(cookie)
        if sid is None:
            return None
        with self.database.begin() as connection:
            found = stored.find(connection, sid, self.lifetimes, touch=touch)
            if found is None:
                return None
            user = self.users.get(found.user)
            if user is None or found.password_mark != stored.password_mark(user.password_hash):
                stored.end(connection, sid)  # the user is gone or has a new password
                return None
        return user

    def sign_in(self, cookie: Cookie, user: User) -> None:
        """A new session (a new id: none chosen before sign-in survives it)."""
        with self.database.begin() as connection:
            mark = stored.password_mark(user.password_hash)
            sid = stored.start(connection, user.name, mark, self.lifetimes)
        cookie.clear()
        cookie[SID] = sid

    def sign_out(self, cookie: Cookie) -> None:
        sid = self._sid(cookie)
        if sid is not None:
            with self.database.begin() as connection:
                stored.end(connection, sid)
        cookie.clear()

    def revoke(self, user: str | None, keep: Cookie | None = None) -> int:
        """End every session of `user` (None: everyone's) but `keep`'s; how many ended."""
        with self.database.begin() as connection:
            return stored.revoke(connection, user, self._sid(keep) if keep is not None else None)

    def csrf(self, cookie: Cookie) -> str:
        """The session's CSRF token (an id made now for a visitor who has none)."""
        sid = self._sid(cookie)
        if sid is None:
            sid = cookie[SID] = stored.new_id()
        return hmac.new(self._key, b"csrf:" + sid.encode("utf-8"), hashlib.sha256).hexdigest()

    def expected_csrf(self, cookie: Cookie) -> str | None:
        """The token a write must carry; None when the cookie has no session id at all."""
        return self.csrf(cookie) if self._sid(cookie) is not None else None
