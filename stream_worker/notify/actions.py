"""What the `stream-worker notify targets` commands do, apart from parsing their options (cli.py).

Each returns the exit status (service/topic_actions.py: 0 done, 1 the broker failed, 2 bad input,
nothing written). What they print is what is stored: secrets only as their ${NAME} references.
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import orjson
from confluent_kafka import KafkaException

from stream_worker.contracts import topics
from stream_worker.contracts.notify import (
    STATUS_KEY,
    NotifyTarget,
    NotifyTargetError,
    parse_target_text,
    secret_names,
)
from stream_worker.notify.replays import choose, publish_replays, read_dead_letters
from stream_worker.notify.targets import STATUS, TARGETS, TargetsSnapshot, target_record, validate_name
from stream_worker.service.compacted import CompactedTopicError
from stream_worker.service.options import Connection
from stream_worker.service.topic_actions import (
    BAD_INPUT,
    BROKER_FAILED,
    OK,
    Echo,
    read_settings_topic,
    remove_from_settings_topic,
    settings_json,
    write_settings_topic,
)


def load_target_file(path: Path) -> NotifyTarget:
    """The target in a JSON or YAML file; NotifyTargetError says what is wrong."""
    source = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise NotifyTargetError([f"cannot read it: {error}"], source) from error
    return parse_target_text(text, source)


STATUS_TOPIC = topics.NOTIFY_STATUS.name
WHEN_MISSING = "there are no targets"


def set_target(
    connection: Connection, name: str, path: Path, out: Echo, err: Echo, status_topic: str = STATUS_TOPIC
) -> int:
    """Check the file whole, then store it as the target `name` (replacing any it had); warn when a
    secret it names is one that notify says it lacks."""
    try:
        name = validate_name(name)
        target = load_target_file(path)
    except ValueError as error:
        err(f"error: {error}")
        return BAD_INPUT
    status = write_settings_topic(connection, TARGETS, [target_record(name, target)], err)
    if status != OK:
        return status
    out(f"set {name}: {summary(target)}")
    warning = missing_secrets(connection, status_topic, target)
    if warning is not None:
        err(f"warning: {warning}")
    return OK


def missing_secrets(connection: Connection, status_topic: str, target: NotifyTarget) -> str | None:
    """What to say when notify (its `notify-status` record: the names of its target secrets) lacks
    a secret the target names, or cannot say; None when it has them all."""
    names = secret_names(target)
    if not names:
        return None
    try:
        snapshot = STATUS.read(
            connection.bootstrap_servers, status_topic, connection.config, connection.timeout_s
        )
    except (CompactedTopicError, KafkaException) as error:
        return f"could not ask which secrets notify has: {error}"
    status = snapshot.values.get(STATUS_KEY)
    if status is None:
        return (
            f"notify has not said which secrets it has (not started yet?): {', '.join(names)} must be in "
            "its secrets file (or STREAM_WORKER_SECRET_<NAME>)"
        )
    missing = status.missing(target)
    if not missing:
        return None
    problem = f"; its secrets file is refused: {status.secrets_problem}" if status.secrets_problem else ""
    return (
        f"notify has no secret {', '.join(missing)}: this target's deliveries are held until it is in "
        f"notify's secrets file (or STREAM_WORKER_SECRET_<NAME>){problem}"
    )


def get_target(connection: Connection, name: str, out: Echo, err: Echo) -> int:
    """Print the target as JSON (a file `set` takes back); 2 when there is none by that name."""
    snapshot = _read(connection, err)
    if snapshot is None:
        return BROKER_FAILED
    target = snapshot.values.get(name)
    if target is None:
        err(f"error: no target named {name!r}")
        return BAD_INPUT
    out(settings_json(target))
    return OK


def list_targets(connection: Connection, as_json: bool, out: Echo, err: Echo) -> int:
    """Every target by name: a table, or one {name, target} JSON object per line."""
    snapshot = _read(connection, err)
    if snapshot is None:
        return BROKER_FAILED
    targets = sorted(snapshot.values.items())
    if as_json:
        for name, target in targets:
            out(orjson.dumps({"name": name, "target": target.model_dump(mode="json")}).decode())
    elif targets:
        out(_row("NAME", "TYPE", "ENABLED", "ADDRESS"))
        for name, target in targets:
            out(_row(name, target.type.value, "yes" if target.enabled else "no", target.url or "-"))
    else:
        err(f"no targets on {connection.topic}")
    return OK


def remove(connection: Connection, name: str, out: Echo, err: Echo) -> int:
    """Write the target's tombstone, unless there is no target by that name."""
    try:
        name = validate_name(name)
    except ValueError as error:
        err(f"error: {error}")
        return BAD_INPUT
    return remove_from_settings_topic(
        connection,
        TARGETS,
        name,
        [target_record(name, None)],
        when_missing=WHEN_MISSING,
        absent=f"there is no target {name}",
        removed=lambda _target: f"removed the target {name}",
        out=out,
        err=err,
    )


def summary(target: NotifyTarget) -> str:
    rules = target.rules
    parts = [target.type.value, target.url or "", "signed" if target.secret else "unsigned"]
    if rules.lists:
        parts.append("lists " + ",".join(rules.lists))
    if rules.cameras:
        parts.append("cameras " + ",".join(rules.cameras))
    if rules.active_hours:
        parts.append(f"{len(rules.active_hours)} active window(s) ({rules.timezone})")
    if rules.cooldown_s:
        parts.append(f"cooldown {rules.cooldown_s:g} s")
    if not target.enabled:
        parts.append("disabled")
    return ", ".join(part for part in parts if part)


def _read(connection: Connection, err: Echo) -> TargetsSnapshot | None:
    return read_settings_topic(connection, TARGETS, WHEN_MISSING, err)


def _row(name: str, kind: str, enabled: str, address: str) -> str:
    return f"{name:<24} {kind:<8} {enabled:<8} {address}".rstrip()


def replay(
    connection: Connection, replays_topic: str, target: str | None, since: str | None, out: Echo, err: Echo
) -> int:
    """Send the dead letters (of `target`, since `since`) again, with their event ids: each onto the
    replays topic, which the notify service delivers from (replays.py)."""
    try:
        since_at = parse_time(since) if since else None
    except ValueError:
        err(f"error: --since {since!r} is not an ISO 8601 time (e.g. 2026-12-06T10:00:00Z)")
        return BAD_INPUT
    try:
        letters = read_dead_letters(
            connection.bootstrap_servers, connection.topic, connection.config, connection.timeout_s
        )
        chosen = choose(letters, target, since_at)
        if chosen:
            publish_replays(
                connection.bootstrap_servers, replays_topic, chosen, connection.config, connection.timeout_s
            )
    except (CompactedTopicError, KafkaException) as error:
        err(f"error: {error}")
        return BROKER_FAILED
    counts = Counter(letter.target for letter in chosen)
    detail = ", ".join(f"{name} {count}" for name, count in sorted(counts.items()))
    out(
        f"replayed {len(chosen)} dead letter(s) of {len(letters)} on {connection.topic}"
        + (f": {detail}" if detail else "")
    )
    return OK


def parse_time(text: str) -> datetime:
    """An ISO 8601 time; UTC when it names no offset."""
    at = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)
