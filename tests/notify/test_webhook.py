"""One webhook attempt (notify/webhook.py) against real local HTTP(S) servers: the signature and the
event id, what is retried, TLS verified against the URL's host while the connection goes to the
checked address, the SSRF guard (notify/addresses.py), and no secret in an error."""

from __future__ import annotations

import hashlib
import hmac
import http.server
import ipaddress
import ssl
import threading
from pathlib import Path

import pytest
from certificates import make_authority
from support import reply, serve_http

from stream_worker.contracts.notify import parse_target
from stream_worker.notify.addresses import TargetRefused, address_problem, resolve
from stream_worker.notify.webhook import EVENT_HEADER, SIGNATURE_HEADER, WebhookSender, signature
from tests.notify.receivers import SECRET

BODY = b'{"alert_id": "a-1", "plate": "B840CK197"}'


class Received:
    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, str], bytes]] = []
        self.lock = threading.Lock()


def recording(received: Received, status: int = 200):
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            with received.lock:
                received.requests.append((self.path, dict(self.headers), body))
            reply(self, status, "text/plain", b"ok")

        def log_message(self, *_args: object) -> None:
            pass

    return Handler


def target(url: str, secret: str | None = "${HOOK_SECRET}", timeout_s: float = 5.0):
    return parse_target({"type": "webhook", "url": url, "secret": secret, "timeout_s": timeout_s})


def test_signed_post_with_the_event_id() -> None:
    received = Received()
    sender = WebhookSender(allow_private=True, secrets={"HOOK_SECRET": SECRET})
    with serve_http(recording(received)) as port:
        attempt = sender.send(target(f"http://127.0.0.1:{port}/hook"), "a-1", BODY)
    assert attempt.ok and attempt.status == 200
    [(path, headers, body)] = received.requests
    assert (path, body) == ("/hook", BODY)
    assert headers[EVENT_HEADER] == "a-1"
    expected = hmac.new(SECRET.encode(), BODY, hashlib.sha256).hexdigest()
    assert headers[SIGNATURE_HEADER] == f"sha256={expected}" == signature(BODY, SECRET)
    assert headers["Host"] == f"127.0.0.1:{port}"


@pytest.mark.parametrize(
    ("status", "retry"), [(500, True), (503, True), (429, True), (404, False), (301, False)]
)
def test_what_is_tried_again(status: int, retry: bool) -> None:
    sender = WebhookSender(allow_private=True, secrets={"HOOK_SECRET": SECRET})
    with serve_http(recording(Received(), status)) as port:
        attempt = sender.send(target(f"http://127.0.0.1:{port}/"), "a-1", BODY)
    assert (attempt.ok, attempt.retry, attempt.status) == (False, retry, status)


def test_refused_and_timed_out_are_tried_again_without_the_secret_url_in_the_error() -> None:
    """A secret URL (url: ${HOOK_URL}) is redacted from errors, whatever case they print it in."""
    path = "/services/T0/B0/XsEcReTpAtH"

    def sender_to(port: int) -> WebhookSender:
        hook_url = f"http://127.0.0.1:{port}{path}"
        return WebhookSender(allow_private=True, secrets={"HOOK_SECRET": SECRET, "HOOK_URL": hook_url})

    with serve_http(recording(Received())) as port:
        pass  # closed: nothing listens on the port any more
    refused = sender_to(port).send(target("${HOOK_URL}"), "a-1", BODY)
    assert (refused.ok, refused.retry) == (False, True)
    assert "xsecretpath" not in (refused.error or "").lower() and "s3cret" not in (refused.error or "")

    class Slow(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            threading.Event().wait(2)

        def log_message(self, *_args: object) -> None:
            pass

    with serve_http(Slow) as port:
        slow = sender_to(port).send(target("${HOOK_URL}", timeout_s=0.3), "a-1", BODY)
    assert (slow.ok, slow.retry) == (False, True) and "Timeout" in (slow.error or "")
    assert "xsecretpath" not in (slow.error or "").lower()

    received = Received()
    with serve_http(recording(received)) as port:
        sent = sender_to(port).send(target("${HOOK_URL}"), "a-1", BODY)
    assert sent.ok and received.requests[0][0] == path


def test_a_missing_secret_holds_the_delivery_naming_only_the_reference() -> None:
    attempt = WebhookSender(allow_private=True, secrets={}).send(target("http://127.0.0.1:9/"), "a-1", BODY)
    assert (attempt.ok, attempt.retry, attempt.hold) == (False, True, True)
    assert "HOOK_SECRET" in (attempt.error or "") and "environment variable" not in (attempt.error or "")


def test_a_secret_url_that_is_not_http_is_refused_without_its_value() -> None:
    sender = WebhookSender(allow_private=True, secrets={"HOOK_SECRET": SECRET, "HOOK_URL": "ftp://Pw-77@x/"})
    attempt = sender.send(target("${HOOK_URL}"), "a-1", BODY)
    assert (attempt.ok, attempt.retry) == (False, False)
    assert "${HOOK_URL}" in (attempt.error or "") and "pw-77" not in (attempt.error or "").lower()


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:9/", "http://169.254.169.254/latest/meta-data/", "http://localhost:9/"]
)
def test_private_and_metadata_addresses_are_refused_without_the_flag(url: str) -> None:
    attempt = WebhookSender(allow_private=False, secrets={"HOOK_SECRET": SECRET}).send(
        target(url), "a-1", BODY
    )
    assert (attempt.ok, attempt.retry) == (False, False)
    assert "--allow-private-targets" in (attempt.error or "")


