"""Webhook signatures that stop replays (notify/webhook.py): Standard Webhooks headers, checked by
the `standardwebhooks` package (an implementation of the standard that is not ours) on what a
real local HTTP receiver got; the legacy body-only signature beside them."""

from __future__ import annotations

import base64
import time
from types import SimpleNamespace

import pytest
from standardwebhooks import Webhook, WebhookVerificationError
from support import serve_http

from stream_worker.notify import webhook
from stream_worker.notify.webhook import (
    ID_HEADER,
    SIGNATURE_HEADER,
    STANDARD_SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    WebhookSender,
    signature,
)
from tests.notify.receivers import SECRET
from tests.notify.test_webhook import BODY, Received, recording, target

BASE64_SECRET = "whsec_" + base64.b64encode(bytes(range(32))).decode()


def deliver(secret: str, event_id: str = "a-1") -> tuple[dict[str, str], bytes]:
    received = Received()
    sender = WebhookSender(allow_private=True, secrets={"HOOK_SECRET": secret})
    with serve_http(recording(received)) as port:
        attempt = sender.send(target(f"http://127.0.0.1:{port}/hook"), event_id, BODY)
    assert attempt.ok, attempt.error
    [(_, headers, body)] = received.requests
    return {name.lower(): value for name, value in headers.items()}, body


@pytest.mark.parametrize(
    ("secret", "verifier"),
    [(SECRET, Webhook(SECRET.encode())), (BASE64_SECRET, Webhook(BASE64_SECRET))],
    ids=["raw secret, its bytes", "whsec_ base64 secret"],
)
def test_a_delivery_verifies_with_the_standard_webhooks_package(secret: str, verifier: Webhook) -> None:
    headers, body = deliver(secret)
    assert verifier.verify(body, headers) is not None  # raises WebhookVerificationError otherwise
    assert headers[ID_HEADER] == "a-1"
    assert abs(int(headers[TIMESTAMP_HEADER]) - time.time()) < 10
    assert headers[STANDARD_SIGNATURE_HEADER].startswith("v1,")
    assert headers[SIGNATURE_HEADER.lower()] == signature(body, secret)  # the legacy one stays


def test_a_replay_is_refused_by_the_receiver(monkeypatch) -> None:
    verifier = Webhook(SECRET.encode())
    headers, body = deliver(SECRET)
    with pytest.raises(WebhookVerificationError, match="No matching signature"):  # a fresh time: forged
        verifier.verify(body, {**headers, TIMESTAMP_HEADER: str(int(time.time()) + 1)})
    with pytest.raises(WebhookVerificationError, match="No matching signature"):  # the id is signed too
        verifier.verify(body, {**headers, ID_HEADER: "a-2"})
    six_minutes_ago = time.time() - 360
    monkeypatch.setattr(webhook, "time", SimpleNamespace(time=lambda: six_minutes_ago))
    old_headers, old_body = deliver(SECRET)  # what someone recorded and plays again 6 minutes on
    with pytest.raises(WebhookVerificationError, match="too old"):
        verifier.verify(old_body, old_headers)


def test_every_retry_has_the_same_id_and_its_own_time(monkeypatch) -> None:
    received = Received()
    sender = WebhookSender(allow_private=True, secrets={"HOOK_SECRET": SECRET})
    verifier = Webhook(SECRET.encode())
    clock = [time.time() - 30]
    monkeypatch.setattr(webhook, "time", SimpleNamespace(time=lambda: clock[0]))
    with serve_http(recording(received)) as port:
        for _ in range(2):
            assert sender.send(target(f"http://127.0.0.1:{port}/hook"), "a-1", BODY).ok
            clock[0] += 20
    first, second = ({k.lower(): v for k, v in headers.items()} for _, headers, _ in received.requests)
    assert first[ID_HEADER] == second[ID_HEADER] == "a-1"
    assert int(second[TIMESTAMP_HEADER]) - int(first[TIMESTAMP_HEADER]) == 20
    for headers in (first, second):
        verifier.verify(BODY, headers)


@pytest.mark.parametrize("secret", ["whsec_", "whsec_A"])
def test_an_unusable_base64_secret_is_a_final_error_without_the_secret(secret: str) -> None:
    attempt = WebhookSender(allow_private=True, secrets={"HOOK_SECRET": secret}).send(
        target("http://127.0.0.1:9/"), "a-1", BODY
    )
    assert (attempt.ok, attempt.retry) == (False, False)
    assert "secret" in (attempt.error or "") and secret not in (attempt.error or "")
