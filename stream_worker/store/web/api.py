"""The HTTP API under /api (its OpenAPI schema at /api/openapi.json): search, sightings and their
pictures, visits (searched, and who is on site now), alerts and their acknowledgement, the watch
list, the cameras' settings and live state, the notification targets (their tests and delivery log),
the audit. Reads need a signed-in user (cookie or `Authorization: Bearer TOKEN`); writes an admin
(and, from a cookie session, the X-CSRF-Token header)."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, HTTPException, Query, Request, Response
from pydantic import BaseModel, Field, ValidationError, model_validator

from stream_worker.cameras.records import validate_camera_id
from stream_worker.cameras.status import STATUS_INTERVAL_S, CameraStatus, is_stale
from stream_worker.contracts.cameras import CameraSettings, CameraSettingsError, parse_settings
from stream_worker.contracts.corrections import Correction, CorrectionKind
from stream_worker.contracts.notify import (
    NotifyDelivery,
    NotifyStatus,
    NotifyTarget,
    NotifyTargetError,
    parse_target,
    parse_target_text,
    target_name_problem,
)
from stream_worker.contracts.sightings import BestRead, Direction, SightingSource
from stream_worker.contracts.watchlist import WatchEntry, WatchKind, error_summary, new_entry, validate_plate
from stream_worker.store import corrections as stored_corrections
from stream_worker.store import queries
from stream_worker.store.rows import MAX_SEQ, AlertRow, AuditRow, SightingDetail, VisitRow
from stream_worker.store.search import MAX_LIMIT, SearchPage, SearchQuery, search
from stream_worker.store.visits import VisitPage, VisitQuery, VisitState, on_site, search_visits
from stream_worker.store.web.auth import current_user, writer
from stream_worker.store.web.backend import Backend, backend
from stream_worker.store.web.users import User
from stream_worker.watchlists.csvfile import CsvImportError, parse_csv

router = APIRouter(prefix="/api", tags=["api"])
Reader = Annotated[User, Depends(current_user)]
Admin = Annotated[User, Depends(writer)]
Store = Annotated[Backend, Depends(backend)]
MAX_CSV_BYTES = 2 * 1024 * 1024


class Me(BaseModel):
    name: str
    role: str


class NewEntry(BaseModel):
    plate: str = Field(max_length=64)
    list: str = Field(max_length=128)
    label: str | None = Field(None, max_length=256)
    max_distance: float | None = None
    expires_at: datetime | None = None
    kind: WatchKind = WatchKind.WATCH
    overstay_s: float | None = None


class Review(BaseModel):
    """An operator's review of a read: confirm it, or correct its text (and region/country)."""

    kind: CorrectionKind
    text: str | None = Field(None, max_length=64, description="kind correct: the plate as it really is.")
    region: str | None = Field(None, max_length=32)
    country: str | None = Field(None, max_length=32)


class Changed(BaseModel):
    changed: int
    detail: str


class Camera(BaseModel):
    camera_id: str
    settings: CameraSettings


class CameraState(BaseModel):
    """A camera's live state as the connector last wrote it on `camera-status`; `stale`: not renewed
    for three status intervals (its replica is gone or stuck)."""

    camera_id: str
    state: str
    state_since: float
    updated_at: float
    decoded_fps: float | None = None
    published_fps: float | None = None
    frames_decoded: int | None = None
    frames_published: int | None = None
    frames_dropped: int | None = None
    offered_fps: float | None = None  # before shedding: "published_fps of offered_fps"
    frames_shed: int | None = None
    delay_s: float | None = None
    reconnects: int | None = None
    last_frame_at: float | None = None
    last_error: str | None = None
    replica: str | None = None
    source: str | None = None  # as stored: ${NAME} references, never resolved
    # The rest of the record, so that `cameras status --json` prints the same from here.
    frames_static: int | None = None
    delivery_errors: int | None = None
    motion_share: float | None = None
    static_markers: int | None = None
    frames_offered: int | None = None
    max_delay_s: float | None = None
    stale: bool


class Target(BaseModel):
    name: str
    target: NotifyTarget
    # The secrets it names that notify says it lacks (its deliveries are held), and its dead letters
    # on the DLQ; None: notify has not said (not started yet).
    missing_secrets: list[str] | None = None
    dead_letters: int | None = None


class SentTest(BaseModel):
    test_id: str
    detail: str


def camera_state(status: CameraStatus, now: float) -> CameraState:
    fields = {name: getattr(status, name) for name in CameraState.model_fields if name != "stale"}
    return CameraState(**fields, stale=is_stale(status, STATUS_INTERVAL_S, now))