@pytest.mark.parametrize(
    ("address", "refused"),
    [
        ("127.0.0.1", True),
        ("10.1.2.3", True),
        ("192.168.1.1", True),
        ("172.16.0.1", True),
        ("169.254.169.254", True),
        ("100.64.0.1", True),
        ("0.0.0.0", True),
        ("224.0.0.1", True),
        ("::1", True),
        ("fd00:ec2::254", True),
        ("fe80::1", True),
        ("::ffff:127.0.0.1", True),
        ("8.8.8.8", False),
        ("2606:4700:4700::1111", False),
    ],
)
def test_address_guard(address: str, refused: bool) -> None:
    assert (address_problem(ipaddress.ip_address(address)) is not None) == refused


def test_resolve_checks_every_address_unless_allowed() -> None:
    with pytest.raises(TargetRefused, match="address not allowed"):
        resolve("localhost", 80, allow_private=False)
    assert resolve("127.0.0.1", 80, allow_private=True) == ipaddress.ip_address("127.0.0.1")
    with pytest.raises(TargetRefused, match="does not resolve"):
        resolve("no-such-host.invalid", 80, allow_private=True)


def test_https_is_verified_against_the_url_host(tmp_path: Path) -> None:
    authority = make_authority(tmp_path)
    server_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_tls.load_cert_chain(authority.server.cert, authority.server.key)
    received = Received()
    with serve_http(recording(received), tls=server_tls) as port:
        url = f"https://localhost:{port}/hook"
        trusted = WebhookSender(True, authority.ca, {"HOOK_SECRET": SECRET}).send(target(url), "a-1", BODY)
        untrusted = WebhookSender(True, None, {"HOOK_SECRET": SECRET}).send(target(url), "a-2", BODY)
    assert trusted.ok, trusted.error
    assert not untrusted.ok and "CERTIFICATE_VERIFY_FAILED" in (untrusted.error or "")
    assert [headers[EVENT_HEADER] for _, headers, _ in received.requests] == ["a-1"]
    assert received.requests[0][1]["Host"] == f"localhost:{port}"


@pytest.mark.parametrize(("style", "key"), [("slack", "text"), ("teams", "text")])
def test_chat_formats_get_a_one_line_message(style: str, key: str) -> None:
    import orjson

    received = Received()
    sender = WebhookSender(allow_private=True, secrets={"HOOK_SECRET": SECRET})
    alert = orjson.dumps({"alert_id": "a-1", "plate": "B840CK197", "camera_id": "gate-1", "list": "stolen"})
    with serve_http(recording(received)) as port:
        hook = parse_target({"type": "webhook", "url": f"http://127.0.0.1:{port}/", "format": style})
        assert sender.send(hook, "a-1", alert).ok
    [(_, headers, body)] = received.requests
    message = orjson.loads(body)
    assert message[key] == "Watch-list alert: B840CK197 at gate-1 (stolen) [event a-1]"
    assert (style == "teams") == (message.get("@type") == "MessageCard")
    assert headers[EVENT_HEADER] == "a-1" and SIGNATURE_HEADER not in headers  # no secret: unsigned
