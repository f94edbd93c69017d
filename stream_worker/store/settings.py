"""Settings of `stream-worker store`: each a flag and an env variable `STREAM_WORKER_STORE_<NAME>`.

The Kafka, lifecycle and logging settings are the services' (`ServiceSettings`). The database is
SQLite in the data directory unless `--database-url` names another (PostgreSQL in production,
its password by reference: `postgresql://store:${POSTGRES_PASSWORD}@db/history`, resolved from the
environment so that it never sits in a flag, a manifest or a log line).
"""

from __future__ import annotations

import os
import string
from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

from pydantic import Field, field_validator, model_validator
from pydantic_settings import SettingsConfigDict

from stream_worker.contracts import topics
from stream_worker.service.settings import ServiceSettings, load

ENV_PREFIX = "STREAM_WORKER_STORE_"


def default_data_dir() -> Path:
    """Where the store (and `stream-worker up`) keep their data unless told otherwise."""
    data_home = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return Path(data_home) / "stream-worker"


class StoreSettings(ServiceSettings):
    """Settings of `stream-worker store`. Each --flag-name is also the env variable
    STREAM_WORKER_STORE_FLAG_NAME (e.g. --retention-days: STREAM_WORKER_STORE_RETENTION_DAYS); a
    flag wins over its env variable.

    Examples:
      stream-worker store --bootstrap-servers kafka:9092
      stream-worker store --database-url 'postgresql://store:${POSTGRES_PASSWORD}@db/history'
    """

    role: ClassVar[str] = "history store"
    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, cli_prog_name="stream-worker store")

    metrics_port: int = Field(
        9112, ge=0, le=65535, description="HTTP port for /metrics, /healthz, /readyz (0: any free port)."
    )
    group_id: str = Field("stream-worker-store", min_length=1, description="Kafka consumer group.")
    sightings_topic: str = Field(
        topics.SIGHTINGS.name, min_length=1, description="Topic of PlateSighting records."
    )
    alerts_topic: str = Field(topics.ALERTS.name, min_length=1, description="Topic of PlateAlert records.")
    visits_topic: str = Field(
        topics.VISITS.name, min_length=1, description="Topic of PlateVisit records (the visits service's)."
    )
    dlq_topic: str = Field(
        topics.STORE_DLQ.name,
        min_length=1,
        description="Dead-letter topic for the records the store cannot write (not the contract, over "
        "a column's limit, refused by the database alone), with the reason in their headers.",
    )
    watchlist_topic: str = Field(
        topics.WATCHLIST.name, min_length=1, description="The watch list (the console writes it)."
    )
    cameras_topic: str = Field(
        topics.CAMERAS.name, min_length=1, description="The cameras' settings (the console writes it)."
    )
    camera_status_topic: str = Field(
        topics.CAMERA_STATUS.name,
        min_length=1,
        description=(
            "The cameras' live state (the connector writes it; the console's Cameras page shows it, "
            "the store keeps each minute's state: the health report)."
        ),
    )
    corrections_topic: str = Field(
        topics.CORRECTIONS.name,
        min_length=1,
        description="Compacted: the operators' reviews of reads, by sighting id (the console writes it).",
    )
    notify_targets_topic: str = Field(
        topics.NOTIFY_TARGETS.name,
        min_length=1,
        description="The notification targets (the console writes it).",
    )
    notify_tests_topic: str = Field(
        topics.NOTIFY_TESTS.name,
        min_length=1,
        description='Compacted: the console\'s "send a test" requests, by target (notify reads it).',
    )
    notify_deliveries_topic: str = Field(
        topics.NOTIFY_DELIVERIES.name,
        min_length=1,
        description="The notify service's delivery log (sent, retried, failed): the console shows its tail.",
    )
    notify_status_topic: str = Field(
        topics.NOTIFY_STATUS.name,
        min_length=1,
        description="Compacted: the names of the target secrets notify has (never a value): the console "
        "warns of a target naming one it lacks.",
    )
    data_dir: Path = Field(
        default_factory=default_data_dir,
        description="Where the SQLite database (history.db) and the console's keys and first user live.",
    )
    database_url: str | None = Field(
        None,
        description="SQLAlchemy URL of the database (sqlite:///FILE or "
        "postgresql://USER:${PASSWORD}@HOST/DB); ${NAME} is read from the environment. Absent: sqlite "
        "in --data-dir.",
    )
    batch_records: int = Field(
        500, ge=1, le=10_000, description="Records written per database transaction, at most."
    )
    retention_days: float = Field(
        30.0,
        ge=0,
        description=(
            "Sightings, alerts and the cameras' health older than this are deleted, pictures "
            "with them (0: kept)."
        ),
    )
    retention_every_s: float = Field(300.0, gt=0, description="How often retention runs.")
    # The console (store/web/, engineer C's): served by this process unless --no-console, on a thread
    # (console_thread.py), as web.app.create_app(settings, database, kafka_config) with these
    # settings. Its fields: console, console_host, console_port, users_file, viewer_token_file,
    # secure_cookies, data_dir (first-start admin and keys), the session_* and sign_in_* ones,
    # forwarded_allow_ips,
    # watchlist_topic, cameras_topic, camera_status_topic, corrections_topic, the notify_*_topic ones;
    # kafka_config there is settings.kafka_config plus "bootstrap.servers".
    console: bool = Field(True, description="Serve the console and the HTTP API.")
    console_host: str = Field("127.0.0.1", description="Address the console binds (0.0.0.0 in a container).")
    console_port: int = Field(8080, ge=0, le=65535, description="The console's port (0: any free port).")
    users_file: Path | None = Field(
        None,
        description="YAML/JSON file of the console's users (a Kubernetes Secret). Absent: an admin with a "
        "random password is made on first start in --data-dir and its password printed once.",
    )
    viewer_token_file: Path | None = Field(
        None,
        description="File holding a token the console accepts (Authorization: Bearer) as a read-only "
        "viewer of its API, GET /api/... only; read at the start. `up` gives console.token in its data "
        "dir, new on each start, with which `cameras status` asks the console.",
    )
    secure_cookies: bool = Field(False, description="Session cookies only over HTTPS (set it behind TLS).")
    session_key_file: Path | None = Field(
        None,
        description="File holding the key that signs session cookies, the same for every replica (a "
        "Kubernetes Secret). Absent: made once in --data-dir.",
    )
    session_idle_s: float = Field(
        1800.0, gt=0, description="A console session ends after this long without a request."
    )
    session_lifetime_s: float = Field(
        43200.0, gt=0, description="A console session ends this long after sign-in, however busy."
    )
    forwarded_allow_ips: str = Field(
        "",
        description="Comma-separated addresses or networks of the reverse proxies whose X-Forwarded-For "
        "and X-Forwarded-Proto the console believes (e.g. the ingress's); '*' any. Empty: none, the "
        "connection's own address is the client's (what sign-in limits count).",
    )
    sign_in_clients: int = Field(
        10_000,
        ge=10,
        description="How many (client, user name) pairs the sign-in limiter remembers, least recently "
        "used forgotten first.",
    )
    sign_in_parallel: int = Field(
        4, ge=1, le=64, description="Passwords checked at once (16 MiB of scrypt each); others wait."
    )

    @field_validator("database_url", mode="after")
    @classmethod
    def _references_only(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("empty")
        return value

    @model_validator(mode="after")
    def _distinct_topics(self) -> StoreSettings:
        if len({self.sightings_topic, self.alerts_topic, self.visits_topic, self.dlq_topic}) < 4:
            raise ValueError(
                "--sightings-topic, --alerts-topic, --visits-topic and --dlq-topic must be four "
                "different topics"
            )
        return self

    def resolved_database_url(self) -> str:
        """The database URL with its ${NAME} references read from the environment."""
        from stream_worker.store.database import default_url

        if self.database_url is None:
            return default_url(self.data_dir)
        try:
            return string.Template(self.database_url).substitute(os.environ)
        except KeyError as missing:
            raise ValueError(f"--database-url names ${{{missing.args[0]}}}, which is not set") from None
        except ValueError:
            raise ValueError("--database-url: a $ that is not ${NAME}") from None


def load_settings(cli_args: Sequence[str] | None = None, **overrides: object) -> StoreSettings:
    return load(StoreSettings, cli_args, **overrides)
