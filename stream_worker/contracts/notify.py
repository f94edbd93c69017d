"""The notification targets' contract: one `NotifyTarget` per name on the compacted topic
`notify-targets`, read by `stream-worker notify`.

A target says where an alert goes (`type` and its address) and which alerts are worth it (`rules`).
Its secrets are never in the record: `secret`, `password` and a secret `url` (one that holds a
secret in its path or query, written whole as one `${NAME}`) are references that the notify
service resolves from its target secrets (its secrets file, `STREAM_WORKER_SECRET_<NAME>`), so the
topic, `notify targets get`, the console and every log line show the reference only. A reference
anywhere else (inside a URL, in its host) is refused.
"""

from __future__ import annotations

import re
from datetime import datetime, time
from enum import StrEnum
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import orjson
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from stream_worker.contracts.credentials import is_reference_only, references, url_problem
from stream_worker.contracts.ids import Uuid
from stream_worker.contracts.records import json_value, text_key
from stream_worker.contracts.sightings import Direction

MAX_TARGET_NAME_LENGTH = 64
MAX_URL_LENGTH = 2048
MAX_RULE_ITEMS = 64
MAX_TIMEOUT_S = 60.0
DEFAULT_TIMEOUT_S = 5.0
TARGET_NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")
WEBHOOK_SCHEMES = ("http", "https")
# URLs whose path or query is itself the credential (chat incoming webhooks, signed endpoints):
# never stored in clear, only as a secret URL (url: ${NAME}).
SECRET_URL = re.compile(
    r"hooks\.slack\.com/(services|workflows|triggers)/|discord(app)?\.com/api/webhooks/"
    r"|webhook\.office\.com/|\.logic\.azure\.com|[?&](code|sig|signature|sv|api[_-]?key)=",
    re.IGNORECASE,
)


class TargetType(StrEnum):
    """How a target is reached."""

    WEBHOOK = "webhook"
    MQTT = "mqtt"
    EMAIL = "email"


MQTT_TOPIC_LEVELS = re.compile(r"^[^+#/\s]+(/[^+#/\s]+)*$")  # no wildcards, no empty level
MAIL_ADDRESS = re.compile(r"^[^@\s<>,;]+@[^@\s<>,;]+\.[^@\s<>,;]+$")  # one plain address, no header tricks
MAX_RECIPIENTS = 20
# The settings that belong to one type of target or another, in the order errors name them.
TYPED_SETTINGS = (
    "url",
    "secret",
    "host",
    "port",
    "tls",
    "username",
    "password",
    "topic_prefix",
    "sender",
    "recipients",
)
SETTINGS_OF = {
    TargetType.WEBHOOK: frozenset({"url", "format", "secret"}),
    TargetType.MQTT: frozenset({"host", "port", "tls", "username", "password", "topic_prefix"}),
    TargetType.EMAIL: frozenset({"host", "port", "tls", "username", "password", "sender", "recipients"}),
}


class WebhookFormat(StrEnum):
    """The body a webhook gets: the event's own JSON (signed), or a message for a chat's incoming
    webhook."""

    JSON = "json"
    SLACK = "slack"  # {"text": ...}
    TEAMS = "teams"  # a MessageCard with its text


class VehicleMatch(StrEnum):
    """Which sightings a target with allow lists gets."""

    UNKNOWN = "unknown"  # plates on none of its allow lists: "tell me about a car I do not know"
    ALLOWED = "allowed"  # plates on one of them: "open the gate for a known car"


class OverstayMatch(StrEnum):
    """Whether a target gets the overstay events of the visits service (the visits topic)."""

    NONE = "none"  # no overstays
    ALSO = "also"  # overstays besides its alerts (or its vehicles, with allow_lists)
    ONLY = "only"  # overstays and nothing else


class Weekday(StrEnum):
    MON = "mon"
    TUE = "tue"
    WED = "wed"
    THU = "thu"
    FRI = "fri"
    SAT = "sat"
    SUN = "sun"


WEEKDAYS = tuple(Weekday)  # in datetime.weekday() order


