"""What the console's routes share: the database, the broker's compacted topics (watch list,
cameras, camera status, notification targets and their test requests), the delivery log and the
audit of every change (a row through queries.add_audit and a log line)."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from confluent_kafka import KafkaException
from fastapi import HTTPException, Request

from stream_worker.cameras.status import CameraStatus, decode_status
from stream_worker.cameras.store import CamerasStoreError, read_cameras, remove_settings, write_settings
from stream_worker.contracts.cameras import CameraSettings
from stream_worker.contracts.notify import STATUS_KEY as NOTIFY_STATUS_KEY
from stream_worker.contracts.notify import (
    NotifyDelivery,
    NotifyStatus,
    NotifyTarget,
    NotifyTest,
    decode_record,
)
from stream_worker.contracts.notify import decode_status as decode_notify_status
from stream_worker.contracts.watchlist import WatchEntry
from stream_worker.service.compacted import CompactedTopicError, read_compacted, write_compacted
from stream_worker.store import queries
from stream_worker.store.database import Database
from stream_worker.store.settings import StoreSettings
from stream_worker.store.web.delivery_log import recent_deliveries
from stream_worker.store.web.frames import FrameCache, latest_frame
from stream_worker.store.web.limiter import SignInLimiter
from stream_worker.store.web.sessions import SessionBook
from stream_worker.store.web.users import User, Users
from stream_worker.watchlists.topic import WatchlistStoreError, read_watchlist, write_changes

log = logging.getLogger("stream_worker.store.web")
BROKER_TIMEOUT_S = 10.0


@dataclass
class Backend:
    settings: StoreSettings
    database: Database
    kafka_config: Mapping[str, str]
    users: Users
    sessions: SessionBook
    timeout_s: float = BROKER_TIMEOUT_S
    extra: dict[str, Any] = field(default_factory=dict)
    sign_ins: SignInLimiter = field(default_factory=SignInLimiter)
    frames: FrameCache = field(default_factory=FrameCache)

    @property
    def bootstrap_servers(self) -> str:
        return str(self.kafka_config.get("bootstrap.servers") or self.settings.bootstrap_servers)

    @property
    def client_config(self) -> dict[str, str]:
        return {k: str(v) for k, v in self.kafka_config.items() if k != "bootstrap.servers"}

    # --- audit --------------------------------------------------------------------------------
    def audit(self, user: User, action: str, detail: Any) -> None:
        with self.database.begin() as connection:
            queries.add_audit(connection, user.name, action, detail)
        self.audit_logged(user, action, detail)

    def audit_logged(self, user: User, action: str, detail: Any) -> None:
        """The log line of a change (whose audit row is written already)."""
        log.info("console change", extra={"user": user.name, "action": action, "detail": detail})

    # --- sessions -----------------------------------------------------------------------------
    def revoke_sessions(self, user: User, of_user: str | None, keep: Any = None) -> int:
        """Sign `of_user` (None: everyone) out everywhere but the caller's own session; audited."""
        revoked = self.sessions.revoke(of_user, keep)
        self.audit(user, "sessions.revoke", {"user": of_user, "all": of_user is None, "revoked": revoked})
        return revoked

    # --- watch list ---------------------------------------------------------------------------
    def watchlist(self) -> list[WatchEntry]:
        try:
            snapshot = read_watchlist(
                self.bootstrap_servers, self.settings.watchlist_topic, self.client_config, self.timeout_s
            )
        except (WatchlistStoreError, KafkaException) as error:
            raise _broker_down(error) from None
        return sorted(snapshot.values.values(), key=lambda entry: (entry.list, entry.plate))

    def change_watchlist(
        self, user: User, action: str, entries: Sequence[WatchEntry] = (), removals: Sequence[str] = ()
    ) -> None:
        try:
            write_changes(
                self.bootstrap_servers,
                self.settings.watchlist_topic,
                entries,
                removals,
                self.client_config,
                self.timeout_s,
            )
        except (WatchlistStoreError, KafkaException) as error:
            raise _broker_down(error) from None
        self.audit(
            user,
            action,
            {
                "plates": [entry.plate for entry in entries],
                "lists": sorted({e.list for e in entries}),
                "removed": list(removals),
            },
        )

    # --- cameras ------------------------------------------------------------------------------
    def cameras(self) -> dict[str, CameraSettings]:
        try:
            snapshot = read_cameras(
                self.bootstrap_servers, self.settings.cameras_topic, self.client_config, self.timeout_s
            )
        except (CamerasStoreError, KafkaException) as error:
            raise _broker_down(error) from None
        return dict(sorted(snapshot.values.items()))

    @property
    def frames_topic(self) -> str:
        """The store has no frames-topic setting yet: `extra["frames_topic"]`, else "frames"."""
        return str(self.extra.get("frames_topic") or getattr(self.settings, "frames_topic", None) or "frames")

    def frame(self, camera_id: str) -> bytes | None:
        """A recent frame of the camera from the frames topic (None: none there, or no broker)."""
        return self.frames.get(
            camera_id,
            lambda: latest_frame(
                self.bootstrap_servers, self.frames_topic, camera_id, self.client_config, self.timeout_s
            ),
        )

    def set_camera(self, user: User, camera_id: str, settings: CameraSettings) -> None:
        try:
            write_settings(
                self.bootstrap_servers,
                camera_id,
                settings,
                self.settings.cameras_topic,
                self.client_config,
                self.timeout_s,
            )
        except (CamerasStoreError, KafkaException) as error:
            raise _broker_down(error) from None
        self.audit(
            user,
            "camera.set",
            {
                "camera_id": camera_id,
                "masks": len(settings.masks),
                "zones": [zone.name for zone in settings.zones],
            },
        )

    def remove_camera(self, user: User, camera_id: str) -> None:
        try:
            remove_settings(
                self.bootstrap_servers,
                camera_id,
                self.settings.cameras_topic,
                self.client_config,
                self.timeout_s,
            )
        except (CamerasStoreError, KafkaException) as error:
            raise _broker_down(error) from None
        self.audit(user, "camera.remove", {"camera_id": camera_id})

    def camera_states(self) -> dict[str, CameraStatus]:
        """Each camera's live state, as the connector last wrote it (`cameras status`'s reading)."""
        try:
            snapshot = read_compacted(
                self.bootstrap_servers,
                self.settings.camera_status_topic,
                decode_status,
                self.client_config,
                self.timeout_s,
            )
        except (CompactedTopicError, KafkaException) as error:
            raise _broker_down(error) from None
        return dict(snapshot.values)

    # --- notifications ------------------------------------------------------------------------
    def notify_targets(self) -> dict[str, NotifyTarget]:
        """The targets as stored: their secrets are ${NAME} references, never resolved here."""
        try:
            snapshot = read_compacted(
                self.bootstrap_servers,
                self.settings.notify_targets_topic,
                decode_record,
                self.client_config,
                self.timeout_s,
            )
        except (CompactedTopicError, KafkaException) as error:
            raise _broker_down(error) from None
        return dict(sorted(snapshot.values.items()))

    def notify_status(self) -> NotifyStatus | None:
        """What notify says of itself (`notify-status`: the names of its target secrets, the dead
        letters per target); None when it has not said (not started yet) or the broker cannot tell."""
        try:
            snapshot = read_compacted(
                self.bootstrap_servers,
                self.settings.notify_status_topic,
                decode_notify_status,
                self.client_config,
                self.timeout_s,
            )
        except (CompactedTopicError, KafkaException):
            return None
        return snapshot.values.get(NOTIFY_STATUS_KEY)

    def set_notify_target(self, user: User, name: str, target: NotifyTarget) -> None:
        self._write(self.settings.notify_targets_topic, name, target.to_json())
        self.audit(user, "notify.target.set", {"name": name, "type": target.type.value})

    def remove_notify_target(self, user: User, name: str) -> None:
        self._write(self.settings.notify_targets_topic, name, None)
        self.audit(user, "notify.target.remove", {"name": name})

    def send_test(self, user: User, name: str) -> str:
        """Ask the notify service to deliver a test alert to the target; the test's event id."""
        test = NotifyTest(test_id=str(uuid.uuid4()), requested_at=datetime.now(UTC))
        self._write(self.settings.notify_tests_topic, name, test.to_json())
        self.audit(user, "notify.target.test", {"name": name, "test_id": test.test_id})
        return test.test_id

    def deliveries(self, limit: int) -> list[NotifyDelivery]:
        try:
            return recent_deliveries(
                self.bootstrap_servers,
                self.settings.notify_deliveries_topic,
                self.client_config,
                self.timeout_s,
                limit,
            )
        except (CompactedTopicError, KafkaException) as error:
            raise _broker_down(error) from None

    def _write(self, topic: str, key: str, value: bytes | None) -> None:
        try:
            write_compacted(
                self.bootstrap_servers, topic, [(key.encode(), value)], self.client_config, self.timeout_s
            )
        except (CompactedTopicError, KafkaException) as error:
            raise _broker_down(error) from None


def _broker_down(error: Exception) -> HTTPException:
    log.warning("console: the broker failed", extra={"error": str(error)[:300]})
    return HTTPException(503, "the broker did not confirm the change; try again (repeating it is harmless)")


def backend(request: Request) -> Backend:
    return request.app.state.backend  # type: ignore[no-any-return]
