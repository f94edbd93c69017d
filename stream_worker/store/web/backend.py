"""What the console's routes share: the database, the broker's compacted topics (watch list,
cameras, camera status, notification targets and their test requests), the delivery log and the
audit of every change (a row through queries.add_audit and a log line).

The topics are followed from the console's start (`Views`, service/compacted.py's views), so a
page answers from memory, never with a Kafka consumer of its own; a change is written through its
view and returns once the view shows it: one producer (`CompactedWriter`) serves every write of
the console, and the views it writes to fetch with a shorter wait, so a change answers in a
fraction of a second rather than one or two. The cameras' status is read from the records of the last
STATUS_WINDOW_S at the start (every live camera renews its record every few seconds), then
followed: the start costs the same after a week of status history as after a minute."""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar

from confluent_kafka import KafkaException
from fastapi import HTTPException, Request

from stream_worker.cameras import records as camera_records
from stream_worker.cameras.status import STATUS_WINDOW_S, CameraStatus, decode_status
from stream_worker.cameras.store import DEFAULT_PARTITIONS as CAMERAS_PARTITIONS
from stream_worker.contracts import corrections as correction_records
from stream_worker.contracts import notify as notify_records
from stream_worker.contracts import topics
from stream_worker.contracts import watchlist as watchlist_records
from stream_worker.contracts.cameras import CameraSettings
from stream_worker.contracts.corrections import Correction
from stream_worker.contracts.notify import STATUS_KEY as NOTIFY_STATUS_KEY
from stream_worker.contracts.notify import NotifyDelivery, NotifyStatus, NotifyTarget, NotifyTest
from stream_worker.contracts.notify import decode_status as decode_notify_status
from stream_worker.contracts.watchlist import WatchEntry, WatchKind
from stream_worker.service.compacted import (
    READ_FETCH_WAIT_MS,
    CompactedTopicError,
    CompactedView,
    CompactedWriter,
)
from stream_worker.store import corrections as stored_corrections
from stream_worker.store import queries
from stream_worker.store.database import Database
from stream_worker.store.settings import StoreSettings
from stream_worker.store.web.delivery_log import DeliveryLog
from stream_worker.store.web.frames import FrameCache, latest_frame
from stream_worker.store.web.limiter import SignInLimiter
from stream_worker.store.web.sessions import SessionBook
from stream_worker.store.web.users import User, Users

log = logging.getLogger("stream_worker.store.web")
BROKER_TIMEOUT_S = 10.0
K = TypeVar("K")
V = TypeVar("V")
Skipped = Callable[[str], None]  # a record of this topic was skipped (the store's metric)


