"""One webhook delivery attempt: POST the alert's JSON, signed, to the address the guard checked.

Signed as Standard Webhooks (standardwebhooks.com) define it, so that a receiver can refuse a
replay: `webhook-id` (the alert id, or the sighting id of an unknown vehicle, the same on every
retry: the receiver's idempotency key), `webhook-timestamp` (this attempt's unix seconds) and
`webhook-signature: v1,<base64 HMAC-SHA256 of "id.timestamp.body">`. Also `X-Stream-Worker-Event`
(the id again), `X-Stream-Worker-Kind` (alert or unknown_vehicle) and the legacy
`X-Stream-Worker-Signature: sha256=<hex HMAC-SHA256 of the raw body alone with the target's
secret>`, which proves who sent a body but not when. The secret's `${NAME}` (and a secret URL's,
written whole as `${NAME}`) is resolved from the target secrets (secrets.py) here and nowhere else;
every error message goes through `redact`, and a missing secret holds the delivery instead of
failing it. TLS is verified against the URL's host name (sent as SNI) while the connection goes to
the checked address; redirects are not followed (a redirect could point inside the network). A
target with `format: slack` or `teams` gets a one-line message instead of the JSON (messages.py),
signed the same way.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import ssl
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from stream_worker.contracts.credentials import redact
from stream_worker.contracts.notify import NotifyTarget, WebhookFormat
from stream_worker.notify.addresses import TargetRefused
from stream_worker.notify.addresses import resolve as resolve_address
from stream_worker.notify.messages import chat_body
from stream_worker.notify.rules import EventKind
from stream_worker.notify.secrets import MissingSecret, Secrets, resolve

if TYPE_CHECKING:
    import httpx

# httpx is imported where a webhook is sent (its import costs a notify start a third of a second
# of CPU, and a notify with no webhook target never needs it).

EVENT_HEADER = "X-Stream-Worker-Event"
KIND_HEADER = "X-Stream-Worker-Kind"
SIGNATURE_HEADER = "X-Stream-Worker-Signature"
ID_HEADER = "webhook-id"
TIMESTAMP_HEADER = "webhook-timestamp"
STANDARD_SIGNATURE_HEADER = "webhook-signature"
BASE64_SECRET_PREFIX = "whsec_"
RETRIED_STATUSES = frozenset({408, 425, 429})  # and every 5xx: the target may take it later
MAX_ERROR_CHARS = 300


@dataclass(frozen=True, slots=True)
class Attempt:
    ok: bool
    retry: bool  # a failure worth trying again (timeouts, refusals, 5xx); else final
    status: int | None = None
    error: str | None = None  # never holds a secret
    hold: bool = False  # a secret the target names is missing: kept and tried again, never failed


def signature(body: bytes, secret: str) -> str:
    """The legacy X-Stream-Worker-Signature: the body alone, keyed by the secret's UTF-8 text."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


class UnusableSecret(ValueError):
    """The target's secret cannot key a signature; the message never holds it."""


def signing_key(secret: str) -> bytes:
    """The Standard Webhooks key: a `whsec_` secret is the base64 of the key (decoded as the
    standardwebhooks package decodes it), any other secret its own UTF-8 bytes."""
    if not secret.startswith(BASE64_SECRET_PREFIX):
        key = secret.encode()
    else:
        try:
            key = base64.b64decode(secret[len(BASE64_SECRET_PREFIX) :] + "==")
        except binascii.Error:
            raise UnusableSecret("the secret starts with whsec_ but the rest is not base64") from None
    if not key:
        raise UnusableSecret("the secret is empty")
    return key


def standard_signature(event_id: str, timestamp: int, body: bytes, secret: str) -> str:
    """`webhook-signature`: v1 and the base64 HMAC-SHA256 of `id.timestamp.body`."""
    digest = hmac.new(signing_key(secret), f"{event_id}.{timestamp}.".encode() + body, hashlib.sha256)
    return "v1," + base64.b64encode(digest.digest()).decode("ascii")


