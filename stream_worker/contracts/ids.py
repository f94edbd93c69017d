"""The ids every contract shares, defined once: what a camera id may be, and the UUID form of the
sighting and alert ids. They end up in URL paths, Kafka keys and database columns, so they are
restricted to characters that need no escaping anywhere and to a length every column holds.

- A camera id: 1 to 64 ASCII letters, digits, `.`, `_` and `-`, starting with a letter or a digit
  (`gate-1`, `cam07`, `yard.north`): no `/`, `?`, `#`, spaces, `..` at the start or control
  characters. Refused by `cameras set`, the console, the connector (the camera's record is
  skipped and logged) and the worker (the frame is dead-lettered, `invalid_camera_id`).
- A sighting or alert id: a UUID in its canonical lowercase text form (`str(uuid.uuid5(...))`).
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import Field

MAX_CAMERA_ID_LENGTH = 64
CAMERA_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
CAMERA_ID_RULE = f"1 to {MAX_CAMERA_ID_LENGTH} of A-Z a-z 0-9 . _ - (starting with a letter or a digit)"
UUID_PATTERN = r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"

_CAMERA_ID = re.compile(CAMERA_ID_PATTERN)

CameraId = Annotated[
    str,
    Field(
        min_length=1,
        max_length=MAX_CAMERA_ID_LENGTH,
        pattern=CAMERA_ID_PATTERN,
        description=f"The camera's id: {CAMERA_ID_RULE}.",
    ),
]
Uuid = Annotated[
    str,
    Field(
        min_length=36,
        max_length=36,
        pattern=UUID_PATTERN,
        description="A UUID, canonical lowercase text form.",
    ),
]


def camera_id_problem(camera_id: str) -> str | None:
    """Why `camera_id` is not a camera id, in words for people (the id shown escaped), or None."""
    if _CAMERA_ID.fullmatch(camera_id):  # fullmatch: `$` alone would let a final newline through
        return None
    if not camera_id:
        return "is empty"
    if len(camera_id) > MAX_CAMERA_ID_LENGTH:
        return f"has {len(camera_id)} characters, more than {MAX_CAMERA_ID_LENGTH}"
    return f"{_shown(camera_id)} is not {CAMERA_ID_RULE}"


def _shown(camera_id: str) -> str:
    text = ascii(camera_id)  # control, RTL and other invisible characters spelled out
    return text if len(text) <= 80 else text[:77] + "..."
