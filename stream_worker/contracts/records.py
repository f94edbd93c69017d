"""How the settings topics' records are read (the watch list, the cameras' settings, the notify
targets): a text key and a JSON value, with one wording of what is wrong with them."""

from __future__ import annotations

from typing import Any

import orjson


def text_key(key: bytes | None, meaning: str, error: type[ValueError]) -> str:
    """A record's key as text; `error` when it has none (`meaning`: what the key must be) or when
    it is not UTF-8."""
    if key is None:
        raise error(f"record has no key (the key must be {meaning})")
    try:
        return key.decode("utf-8")
    except UnicodeDecodeError as problem:
        raise error(f"key {key!r} is not UTF-8") from problem


def json_value(value: bytes, not_json: str, error: type[ValueError]) -> Any:
    """A record's value parsed; `error` with `not_json` (what to say) and where it is not JSON."""
    try:
        return orjson.loads(value)
    except orjson.JSONDecodeError as problem:
        raise error(f"{not_json}: {problem}") from problem