def url_secrets(stored: str, url: str) -> list[str]:
    """A secret URL's parts to redact besides the whole (an error may quote its user info, path or
    query alone); none for a URL in clear."""
    if stored == url:
        return []
    import httpx

    parsed = httpx.URL(url) if "://" in url else None
    if parsed is None:
        return []
    path = parsed.raw_path.decode("ascii", "replace")
    return [parsed.userinfo.decode("ascii", "replace"), parsed.password or ""] + [
        part
        for part in (path, path.split("?", 1)[0], parsed.query.decode("ascii", "replace"))
        if len(part) > 1
    ]


class WebhookSender:
    """Sends attempts over one keep-alive client (safe to share between the lanes' threads)."""

    def __init__(
        self, allow_private: bool, ca_file: Path | None = None, secrets: Mapping[str, str] | None = None
    ) -> None:
        self._allow_private = allow_private
        self._secrets = Secrets() if secrets is None else secrets
        verify = ssl.create_default_context(cafile=str(ca_file)) if ca_file is not None else True
        import httpx

        self._client = httpx.Client(verify=verify, follow_redirects=False, trust_env=False)

    def send(
        self, target: NotifyTarget, event_id: str, body: bytes, kind: EventKind = EventKind.ALERT
    ) -> Attempt:
        import httpx

        secrets: list[str] = []
        try:
            url, secrets = resolve(target.url or "", self._secrets)
            secrets += url_secrets(target.url or "", url)
            if not url.lower().startswith(("http://", "https://")):
                return Attempt(False, retry=False, error=f"the secret URL {target.url} is not http(s)")
            timestamp = int(time.time())
            headers = {
                "Content-Type": "application/json",
                ID_HEADER: event_id,
                TIMESTAMP_HEADER: str(timestamp),
                EVENT_HEADER: event_id,
                KIND_HEADER: kind.value,
            }
            if target.format not in (None, WebhookFormat.JSON):
                body = chat_body(target.format, kind, body)
            if target.secret is not None:
                secret, more = resolve(target.secret, self._secrets)
                secrets += more
                headers[STANDARD_SIGNATURE_HEADER] = standard_signature(event_id, timestamp, body, secret)
                headers[SIGNATURE_HEADER] = signature(body, secret)
            request = self._request(url, headers, body, target.timeout_s)
            answer = self._client.send(request, stream=True)  # the status is all we need:
            answer.close()  # a body, however large, is never read
        except MissingSecret as error:
            return Attempt(False, retry=True, error=str(error), hold=True)
        except UnusableSecret as error:
            return Attempt(False, retry=False, error=str(error))
        except (TargetRefused, httpx.InvalidURL) as error:
            return Attempt(False, retry=False, error=redact(str(error), secrets)[:MAX_ERROR_CHARS])
        except httpx.HTTPError as error:
            text = f"{type(error).__name__}: {error}"
            return Attempt(False, retry=True, error=redact(text, secrets)[:MAX_ERROR_CHARS])
        status = answer.status_code
        if 200 <= status < 300:
            return Attempt(True, retry=False, status=status)
        retry = status >= 500 or status in RETRIED_STATUSES
        detail = "a redirect (not followed)" if 300 <= status < 400 else answer.reason_phrase
        return Attempt(False, retry=retry, status=status, error=f"answered {status} {detail}")

    def _request(self, url: str, headers: dict[str, str], body: bytes, timeout_s: float) -> httpx.Request:
        """The POST, addressed to the checked IP; Host and TLS name stay the URL's host."""
        import httpx

        parsed = httpx.URL(url)
        host = parsed.host
        port = parsed.port or (443 if parsed.scheme == "https" else 80)
        address = resolve_address(host, port, self._allow_private)
        headers["Host"] = parsed.netloc.decode("ascii").rpartition("@")[2]
        extensions: dict[str, object] = {"timeout": httpx.Timeout(timeout_s).as_dict()}
        if parsed.scheme == "https":
            extensions["sni_hostname"] = host
        return httpx.Request(
            "POST", parsed.copy_with(host=str(address)), headers=headers, content=body, extensions=extensions
        )

    def close(self) -> None:
        self._client.close()