def camera_states(store: Backend) -> dict[str, CameraState]:
    now = time.time()
    return {cid: camera_state(status, now) for cid, status in sorted(store.camera_states().items())}


def search_query(**values: Any) -> SearchQuery:
    """A SearchQuery from request values; 422 with the reasons for bad ones (never a 500)."""
    try:
        return SearchQuery(**{k: v for k, v in values.items() if v not in (None, "")})
    except ValueError as error:  # pydantic's ValidationError is a ValueError
        raise HTTPException(422, _reasons(error)) from None


def _reasons(error: ValueError) -> str:
    errors = getattr(error, "errors", None)
    if callable(errors):
        return "; ".join(
            f"{'.'.join(str(p) for p in item.get('loc', ())) or 'value'}: {item.get('msg')}"
            for item in errors()
        )
    return str(error)


def visit_query(**values: Any) -> VisitQuery:
    """A VisitQuery from request values; 422 with the reasons for bad ones (never a 500)."""
    try:
        return VisitQuery(**{k: v for k, v in values.items() if v not in (None, "")})
    except ValueError as error:
        raise HTTPException(422, _reasons(error)) from None


class Revoke(BaseModel):
    """Whose sessions end: one user's (`user`), or everyone's (`all: true`)."""

    user: str | None = Field(None, min_length=1, max_length=128)
    all: bool = False

    @model_validator(mode="after")
    def _one_of(self) -> Revoke:
        if (self.user is None) == (not self.all):
            raise ValueError("name a user, or say all: true (not both)")
        return self


@router.get("/me", response_model=Me)
def me(user: Reader) -> Me:
    return Me(name=user.name, role=user.role)


@router.post("/sessions/revoke", response_model=Changed)
def revoke_sessions(request: Request, revoke: Revoke, user: Admin, store: Store) -> Changed:
    """Sign a user, or everyone, out everywhere: their sessions end on every replica at once (the
    caller's own session stays; API tokens are not sessions: remove them from the users file)."""
    revoked = store.revoke_sessions(user, revoke.user, request.session)
    return Changed(changed=revoked, detail=f"{revoked} sessions ended")


@router.get("/sightings", response_model=SearchPage)
def search_sightings(
    user: Reader,
    store: Store,
    text: Annotated[str | None, Query(max_length=64)] = None,
    fuzzy: bool = True,
    max_distance: float = 1.0,
    camera: Annotated[str | None, Query(max_length=128)] = None,
    zone: Annotated[str | None, Query(max_length=128)] = None,
    direction: Direction | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    limit: Annotated[int, Query(ge=1, le=MAX_LIMIT)] = 50,
    cursor: Annotated[str | None, Query(max_length=256)] = None,
) -> SearchPage:
    """Sightings newest first: exact or fuzzy plate text, camera, zone, direction, time range."""
    query = search_query(
        text=text,
        fuzzy=fuzzy,
        max_distance=max_distance,
        camera=camera,
        zone=zone,
        direction=direction,
        since=since,
        until=until,
        limit=limit,
        cursor=cursor,
    )
    with store.database.connect() as connection:
        return search(connection, query)


@router.get("/visits", response_model=VisitPage)
def search_visits_api(
    user: Reader,
    store: Store,
    text: Annotated[str | None, Query(max_length=64)] = None,
    fuzzy: bool = True,
    max_distance: float = 1.0,
    site: Annotated[str | None, Query(max_length=128)] = None,
    camera: Annotated[str | None, Query(max_length=128)] = None,
    state: VisitState | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    limit: Annotated[int, Query(ge=1, le=MAX_LIMIT)] = 50,
    cursor: Annotated[str | None, Query(max_length=256)] = None,
) -> VisitPage:
    """Visits newest entry first: plate (entry or exit text, exact or fuzzy), site, camera, state
    (on-site or closed), entry time range; `dwell_s` is set once a visit is closed."""
    query = visit_query(
        text=text,
        fuzzy=fuzzy,
        max_distance=max_distance,
        site=site,
        camera=camera,
        state=state,
        since=since,
        until=until,
        limit=limit,
        cursor=cursor,
    )
    with store.database.connect() as connection:
        return search_visits(connection, query)


@router.get("/visits/on-site", response_model=list[VisitRow])
def on_site_api(
    user: Reader, store: Store, site: Annotated[str | None, Query(max_length=128)] = None
) -> list[VisitRow]:
    """The vehicles on site now (open visits), by site then entry time."""
    with store.database.connect() as connection:
        return on_site(connection, site)


