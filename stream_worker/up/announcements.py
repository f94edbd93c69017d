"""What the history store says for a person when it starts: on its first start with no users
configured, the console's admin password (printed once, beside its JSON log). `up` and the demo
pass those lines on, since nobody reads a child's log."""

from __future__ import annotations

from stream_worker.launchers.service_child import ServiceChild

WORDS = ("password", "sign in", "sign-in", "token")


def announcements(store: ServiceChild) -> list[str]:
    """The plain lines of the store's last start that speak of signing in."""
    return [line.strip() for line in store.said() if any(word in line.lower() for word in WORDS)]
