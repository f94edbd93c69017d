"""`cameras status` under a running `stream-worker up`: the camera states from its console's view
of the status topic (`GET /api/camera-status?since=SECONDS`, signed in with `up`'s read-only
`<data dir>/console.token`), which the console follows in memory from its start. One HTTP request
on the loopback instead of a broker's metadata, offsets and fetches: the answer's time no longer
follows the broker's load. Only the standard library's HTTP client is imported (no Kafka client).

`ConsoleUnavailable` says why the console could not answer (no token, not listening, refused, an
answer that is not camera states); its message never holds the token. The caller reads the topic
then.
"""

from __future__ import annotations

import http.client
from urllib.parse import quote, urlsplit

import orjson

from stream_worker.cameras.status import CameraStatus
from stream_worker.contracts.running_up import CONSOLE_TOKEN_FILE, RunningUp, read_token

PATH = "/api/camera-status"
MAX_ANSWER_BYTES = 16 * 1024 * 1024


class ConsoleUnavailable(Exception):
    """The console did not give the camera states; the message says why (never the token)."""


def read_from_console(up: RunningUp, since_s: float, timeout_s: float) -> list[CameraStatus]:
    """The states of the cameras whose record was renewed in the last `since_s` seconds, as the
    console of `up` follows them."""
    if up.console_url is None:
        raise ConsoleUnavailable("the running up has no console")
    token = read_token(up.data_dir / CONSOLE_TOKEN_FILE)
    if token is None:
        raise ConsoleUnavailable(f"no console token in {up.data_dir}")
    address = urlsplit(up.console_url)
    if address.scheme not in ("http", "https") or not address.hostname:
        raise ConsoleUnavailable("the console's address is not an http(s) URL")
    kind = http.client.HTTPSConnection if address.scheme == "https" else http.client.HTTPConnection
    connection = kind(address.hostname, address.port, timeout=timeout_s)
    target = f"{address.path.rstrip('/')}{PATH}?since={quote(repr(since_s))}"
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
    try:
        connection.request("GET", target, headers=headers)
        answer = connection.getresponse()
        body = answer.read(MAX_ANSWER_BYTES + 1)
    except TimeoutError:
        raise ConsoleUnavailable(f"the console did not answer within {timeout_s:g} s") from None
    except (OSError, http.client.HTTPException) as error:
        raise ConsoleUnavailable(f"the console did not answer ({type(error).__name__})") from None
    finally:
        connection.close()
    if answer.status != 200:
        raise ConsoleUnavailable(f"the console answered {answer.status} {answer.reason}".rstrip())
    if len(body) > MAX_ANSWER_BYTES:
        raise ConsoleUnavailable("the console's answer is too long")
    try:
        states = orjson.loads(body)
        if not isinstance(states, list):
            raise ValueError("not a list")
        return [CameraStatus.from_dict(state) for state in states]
    except ValueError:  # orjson.JSONDecodeError is one
        raise ConsoleUnavailable("the console's answer is not a list of camera states") from None