@router.get("/sightings/{sighting_id}", response_model=SightingDetail)
def get_sighting(sighting_id: str, user: Reader, store: Store) -> SightingDetail:
    with store.database.connect() as connection:
        found = queries.sighting(connection, sighting_id[:64])
    if found is None or len(sighting_id) > 64:
        raise HTTPException(404, "no such sighting stored")
    return found


def review_or_422(store: Backend, sighting_id: str, review: Review, user: User) -> Correction:
    """The correction `review` makes of the stored sighting: 404 when it is not stored, 422 (why)
    for a text that is not a plate or a correction that changes nothing."""
    with store.database.connect() as connection:
        found = queries.sighting(connection, sighting_id) if len(sighting_id) <= 64 else None
    if found is None:
        raise HTTPException(404, "no such sighting stored (it may have aged out or been forgotten)")
    confirm = review.kind is CorrectionKind.CONFIRM
    try:
        return Correction(
            sighting_id=found.sighting_id,
            camera_id=found.camera_id,
            kind=review.kind,
            old_text=found.text,
            new_text=found.text if confirm else review.text or "",
            region=None if confirm else review.region or None,
            country=None if confirm else review.country or None,
            corrected_by=user.name,
            corrected_at=datetime.now(UTC),
            **sighting_reads(found.record),
        )
    except ValidationError as error:
        raise HTTPException(422, f"the correction is refused: {error_summary(error)}") from None


def sighting_reads(record: dict[str, Any]) -> dict[str, Any]:
    """The stored sighting's best read (its picture left out) and plates positions, which the
    correction carries for its consumers; none when the stored record lacks them."""
    try:
        best = BestRead.model_validate({**record.get("best_read", {}), "image": None})
        source = SightingSource.model_validate(record.get("source", {}))
    except (ValidationError, TypeError):
        return {}
    return {"best_read": best, "source": source}


@router.post("/sightings/{sighting_id}/correction", response_model=stored_corrections.CorrectionRow)
def review_sighting(
    sighting_id: str, review: Review, user: Admin, store: Store
) -> stored_corrections.CorrectionRow:
    """Confirm or correct the sighting's read: on the corrections topic, then stored and audited."""
    correction = review_or_422(store, sighting_id, review, user)
    store.correct(user, correction)
    with store.database.connect() as connection:
        stored = stored_corrections.of_sighting(connection, correction.sighting_id)
    if stored is None:  # forgotten or aged out meanwhile
        raise HTTPException(404, "no such sighting stored")
    return stored


@router.get(
    "/sightings/{sighting_id}/picture",
    response_class=Response,
    responses={200: {"content": {"image/jpeg": {}}}},
)
def get_picture(sighting_id: str, user: Reader, store: Store) -> Response:
    with store.database.connect() as connection:
        jpeg = queries.picture(connection, sighting_id[:64]) if len(sighting_id) <= 64 else None
    if jpeg is None:
        raise HTTPException(404, "no picture stored for this sighting")
    return Response(jpeg, media_type="image/jpeg")  # never cached: headers.py


@router.get("/alerts", response_model=queries.AlertPage)
def list_alerts(
    user: Reader,
    store: Store,
    acknowledged: bool | None = None,
    limit: Annotated[int, Query(ge=1, le=MAX_LIMIT)] = 50,
    cursor: Annotated[str | None, Query(max_length=256)] = None,
) -> queries.AlertPage:
    try:
        with store.database.connect() as connection:
            return queries.alerts(connection, acknowledged, limit, cursor or None)
    except ValueError as error:
        raise HTTPException(422, str(error)) from None


@router.post("/alerts/{alert_id}/acknowledge", response_model=AlertRow)
def acknowledge_alert(alert_id: str, user: Admin, store: Store) -> AlertRow:
    with store.database.begin() as connection:
        row = queries.acknowledge(connection, alert_id[:64], user.name) if len(alert_id) <= 64 else None
    if row is None:
        raise HTTPException(404, "no such alert stored")
    store.audit_logged(user, "alert.acknowledge", {"alert_id": row.alert_id})
    return row


@router.get("/audit", response_model=list[AuditRow])
def list_audit(
    user: Admin,
    store: Store,
    limit: Annotated[int, Query(ge=1, le=MAX_LIMIT)] = 100,
    before_seq: Annotated[int | None, Query(ge=1, le=MAX_SEQ)] = None,
) -> list[AuditRow]:
    with store.database.connect() as connection:
        return queries.audit(connection, limit, before_seq)