class ActiveHours(BaseModel):
    """A window of the week in the rules' time zone; `end` before `start` runs past midnight (into
    the next day, which the window belongs to as the start's day does)."""

    model_config = ConfigDict(title="NotifyActiveHours", extra="forbid", frozen=True)

    days: tuple[Weekday, ...] = Field(
        (), max_length=7, description="Days the window starts on; empty: every day."
    )
    start: time = Field(description="Local time the window opens (HH:MM), inclusive.")
    end: time = Field(description="Local time it closes (HH:MM), exclusive; before start: the next day.")

    @model_validator(mode="after")
    def _not_empty(self) -> ActiveHours:
        if self.start == self.end:
            raise ValueError("start and end are the same time: the window would be empty")
        return self


class NotifyRules(BaseModel):
    """Which events a target gets: every list below that is set must contain the event's value
    (empty: any); an event lacking the value (an alert has no zone or direction) does not pass a
    rule that asks for one. With `allow_lists` the target gets "unknown vehicle" events (a
    sighting whose plate is on none of them) instead of alerts."""

    model_config = ConfigDict(title="NotifyRules", extra="forbid", frozen=True)

    lists: tuple[str, ...] = Field((), max_length=MAX_RULE_ITEMS, description="Watch lists; empty: any.")
    allow_lists: tuple[str, ...] = Field(
        (),
        max_length=MAX_RULE_ITEMS,
        description="Non-empty: this target gets an unknown_vehicle event for each sighting (passing the "
        "other rules) whose plate is on none of these allow lists (watch-list entries of kind allow), "
        "instead of alerts.",
    )
    vehicles: VehicleMatch = Field(
        VehicleMatch.UNKNOWN,
        description="With allow_lists: unknown (an unknown_vehicle event for a plate on none of them) or "
        "allowed (an allowed_vehicle event for a plate on one of them: a gate opener).",
    )
    overstays: OverstayMatch = Field(
        OverstayMatch.NONE,
        description="none, also (an overstay event for each visit past its limit, besides the alerts or "
        "vehicles) or only (overstays alone). An overstay passes the other rules with its entry camera, "
        "its site, the watch list that set its limit (lists) and its time; it has no zone, direction or "
        "confidence (min_confidence does not hold it back).",
    )
    sites: tuple[str, ...] = Field(
        (),
        max_length=MAX_RULE_ITEMS,
        description="Sites (visits); empty: any. Only overstays have a site: with sites set, no alert or "
        "sighting passes.",
    )
    cameras: tuple[str, ...] = Field((), max_length=MAX_RULE_ITEMS, description="Camera ids; empty: any.")
    zones: tuple[str, ...] = Field((), max_length=MAX_RULE_ITEMS, description="Zone names; empty: any.")
    directions: tuple[Direction, ...] = Field((), max_length=5, description="Directions; empty: any.")
    min_confidence: float = Field(
        0.0, ge=0, le=1, allow_inf_nan=False, description="Alerts less confident are not delivered."
    )
    timezone: str = Field("UTC", description="IANA time zone of active_hours (e.g. Europe/Berlin).")
    active_hours: tuple[ActiveHours, ...] = Field(
        (), max_length=MAX_RULE_ITEMS, description="Windows the target is active in; empty: always."
    )
    cooldown_s: float = Field(
        0.0,
        ge=0,
        le=86_400,
        allow_inf_nan=False,
        description="After a delivery of a plate to this target, the same plate's alerts within this "
        "many seconds (alert time) are not delivered: one vehicle standing at a gate is one message.",
    )

    @model_validator(mode="after")
    def _one_kind_of_event(self) -> NotifyRules:
        if self.lists and self.allow_lists:
            raise ValueError("lists (alerts) and allow_lists (unknown vehicles) exclude each other")
        if self.vehicles is VehicleMatch.ALLOWED and not self.allow_lists:
            raise ValueError("vehicles: allowed needs allow_lists")
        if self.overstays is OverstayMatch.ONLY and self.allow_lists:
            raise ValueError("overstays: only takes no sightings: allow_lists would never be used")
        return self

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"{value!r} is not a known IANA time zone") from None
        return value