@dataclass
class Views:
    """The console's topics as it follows them."""

    watchlist: CompactedView[str, WatchEntry]
    cameras: CompactedView[str, CameraSettings]
    statuses: CompactedView[str, CameraStatus]
    targets: CompactedView[str, NotifyTarget]
    notify_status: CompactedView[str, NotifyStatus]
    corrections: CompactedView[str, Correction]
    deliveries: DeliveryLog
    writer: CompactedWriter

    @classmethod
    def of(
        cls,
        settings: StoreSettings,
        bootstrap: str,
        config: Mapping[str, str],
        timeout_s: float,
        skipped: Skipped,
    ) -> Views:
        writer = CompactedWriter(bootstrap, config, timeout_s)

        def view(topic: str, decode: Any, name: str, **options: Any) -> CompactedView[Any, Any]:
            return CompactedView(
                bootstrap, topic, decode, config, name, lambda: skipped(topic), timeout_s, **options
            )

        def written(topic: str, decode: Any, name: str, **options: Any) -> CompactedView[Any, Any]:
            """A view the console writes to: its writes wait for their echo."""
            return view(topic, decode, name, writer=writer, fetch_wait_ms=READ_FETCH_WAIT_MS, **options)

        return cls(
            watchlist=written(settings.watchlist_topic, watchlist_records.decode_record, "watch list"),
            cameras=written(
                settings.cameras_topic,
                camera_records.decode_record,
                "camera settings",
                partitions=CAMERAS_PARTITIONS,
            ),
            statuses=view(
                settings.camera_status_topic, decode_status, "camera status", since_s=STATUS_WINDOW_S
            ),
            targets=written(settings.notify_targets_topic, notify_records.decode_record, "notify targets"),
            notify_status=view(settings.notify_status_topic, decode_notify_status, "notify status"),
            corrections=written(settings.corrections_topic, correction_records.decode_record, "corrections"),
            deliveries=DeliveryLog(
                bootstrap,
                settings.notify_deliveries_topic,
                config,
                timeout_s,
                lambda: skipped(settings.notify_deliveries_topic),
            ),
            writer=writer,
        )

    def _all(self) -> tuple[CompactedView[Any, Any] | DeliveryLog, ...]:
        views = (
            self.watchlist,
            self.cameras,
            self.statuses,
            self.targets,
            self.notify_status,
            self.corrections,
        )
        return (*views, self.deliveries)

    def start(self) -> None:
        for view in self._all():
            view.start()

    def close(self) -> None:
        # Each close waits on the broker (a fetch in flight): side by side, not one after another.
        views = self._all()
        with ThreadPoolExecutor(max_workers=len(views)) as pool:
            list(pool.map(lambda view: view.close(timeout_s=5.0), views))
        self.writer.close()


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
    skipped: Skipped = lambda topic: None
    _views: Views | None = None
    _views_made: threading.Lock = field(default_factory=threading.Lock)

    # --- the followed topics ------------------------------------------------------------------
    @property
    def views(self) -> Views:
        """The topics followed since the app's start (or since first asked, outside one)."""
        with self._views_made:
            if self._views is None:
                self._views = Views.of(
                    self.settings, self.bootstrap_servers, self.client_config, self.timeout_s, self.skipped
                )
                self._views.start()
            return self._views

    def close(self) -> None:
        with self._views_made:
            views, self._views = self._views, None
        if views is not None:
            views.close()

    def _read(self, view: CompactedView[K, V]) -> Mapping[K, V]:
        try:
            return view.read(self.timeout_s)
        except CompactedTopicError as error:
            raise _broker_unread(error) from None

    def _write_to(self, view: CompactedView[Any, Any], records: Sequence[tuple[bytes, bytes | None]]) -> None:
        try:
            view.write(records, self.timeout_s)
        except (CompactedTopicError, KafkaException) as error:
            raise _broker_down(error) from None

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
        entries = self._read(self.views.watchlist).values()
        return sorted(entries, key=lambda entry: (entry.list, entry.plate))

    def change_watchlist(
        self, user: User, action: str, entries: Sequence[WatchEntry] = (), removals: Sequence[str] = ()
    ) -> None:
        records = [watchlist_records.encode_entry(entry) for entry in entries]
        records += [watchlist_records.encode_removal(plate) for plate in removals]
        self._write_to(self.views.watchlist, records)
        self.audit(
            user,
            action,
            {
                "plates": [entry.plate for entry in entries],
                "lists": sorted({e.list for e in entries}),
                # Allow entries raise no alert: which plates became one is what an audit must show.
                "allowed": [e.plate for e in entries if e.effective_kind is WatchKind.ALLOW],
                "removed": list(removals),
            },
        )

    # --- corrections ---------------------------------------------------------------------------
    def correct(self, user: User, correction: Correction) -> None:
        """Publish the review on the corrections topic (returns once the view has it back), then
        store it beside the sighting with its audit row, marking the alerts its corrected text no
        longer matches (store/corrections.py): a record the store missed is written
        again by repeating the form, never the other way round."""
        self._write_to(self.views.corrections, [correction_records.encode_correction(correction)])
        watchlist = self._read(self.views.watchlist)
        with self.database.begin() as connection:
            stored_corrections.save(connection, correction)
            stored_corrections.mark_alerts(connection, correction, watchlist)
        self.audit_logged(user, f"sighting.{correction.kind.value}", {"sighting_id": correction.sighting_id})

    # --- cameras ------------------------------------------------------------------------------
    def cameras(self) -> dict[str, CameraSettings]:
        return dict(sorted(self._read(self.views.cameras).items()))

    @property
    def frames_topic(self) -> str:
        """The store has no frames-topic setting: `extra["frames_topic"]`, else the declared one."""
        configured = self.extra.get("frames_topic") or getattr(self.settings, "frames_topic", None)
        return str(configured or topics.FRAMES.name)

    def frame(self, camera_id: str) -> bytes | None:
        """A recent frame of the camera from the frames topic (None: none there, or no broker)."""
        return self.frames.get(
            camera_id,
            lambda: latest_frame(
                self.bootstrap_servers, self.frames_topic, camera_id, self.client_config, self.timeout_s
            ),
        )

    def set_camera(self, user: User, camera_id: str, settings: CameraSettings) -> None:
        self._write_to(self.views.cameras, [camera_records.encode_settings(camera_id, settings)])
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
        self._write_to(self.views.cameras, [camera_records.encode_removal(camera_id)])
        self.audit(user, "camera.remove", {"camera_id": camera_id})

    def camera_states(self) -> dict[str, CameraStatus]:
        """Each camera's live state, as the connector last wrote it (`cameras status`'s reading)."""
        return dict(self._read(self.views.statuses))

    # --- notifications ------------------------------------------------------------------------
    def notify_targets(self) -> dict[str, NotifyTarget]:
        """The targets as stored: their secrets are ${NAME} references, never resolved here."""
        return dict(sorted(self._read(self.views.targets).items()))

    def notify_status(self) -> NotifyStatus | None:
        """What notify says of itself (`notify-status`: the names of its target secrets, the dead
        letters per target); None when it has not said (not started yet) or the broker cannot tell."""
        try:
            return self.views.notify_status.read(self.timeout_s).get(NOTIFY_STATUS_KEY)
        except CompactedTopicError:
            return None

    def set_notify_target(self, user: User, name: str, target: NotifyTarget) -> None:
        self._write_to(self.views.targets, [(name.encode(), target.to_json())])
        self.audit(user, "notify.target.set", {"name": name, "type": target.type.value})

    def remove_notify_target(self, user: User, name: str) -> None:
        self._write_to(self.views.targets, [(name.encode(), None)])
        self.audit(user, "notify.target.remove", {"name": name})

    def send_test(self, user: User, name: str) -> str:
        """Ask the notify service to deliver a test alert to the target; the test's event id."""
        test = NotifyTest(test_id=str(uuid.uuid4()), requested_at=datetime.now(UTC))
        self._write(self.settings.notify_tests_topic, name, test.to_json())
        self.audit(user, "notify.target.test", {"name": name, "test_id": test.test_id})
        return test.test_id

    def deliveries(self, limit: int) -> list[NotifyDelivery]:
        try:
            return self.views.deliveries.read(limit, self.timeout_s)
        except CompactedTopicError as error:
            raise _broker_unread(error) from None

    def _write(self, topic: str, key: str, value: bytes | None) -> None:
        try:
            self.views.writer.write(topic, [(key.encode(), value)])
        except (CompactedTopicError, KafkaException) as error:
            raise _broker_down(error) from None


def _broker_unread(error: Exception) -> HTTPException:
    log.warning("console: a topic has not been read", extra={"error": str(error)[:300]})
    return HTTPException(503, "the console is still reading its topics from the broker; try again shortly")


def _broker_down(error: Exception) -> HTTPException:
    log.warning("console: the broker failed", extra={"error": str(error)[:300]})
    return HTTPException(503, "the broker did not confirm the change; try again (repeating it is harmless)")


def backend(request: Request) -> Backend:
    return request.app.state.backend  # type: ignore[no-any-return]