@router.get("/watchlist", response_model=list[WatchEntry])
def get_watchlist(user: Reader, store: Store) -> list[WatchEntry]:
    return store.watchlist()


@router.post("/watchlist", response_model=WatchEntry, status_code=201)
def add_entry(entry: NewEntry, user: Admin, store: Store) -> WatchEntry:
    made = entry_or_422(
        entry.plate,
        entry.list,
        entry.label,
        entry.max_distance,
        entry.expires_at,
        entry.kind,
        entry.overstay_s,
    )
    store.change_watchlist(user, "watchlist.add", entries=[made])
    return made


def entry_or_422(
    plate: str,
    list_name: str,
    label: str | None,
    max_distance: Any,
    expires_at: datetime | str | None,
    kind: WatchKind = WatchKind.WATCH,
    overstay_s: Any = None,
) -> WatchEntry:
    """A new watch-list entry from what a person typed; 422 with the reasons for bad values."""
    try:
        return new_entry(plate, list_name, label, max_distance, expires_at, kind=kind, overstay_s=overstay_s)
    except ValueError as error:
        raise HTTPException(422, str(error)) from None
    except OverflowError:  # near year 1 or 9999, the offset takes the date off the calendar
        raise HTTPException(422, f"expires_at {str(expires_at)!r} is out of range") from None


def listed_plate_or_404(store: Backend, plate: str) -> str:
    """A valid plate (422 otherwise) that is on the watch list (404 otherwise: nothing to remove,
    so no tombstone and no audit row)."""
    try:
        plate = validate_plate(plate)
    except ValueError as error:
        raise HTTPException(422, f"plate {error}") from None
    if plate not in {entry.plate for entry in store.watchlist()}:
        raise HTTPException(404, f"{plate} is not on the watch list")
    return plate


@router.delete("/watchlist/{plate}", response_model=Changed)
def remove_entry(plate: str, user: Admin, store: Store) -> Changed:
    plate = listed_plate_or_404(store, plate)
    store.change_watchlist(user, "watchlist.remove", removals=[plate])
    return Changed(changed=1, detail=f"removed {plate}")


@router.post("/watchlist/import", response_model=Changed)
def import_entries(
    user: Admin, store: Store, csv: Annotated[str, Body(media_type="text/csv", max_length=MAX_CSV_BYTES)]
) -> Changed:
    """A CSV (the columns `watchlist export` writes): every row checked, then all written, or none."""
    entries = import_rows(csv)
    if entries:
        store.change_watchlist(user, "watchlist.import", entries=entries)
    return Changed(changed=len(entries), detail=f"imported {len(entries)} entries")


def import_rows(text: str) -> list[WatchEntry]:
    try:
        return parse_csv(text)
    except CsvImportError as error:
        problems = "; ".join(str(problem) for problem in error.problems[:20])
        raise HTTPException(422, f"nothing imported, {len(error.problems)} bad row(s): {problems}") from None


@router.get("/cameras", response_model=list[Camera])
def list_cameras(user: Reader, store: Store) -> list[Camera]:
    return [Camera(camera_id=cid, settings=settings) for cid, settings in store.cameras().items()]


def camera_id_or_422(camera_id: str) -> str:
    try:
        return validate_camera_id(camera_id)
    except ValueError as error:
        raise HTTPException(422, f"camera id: {error}") from None


def configured_camera_or_404(store: Backend, camera_id: str) -> str:
    """A valid camera id (422 otherwise) that has settings on the cameras topic (404 otherwise)."""
    camera_id = camera_id_or_422(camera_id)
    if camera_id not in store.cameras():
        raise HTTPException(404, f"{camera_id} has no settings (it uses the defaults)")
    return camera_id


def settings_or_422(data: Any) -> CameraSettings:
    try:
        return parse_settings(data)
    except CameraSettingsError as error:
        raise HTTPException(422, str(error)) from None


@router.get(
    "/cameras/{camera_id}/frame",
    response_class=Response,
    responses={200: {"content": {"image/jpeg": {}}}},
)
def get_frame(camera_id: str, user: Reader, store: Store) -> Response:
    """A recent frame of the camera (from the frames topic's last records), to draw over."""
    frame = store.frame(camera_id_or_422(camera_id))
    if frame is None:
        raise HTTPException(404, "no recent frame of this camera on the frames topic")
    return Response(frame, media_type="image/jpeg")  # never cached: headers.py