class NotifyTarget(BaseModel):
    """Where alerts are delivered and which ones (key = the target's name on `notify-targets`)."""

    model_config = ConfigDict(title="NotifyTarget", extra="forbid", frozen=True)

    type: TargetType = Field(description="webhook, mqtt or email.")
    url: str | None = Field(
        None,
        min_length=1,
        max_length=MAX_URL_LENGTH,
        description="webhook: the http(s) URL POSTed to, in clear; or, when it holds a secret (a Slack or "
        "Teams webhook, a ?code=), the whole URL as one ${NAME} of notify's target secrets.",
        examples=["https://hooks.example.com/plates", "${SLACK_WEBHOOK_URL}"],
    )
    format: WebhookFormat | None = Field(
        None, description="webhook: json (default: the event's contract JSON), slack or teams (a message)."
    )
    secret: str | None = Field(
        None,
        description="webhook: ${NAME} of the HMAC-SHA256 key the body is signed with "
        "(X-Stream-Worker-Signature); NAME is one of notify's target secrets (its secrets file, or "
        "STREAM_WORKER_SECRET_NAME).",
        examples=["${GATE_WEBHOOK_SECRET}"],
    )
    host: str | None = Field(
        None, min_length=1, max_length=253, description="mqtt, email: the broker's (SMTP server's) host."
    )
    port: int | None = Field(
        None, ge=1, le=65535, description="mqtt: the port (1883; 8883 with tls); email: (587)."
    )
    tls: bool | None = Field(
        None,
        description="mqtt: TLS to the broker (default off); email: STARTTLS, required (default on). The "
        "certificate is verified.",
    )
    username: str | None = Field(
        None, min_length=1, max_length=256, description="mqtt, email: the user name."
    )
    password: str | None = Field(
        None,
        description="mqtt, email: ${NAME} of the password, one of notify's target secrets.",
        examples=["${MQTT_PASSWORD}"],
    )
    sender: str | None = Field(None, max_length=254, description="email: the From address.")
    recipients: tuple[str, ...] = Field(
        (), max_length=MAX_RECIPIENTS, description="email: the To addresses (at least one)."
    )
    topic_prefix: str | None = Field(
        None,
        max_length=200,
        description="mqtt: topics are PREFIX/CAMERA/alert (each alert, QoS 1) and PREFIX/CAMERA/last_plate "
        "(retained); default stream-worker.",
    )
    discovery_prefix: str | None = Field(
        "homeassistant",
        max_length=200,
        description="mqtt: Home Assistant's discovery prefix: each camera shows up as a sensor of its "
        "last plate; null: no discovery.",
    )
    timeout_s: float = Field(
        DEFAULT_TIMEOUT_S,
        gt=0,
        le=MAX_TIMEOUT_S,
        allow_inf_nan=False,
        description="Each delivery attempt's time limit (connect and answer).",
    )
    enabled: bool = Field(True, description="false: nothing is delivered to it (kept for later).")
    rules: NotifyRules = Field(default_factory=NotifyRules)

    @field_validator("secret", "password")
    @classmethod
    def _secret_is_reference(cls, value: str | None) -> str | None:
        if value is not None and not is_reference_only(value):
            raise ValueError(
                "must be a ${NAME} reference, never the secret itself (NAME in notify's secrets file)"
            )
        return value

    @field_validator("sender")
    @classmethod
    def _sender(cls, value: str | None) -> str | None:
        if value is not None and not MAIL_ADDRESS.fullmatch(value):
            raise ValueError("must be one plain e-mail address (name@example.com)")
        return value

    @field_validator("recipients")
    @classmethod
    def _recipients(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for address in value:
            if not MAIL_ADDRESS.fullmatch(address):
                raise ValueError(f"{address!r} is not one plain e-mail address (name@example.com)")
        return value

    @field_validator("topic_prefix", "discovery_prefix")
    @classmethod
    def _topic(cls, value: str | None) -> str | None:
        if value is not None and not MQTT_TOPIC_LEVELS.fullmatch(value):
            raise ValueError("must be MQTT topic levels separated by / (no +, #, spaces or empty level)")
        return value

    @model_validator(mode="after")
    def _addressed(self) -> NotifyTarget:
        own = SETTINGS_OF[self.type]
        stray = [name for name in TYPED_SETTINGS if name not in own and getattr(self, name) not in (None, ())]
        if stray:
            raise ValueError(f"{', '.join(stray)}: not settings of a {self.type.value} target")
        if self.type in (TargetType.MQTT, TargetType.EMAIL):
            if self.host is None:
                raise ValueError(f"an {self.type.value} target needs a host")
            if self.password is not None and self.username is None:
                raise ValueError("a password needs a username")
        if self.type is TargetType.EMAIL:
            if self.sender is None or not self.recipients:
                raise ValueError("an email target needs a sender and at least one recipient")
            if self.password is not None and not self.uses_tls:
                raise ValueError("a password is never sent without STARTTLS (tls: false)")
        if self.type is not TargetType.WEBHOOK:
            return self
        if self.url is None:
            raise ValueError("a webhook needs a url")
        problem = webhook_url_problem(self.url)
        if problem is not None:
            raise ValueError(f"url {problem}")
        return self

    @property
    def uses_tls(self) -> bool:
        """mqtt: TLS (default off); email: STARTTLS (default on)."""
        return self.tls if self.tls is not None else self.type is TargetType.EMAIL

    @property
    def broker_port(self) -> int:
        """mqtt: the port, its default chosen by `tls`; email: 587 by default."""
        if self.type is TargetType.EMAIL:
            return self.port or 587
        return self.port or (8883 if self.uses_tls else 1883)

    @property
    def topics_prefix(self) -> str:
        return self.topic_prefix or "stream-worker"

    def to_json(self) -> bytes:
        return orjson.dumps(self.model_dump(mode="json", exclude_defaults=False))


def is_secret_url(url: str) -> bool:
    """Whether `url` is a secret URL: one ${NAME}, the whole URL being the secret."""
    return is_reference_only(url) and len(references(url)) == 1 and url.count("${") == 1


def webhook_url_problem(url: str) -> str | None:
    """Why `url` cannot be a webhook's (not http(s), a secret in clear, a reference inside it), or
    None."""
    if is_secret_url(url):
        return None
    if "${" in url:
        return (
            "has a ${NAME} inside it: a URL holding a secret is secret whole (its host, path and query): "
            "put it in notify's secrets and write url: ${NAME}"
        )
    if SECRET_URL.search(url):
        return "holds a secret in clear (a chat webhook's path, a signed query): write url: ${NAME}"
    scheme = url.split("://", 1)[0].lower() if "://" in url else ""
    if scheme not in WEBHOOK_SCHEMES:
        return "must start with http:// or https://"
    return url_problem(url)


class NotifyTargetError(ValueError):
    """A target's settings that cannot be used: every problem, each named by where it is."""

    def __init__(self, problems: list[str], source: str = "target") -> None:
        self.problems = problems
        super().__init__(f"{source} refused: " + "; ".join(problems))


def target_name_problem(name: str) -> str | None:
    """Why `name` cannot name a target (it is a key, a metrics label and a log field), or None."""
    if not name:
        return "is empty"
    if len(name) > MAX_TARGET_NAME_LENGTH:
        return f"has {len(name)} characters, more than {MAX_TARGET_NAME_LENGTH}"
    if not TARGET_NAME.fullmatch(name):
        return f"{name!r} must be lowercase letters, digits, '.', '_' or '-', starting with a letter or digit"
    return None


def parse_target(data: Any, source: str = "target") -> NotifyTarget:
    """A target from decoded JSON/YAML; NotifyTargetError lists every problem."""
    try:
        return NotifyTarget.model_validate(data)
    except ValidationError as error:
        problems = []
        for item in error.errors(include_url=False, include_input=False):
            where = " ".join(str(part) for part in item["loc"]) or "the target"
            problems.append(f"{where}: {item['msg']}")
        raise NotifyTargetError(problems, source) from None


def parse_target_text(text: str, source: str = "target") -> NotifyTarget:
    """A target from a JSON or YAML document (YAML reads both), as `notify targets set --file` and
    the console take it; NotifyTargetError says what is wrong."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise NotifyTargetError([f"is not valid JSON or YAML: {error}"], source) from error
    if not isinstance(data, dict):
        raise NotifyTargetError(["must be a mapping (type: webhook, url: ..., rules: ...)"], source)
    return parse_target(data, source)


class TargetRecordError(ValueError):
    """A `notify-targets` record (key or value) that is not a target or a removal."""


def decode_record(key: bytes | None, value: bytes | None) -> tuple[str, NotifyTarget | None]:
    """(name, target) of a `notify-targets` record (key = the name, value = the target's JSON);
    target None for a tombstone. TargetRecordError says why not. Here, beside the contract, so
    that the notify service and the console (which may not import each other) read it alike."""
    name = text_key(key, "the target's name", TargetRecordError)
    problem = target_name_problem(name)
    if problem is not None:
        raise TargetRecordError(f"key: target name {problem}")
    if value is None:
        return name, None
    data = json_value(value, f"target {name!r} is not JSON", TargetRecordError)
    try:
        return name, parse_target(data, f"target {name!r}")
    except NotifyTargetError as error:
        raise TargetRecordError(str(error)) from error


class NotifyTest(BaseModel):
    """A "send a test" request on the compacted `notify-tests` topic (key = the target's name): the
    notify service delivers a test alert to that target when a new `test_id` arrives while it runs."""

    model_config = ConfigDict(title="NotifyTest", extra="forbid", frozen=True)

    test_id: Uuid = Field(description="New for each request: the test alert's alert_id (its event id).")
    requested_at: datetime

    def to_json(self) -> bytes:
        return orjson.dumps(self.model_dump(mode="json"))


class DeliveryOutcome(StrEnum):
    SENT = "sent"  # the target acknowledged the event
    RETRIED = "retried"  # an attempt failed; another follows after the backoff
    HELD = "held"  # a secret the target names is missing where notify runs: kept until it is set
    FAILED = "failed"  # given up (retry budget spent, or refused for good): in notify.dlq
    DROPPED = "dropped"  # the target was removed or disabled before it was delivered


class NotifyDelivery(BaseModel):
    """One line of the delivery log (`notify.deliveries`, key = the target's name): what became of one
    attempt or delivery. `error` is redacted by the sender (never a resolved secret)."""

    model_config = ConfigDict(title="NotifyDelivery", extra="forbid", frozen=True)

    target: str = Field(max_length=MAX_TARGET_NAME_LENGTH)
    event_id: str = Field(max_length=256)
    kind: str = Field(max_length=32, description="alert, unknown_vehicle, allowed_vehicle, overstay or test.")
    outcome: DeliveryOutcome
    attempts: int = Field(ge=0)
    status: int | None = Field(None, description="The target's answer (an HTTP status), if it gave one.")
    error: str | None = Field(None, max_length=1024)
    at: datetime

    def to_json(self) -> bytes:
        return orjson.dumps(self.model_dump(mode="json"))


MAX_SECRET_NAMES = 1000
STATUS_KEY = "notify"  # the key of the notify service's record on `notify-status`


def secret_names(target: NotifyTarget) -> list[str]:
    """The target secrets `target` names (its signing secret, password, secret URL), each once."""
    fields = (
        target.secret,
        target.password,
        target.url if target.url and is_secret_url(target.url) else None,
    )
    return list(dict.fromkeys(name for value in fields if value for name in references(value)))


class NotifyStatus(BaseModel):
    """What the notify service says of itself on the compacted `notify-status` topic (key `notify`):
    the NAMES of the target secrets it has (never a value), so that `notify targets set` and the
    console warn of a target naming one it lacks; and the dead letters of each target."""

    model_config = ConfigDict(title="NotifyStatus", extra="forbid", frozen=True)

    secrets: tuple[str, ...] = Field((), max_length=MAX_SECRET_NAMES, description="Names only, sorted.")
    secrets_problem: str | None = Field(
        None, max_length=500, description="Why its secrets file is not used (readable by others...), if not."
    )
    dead_letters: dict[str, int] = Field(
        default_factory=dict,
        description="Per target, the records on the DLQ: those there when notify started, and those since.",
    )
    at: datetime

    def missing(self, target: NotifyTarget) -> list[str]:
        """The secrets `target` names that notify does not have."""
        return [name for name in secret_names(target) if name not in self.secrets]

    def to_json(self) -> bytes:
        return orjson.dumps(self.model_dump(mode="json"))


def decode_status(key: bytes | None, value: bytes | None) -> tuple[str, NotifyStatus | None]:
    """A `notify-status` record for the compacted readers; ValueError when it is not one."""
    name = (key or b"").decode("utf-8", "replace")
    if value is None:
        return name, None
    try:
        return name, NotifyStatus.model_validate_json(value)
    except ValidationError as error:
        raise ValueError(f"not a NotifyStatus: {str(error)[:200]}") from None
