"""Camera credentials: never in a record in clear, resolved from the connector's environment.

A source URL refers to its secrets as `${NAME}` (`rtsp://${GATE_USER}:${GATE_PASSWORD}@host/s`),
so the compacted `cameras` topic, `cameras get` and every log line show the reference, never the
password; the connector resolves the references from its environment (a Kubernetes Secret) when it
opens the stream, and `redact` takes the resolved secrets out of whatever an error message holds
(FFmpeg's messages carry the URL).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from urllib.parse import parse_qsl, urlsplit

SCHEMES = ("rtsp", "rtsps", "http", "https", "file")
REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_ONLY_REFERENCES = re.compile(r"^(?:\$\{[A-Za-z_][A-Za-z0-9_]*\})+$")
_SECRET_QUERY_KEYS = re.compile(r"pass|pwd|secret|token|key|auth|sig", re.IGNORECASE)
REDACTED = "***"


class MissingCredential(LookupError):
    """A `${NAME}` of a source URL is not set in the connector's environment."""

    def __init__(self, names: list[str]) -> None:
        self.names = names
        super().__init__(f"environment variable(s) not set: {', '.join(names)}")


def _scheme(url: str) -> str:
    match = re.match(r"^([A-Za-z][A-Za-z0-9+.-]*)://", url)
    return match.group(1).lower() if match else ""


def is_file(url: str) -> bool:
    """Whether the source is a local file (a path, or file://)."""
    return _scheme(url) in ("", "file")


def url_problem(url: str) -> str | None:
    """Why `url` cannot be a camera source (an unknown scheme, a password or secret in clear, a
    malformed reference), or None."""
    if url.strip() != url or any(not char.isprintable() for char in url):
        return "must have no leading/trailing spaces and no control characters"
    scheme = _scheme(url)
    if scheme and scheme not in SCHEMES:
        return f"scheme {scheme!r} is not one of {', '.join(SCHEMES)} (or a file path)"
    stray = url.replace("${", "\0").count("\0") - len(REFERENCE.findall(url))
    if stray:
        return "has a malformed ${...} reference (write ${NAME}, NAME of letters, digits and _)"
    if scheme in ("", "file"):
        return None
    parts = urlsplit(url)
    userinfo, at, _ = parts.netloc.rpartition("@")
    if at and ":" in userinfo:
        password = userinfo.split(":", 1)[1]
        if password and not _ONLY_REFERENCES.fullmatch(password):
            return "has a password in clear: write it as ${NAME} and set NAME in the connector's environment"
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        if _SECRET_QUERY_KEYS.search(key) and value and not _ONLY_REFERENCES.fullmatch(value):
            return f"query parameter {key!r} looks secret and is in clear: write it as ${{NAME}}"
    return None


def is_reference_only(value: str) -> bool:
    """Whether `value` is nothing but ${NAME} references (a secret named, never written)."""
    return bool(_ONLY_REFERENCES.fullmatch(value))


def references(url: str) -> list[str]:
    """The environment variables `url` refers to, in order, each once."""
    return list(dict.fromkeys(REFERENCE.findall(url)))


def resolve(url: str, environ: Mapping[str, str]) -> tuple[str, list[str]]:
    """(the URL with its references replaced, the secret values to redact); MissingCredential when
    a reference is not set. Values are inserted percent-encoded where they sit in the user info."""
    from urllib.parse import quote

    names = references(url)
    missing = [name for name in names if name not in environ]
    if missing:
        raise MissingCredential(missing)
    head, at, _ = url.partition("@") if "://" in url else ("", "", "")
    secrets = [environ[name] for name in names if environ[name]]

    def substitute(text: str, encode: bool) -> str:
        return REFERENCE.sub(
            lambda m: quote(environ[m.group(1)], safe="") if encode else environ[m.group(1)], text
        )

    if at and "/" not in head.split("://", 1)[1]:
        resolved = substitute(head, True) + "@" + substitute(url[len(head) + 1 :], False)
    else:
        resolved = substitute(url, False)
    return resolved, secrets + [quote(secret, safe="") for secret in secrets]


def redact(text: str, secrets: Iterable[str]) -> str:
    """`text` with every secret replaced by ***, longest first (so a secret inside another goes too),
    whatever its letters' case: libraries lowercase what they print (an HTTP client, a URL's host)."""
    for secret in sorted({s for s in secrets if s}, key=len, reverse=True):
        text = re.sub(re.escape(secret), REDACTED, text, flags=re.IGNORECASE)
    return text


def shown(url: str) -> str:
    """The source as a listing shows it: its user info and secret-looking query values as ***
    (a stored URL holds only ${NAME} references, but which account a camera uses is no one's
    business on a screen either)."""
    if is_file(url):
        return url
    parts = urlsplit(url)
    _, at, host = parts.netloc.rpartition("@")
    netloc = f"{REDACTED}@{host}" if at else parts.netloc
    query = "&".join(
        f"{key}={REDACTED}" if _SECRET_QUERY_KEYS.search(key) and value else f"{key}={value}"
        for key, value in parse_qsl(parts.query, keep_blank_values=True)
    )
    return parts._replace(netloc=netloc, query=query).geturl()