@router.put("/cameras/{camera_id}", response_model=Camera)
def put_camera(
    camera_id: str, user: Admin, store: Store, settings: Annotated[dict[str, Any], Body()]
) -> Camera:
    """Replace the camera's settings (the JSON `cameras get` prints)."""
    camera_id = camera_id_or_422(camera_id)
    parsed = settings_or_422(settings)
    store.set_camera(user, camera_id, parsed)
    return Camera(camera_id=camera_id, settings=parsed)


@router.delete("/cameras/{camera_id}", response_model=Changed)
def delete_camera(camera_id: str, user: Admin, store: Store) -> Changed:
    """Back to the defaults; 404 (and nothing audited) for a camera that has no settings."""
    camera_id = configured_camera_or_404(store, camera_id)
    store.remove_camera(user, camera_id)
    return Changed(changed=1, detail=f"{camera_id} back to the defaults")


@router.get("/camera-status", response_model=list[CameraState])
def list_camera_states(
    user: Reader,
    store: Store,
    since: Annotated[
        float | None,
        Query(gt=0, description="Only the cameras whose record was renewed in the last SECONDS."),
    ] = None,
) -> list[CameraState]:
    """Each camera's live state (what `stream-worker cameras status` prints)."""
    states = camera_states(store).values()
    if since is None:
        return list(states)
    cutoff = time.time() - since
    return [state for state in states if state.updated_at >= cutoff]


# --- notifications ------------------------------------------------------------------------------
def target_name_or_422(name: str) -> str:
    problem = target_name_problem(name)
    if problem is not None:
        raise HTTPException(422, f"target name {problem}")
    return name


def stored_target_or_404(store: Backend, name: str) -> str:
    """A valid target name (422 otherwise) that is on the targets topic (404 otherwise)."""
    name = target_name_or_422(name)
    if name not in store.notify_targets():
        raise HTTPException(404, f"there is no target {name}")
    return name


def target_or_422(data: dict[str, Any] | str) -> NotifyTarget:
    """A target from what an admin gave (the API's mapping, or the page's JSON/YAML text); 422 with
    every problem (named by field, never echoing a value)."""
    try:
        return parse_target_text(data, "target") if isinstance(data, str) else parse_target(data, "target")
    except NotifyTargetError as error:
        raise HTTPException(422, str(error)) from None


@router.get("/notify/targets", response_model=list[Target])
def list_targets(user: Reader, store: Store) -> list[Target]:
    """The targets as stored: secrets as their ${NAME} references only (never resolved here)."""
    status = store.notify_status()
    return [_target(name, target, status) for name, target in store.notify_targets().items()]


def _target(name: str, target: NotifyTarget, status: NotifyStatus | None) -> Target:
    if status is None:
        return Target(name=name, target=target)
    missing, dead = status.missing(target), status.dead_letters.get(name, 0)
    return Target(name=name, target=target, missing_secrets=missing, dead_letters=dead)


@router.put("/notify/targets/{name}", response_model=Target)
def put_target(name: str, user: Admin, store: Store, target: Annotated[dict[str, Any], Body()]) -> Target:
    """Add or replace the target (the JSON `notify targets get` prints)."""
    name = target_name_or_422(name)
    parsed = target_or_422(target)
    store.set_notify_target(user, name, parsed)
    return _target(name, parsed, store.notify_status())


@router.delete("/notify/targets/{name}", response_model=Changed)
def delete_target(name: str, user: Admin, store: Store) -> Changed:
    name = stored_target_or_404(store, name)
    store.remove_notify_target(user, name)
    return Changed(changed=1, detail=f"removed the target {name}")


@router.post("/notify/targets/{name}/test", response_model=SentTest, status_code=202)
def test_target(name: str, user: Admin, store: Store) -> SentTest:
    """Ask the notify service to deliver a test alert to the target; its outcome shows in the
    delivery log under the returned event id."""
    name = stored_target_or_404(store, name)
    test_id = store.send_test(user, name)
    return SentTest(test_id=test_id, detail=f"a test is on its way to {name}")


@router.get("/notify/deliveries", response_model=list[NotifyDelivery])
def list_deliveries(
    user: Reader, store: Store, limit: Annotated[int, Query(ge=1, le=MAX_LIMIT)] = 50
) -> list[NotifyDelivery]:
    """The delivery log, newest first: sent, retried, failed (with the target's answer), dropped."""
    return store.deliveries(limit)
