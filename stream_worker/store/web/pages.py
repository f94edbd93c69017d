"""The console's pages, rendered on the server (Jinja2): sign-in, live feed, search, a sighting
(with its plate's visits), the visits (who is on site now, and a search of visits), alerts, the
reports (charts and their files), the watch list, the cameras (with their live state), the
notification targets (with their tests and the delivery log) and the audit. Forms post with
the session's CSRF token and come back with a redirect (303) and a one-line notice."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlencode

import orjson
from fastapi import APIRouter, Depends, File, Form, HTTPException, Query, Request, UploadFile
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates
from starlette.concurrency import run_in_threadpool

from stream_worker.contracts.cameras import detector_scales_text, parse_detector_scales
from stream_worker.contracts.corrections import CorrectionKind
from stream_worker.contracts.credentials import shown
from stream_worker.contracts.notify import NotifyTarget
from stream_worker.contracts.plate_formats import DEFAULT_REGION, known_regions
from stream_worker.contracts.watchlist import WatchKind
from stream_worker.store import corrections as stored_corrections
from stream_worker.store import queries
from stream_worker.store.report_files import FORMATS as REPORT_FORMATS
from stream_worker.store.report_files import render as render_report
from stream_worker.store.reports import REPORTS, ReportRange, report, series
from stream_worker.store.rows import duration
from stream_worker.store.search import SearchQuery, search
from stream_worker.store.search_output import parse_time
from stream_worker.store.visits import VisitQuery, VisitState, on_site, search_visits
from stream_worker.store.web import charts
from stream_worker.store.web.api import (
    Review,
    camera_id_or_422,
    camera_states,
    configured_camera_or_404,
    entry_or_422,
    import_rows,
    listed_plate_or_404,
    review_or_422,
    search_query,
    settings_or_422,
    stored_target_or_404,
    target_name_or_422,
    target_or_422,
    visit_query,
)
from stream_worker.store.web.auth import check_csrf, csrf_token, current_user, sessions_of, writer
from stream_worker.store.web.backend import Backend, backend
from stream_worker.store.web.limiter import SignInBusy
from stream_worker.store.web.paths import camera_page as camera_url
from stream_worker.store.web.paths import segment
from stream_worker.store.web.paths import sighting_page as sighting_url
from stream_worker.store.web.users import User

router = APIRouter(include_in_schema=False)
templates = Jinja2Templates(directory=Path(__file__).resolve().parent / "templates")
templates.env.filters["segment"] = segment  # every id put into a URL path goes through it
templates.env.filters["duration"] = duration
Reader = Annotated[User, Depends(current_user)]
Admin = Annotated[User, Depends(writer)]
Store = Annotated[Backend, Depends(backend)]
MAX_UPLOAD_BYTES = 2 * 1024 * 1024
PLATE_VISITS_SHOWN = 20  # a sighting's page: its plate's latest visits


def render(request: Request, name: str, status_code: int = 200, **context: Any) -> HTMLResponse:
    context.setdefault("user", getattr(request.state, "user", None))
    context["csrf"] = csrf_token(request)
    context["notice"] = request.session.pop("notice", None)
    return templates.TemplateResponse(request, name, context, status_code=status_code)


def back(request: Request, url: str, notice: str) -> RedirectResponse:
    request.session["notice"] = notice
    return RedirectResponse(url, status_code=303)


def _local(target: str | None) -> str:
    """A redirect target inside this site only."""
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/"
    return target


# --- sign in / out ------------------------------------------------------------------------------
@router.get("/login", response_class=HTMLResponse)
def login_page(request: Request, next: str = "/") -> HTMLResponse:
    return render(request, "login.html", next=_local(next), user=None)


@router.post("/login", response_class=HTMLResponse, response_model=None)
async def login(
    request: Request,
    store: Store,
    username: Annotated[str, Form(max_length=128)],
    password: Annotated[str, Form(max_length=1024)],
    next: Annotated[str, Form(max_length=2048)] = "/",
) -> Response:
    await check_csrf(request)
    client = request.client.host if request.client else ""  # the proxy's only if --forwarded-allow-ips
    wait_s = store.sign_ins.admit(client, username)
    if wait_s > 0:  # refused before the password is hashed
        retry = str(int(wait_s) + 1)
        raise HTTPException(429, f"too many wrong passwords: try again in {retry} s", {"retry-after": retry})
    user = None
    try:
        user = await run_in_threadpool(store.sign_ins.hashing, store.users.authenticate, username, password)
    except SignInBusy as busy:
        raise HTTPException(503, str(busy), {"retry-after": "5"}) from None
    finally:
        store.sign_ins.settle(client, username, failed=user is None)
    if user is None:
        return render(
            request,
            "login.html",
            status_code=401,
            next=_local(next),
            user=None,
            error="Wrong user name or password.",
            username=username,
        )
    await run_in_threadpool(sessions_of(request).sign_in, request.session, user)
    return RedirectResponse(_local(next), status_code=303)


@router.post("/logout")
async def logout(request: Request, user: Reader) -> RedirectResponse:
    """Ends the session itself (its row deleted): the cookie, kept or copied, signs nobody in."""
    await check_csrf(request)
    await run_in_threadpool(sessions_of(request).sign_out, request.session)
    return RedirectResponse("/login", status_code=303)


@router.post("/sessions/revoke")
async def revoke_sessions_page(
    request: Request,
    user: Admin,
    store: Store,
    of_user: Annotated[str, Form(alias="user", max_length=128)] = "",
) -> RedirectResponse:
    """An admin's "sign out everywhere": one user's sessions, or (no user) everyone's but this one."""
    revoked = await run_in_threadpool(store.revoke_sessions, user, of_user or None, request.session)
    whose = of_user or "everyone else"
    return back(request, "/audit", f"Signed {whose} out everywhere ({revoked} sessions).")


# --- reading ------------------------------------------------------------------------------------
@router.get("/", response_class=HTMLResponse)
def live_page(request: Request, user: Reader) -> HTMLResponse:
    return render(request, "live.html")


@router.get("/search", response_class=HTMLResponse)
def search_page(
    request: Request,
    user: Reader,
    store: Store,
    text: Annotated[str, Query(max_length=64)] = "",
    fuzzy: bool = False,
    camera: Annotated[str, Query(max_length=128)] = "",
    zone: Annotated[str, Query(max_length=128)] = "",
    direction: Annotated[str, Query(max_length=16)] = "",
    since: Annotated[str, Query(max_length=40)] = "",
    until: Annotated[str, Query(max_length=40)] = "",
    cursor: Annotated[str, Query(max_length=256)] = "",
) -> HTMLResponse:
    """The form's empty fields are no filter (a browser sends them all)."""
    form = {
        "text": text,
        "camera": camera,
        "zone": zone,
        "direction": direction,
        "since": since,
        "until": until,
    }
    page = None
    if any(form.values()):
        query: SearchQuery = search_query(**form, fuzzy=fuzzy, cursor=cursor, limit=50)
        with store.database.connect() as connection:
            page = search(connection, query)
    return render(
        request, "search.html", form={**form, "fuzzy": fuzzy}, page=page, params=_params(form, fuzzy)
    )


@router.get("/sightings/{sighting_id}", response_class=HTMLResponse)
def sighting_page(request: Request, sighting_id: str, user: Reader, store: Store) -> HTMLResponse:
    with store.database.connect() as connection:
        found = queries.sighting(connection, sighting_id) if len(sighting_id) <= 64 else None
        correction = stored_corrections.of_sighting(connection, sighting_id) if found else None
        visits = _plate_visits(connection, found.text) if found else None
    if found is None:
        raise HTTPException(404, "no such sighting stored (it may have aged out or been forgotten)")
    record = orjson.dumps(found.record, option=orjson.OPT_INDENT_2).decode()
    return render(
        request,
        "sighting.html",
        s=found,
        record=record,
        correction=correction,
        regions=sorted(known_regions()),
        visits=visits,
        now=datetime.now(UTC),
    )


# --- visits -------------------------------------------------------------------------------------


@router.get("/visits", response_class=HTMLResponse)
def visits_page(
    request: Request,
    user: Reader,
    store: Store,
    text: Annotated[str, Query(max_length=64)] = "",
    fuzzy: bool = False,
    site: Annotated[str, Query(max_length=128)] = "",
    camera: Annotated[str, Query(max_length=128)] = "",
    state: Annotated[str, Query(max_length=16)] = "",
    since: Annotated[str, Query(max_length=40)] = "",
    until: Annotated[str, Query(max_length=40)] = "",
    cursor: Annotated[str, Query(max_length=256)] = "",
) -> HTMLResponse:
    """Who is on site now (each site's open visits, entry time and dwell so far) and, with any
    filter given, the visits found (the form's empty fields are no filter)."""
    form = {"text": text, "site": site, "camera": camera, "state": state, "since": since, "until": until}
    page = None
    with store.database.connect() as connection:
        present = on_site(connection, site or None)
        if any(form.values()):
            query: VisitQuery = visit_query(**form, fuzzy=fuzzy, cursor=cursor, limit=50)
            page = search_visits(connection, query)
    sites: dict[str, list[Any]] = {}
    for visit in present:
        sites.setdefault(visit.site, []).append(visit)
    return render(
        request,
        "visits.html",
        sites=sites,
        now=datetime.now(UTC),
        form={**form, "fuzzy": fuzzy},
        states=[state.value for state in VisitState],
        page=page,
        params=_params(form, fuzzy),
    )


def _params(form: dict[str, str], fuzzy: bool) -> dict[str, str]:
    """A search form's query for its next page's link: the fields given, and `fuzzy` when set."""
    params = {k: v for k, v in form.items() if v}
    if fuzzy:
        params["fuzzy"] = "true"
    return params


def _plate_visits(connection: Any, text: str) -> Any:
    """The latest visits of the plate `text` (entry or exit text); None for a text no plate query
    takes (a row stored past the contracts)."""
    try:
        query = VisitQuery(text=text, fuzzy=False, limit=PLATE_VISITS_SHOWN)
    except ValueError:
        return None
    return search_visits(connection, query)


@router.post("/sightings/{sighting_id}/review")
def sighting_review(
    request: Request,
    sighting_id: str,
    user: Admin,
    store: Store,
    kind: Annotated[CorrectionKind, Form()],
    text: Annotated[str, Form(max_length=64)] = "",
    region: Annotated[str, Form(max_length=32)] = "",
    country: Annotated[str, Form(max_length=32)] = "",
) -> RedirectResponse:
    """Confirm the read, or correct its text (and region/country): published on the corrections
    topic, stored beside the sighting, audited."""
    review = Review(kind=kind, text=text, region=region, country=country)
    correction = review_or_422(store, sighting_id, review, user)
    store.correct(user, correction)
    url = sighting_url(correction.sighting_id)
    if kind is CorrectionKind.CONFIRM:
        return back(request, url, f"Confirmed the read {correction.old_text}.")
    return back(request, url, f"Corrected {correction.old_text} to {correction.new_text}.")


# --- reports ------------------------------------------------------------------------------------
REPORT_DEFAULT_SINCE = "7d"
CATEGORY_REPORTS = ("top-plates", "alerts")  # horizontal bars; the others are over time


def report_range(since: str, until: str, camera: str) -> ReportRange:
    """The form's range (empty `since`: the last 7 days; empty `until`: now); 422 when invalid."""
    now = datetime.now(UTC)
    try:
        start = parse_time(since or REPORT_DEFAULT_SINCE, now)
        return ReportRange(start, parse_time(until, now) if until else now, camera or None)
    except ValueError as error:
        raise HTTPException(422, str(error)) from None


@router.get("/reports", response_class=HTMLResponse)
def reports_page(
    request: Request,
    user: Reader,
    store: Store,
    since: Annotated[str, Query(max_length=40)] = "",
    until: Annotated[str, Query(max_length=40)] = "",
    camera: Annotated[str, Query(max_length=128)] = "",
) -> HTMLResponse:
    """Every report over one range, each a chart, its figures and its downloads (the same range)."""
    span = report_range(since, until, camera)
    shown_reports = []
    with store.database.connect() as connection:
        for name in REPORTS:
            try:
                answer = report(connection, name, span)
            except ValueError as error:  # a range this report does not cover (hourly: 31 days)
                shown_reports.append({"name": name, "refused": str(error)})
                continue
            points = series(answer)
            draw = charts.bars if answer.name in CATEGORY_REPORTS else charts.columns
            svg = draw(points, answer.title)
            shown_reports.append({"name": name, "report": answer, "points": points, "svg": svg})
    params = {"since": span.since.isoformat(), "until": span.until.isoformat()}
    if span.camera:
        params["camera"] = span.camera
    return render(
        request,
        "reports.html",
        reports=shown_reports,
        span=span,
        form={"since": since, "until": until, "camera": camera},
        query=urlencode(params),
    )


@router.get("/reports/{name}.{file_format}")
def report_download(
    user: Reader,
    store: Store,
    name: str,
    file_format: str,
    since: Annotated[str, Query(max_length=40)] = "",
    until: Annotated[str, Query(max_length=40)] = "",
    camera: Annotated[str, Query(max_length=128)] = "",
) -> Response:
    """One report as a CSV (cells escaped against formula injection) or JSON Lines file."""
    if name not in REPORTS or file_format not in REPORT_FORMATS:
        raise HTTPException(404, "no such report or format")
    span = report_range(since, until, camera)
    try:
        with store.database.connect() as connection:
            answer = report(connection, name, span)
    except ValueError as error:
        raise HTTPException(422, str(error)) from None
    return Response(
        render_report(answer, file_format),
        media_type=REPORT_FORMATS[file_format],
        headers={"content-disposition": f'attachment; filename="{name}.{file_format}"'},
    )


@router.get("/alerts", response_class=HTMLResponse)
def alerts_page(
    request: Request,
    user: Reader,
    store: Store,
    show: Annotated[str, Query(max_length=16)] = "open",
    cursor: Annotated[str | None, Query(max_length=256)] = None,
) -> HTMLResponse:
    acknowledged = {"open": False, "acknowledged": True, "all": None}.get(show, False)
    try:
        with store.database.connect() as connection:
            page = queries.alerts(connection, acknowledged, 50, cursor or None)
    except ValueError as error:
        raise HTTPException(422, str(error)) from None
    return render(request, "alerts.html", page=page, show=show if show in ("acknowledged", "all") else "open")


@router.post("/alerts/{alert_id}/acknowledge")
def acknowledge_page(request: Request, alert_id: str, user: Admin, store: Store) -> RedirectResponse:
    with store.database.begin() as connection:
        row = queries.acknowledge(connection, alert_id, user.name) if len(alert_id) <= 64 else None
    if row is None:
        raise HTTPException(404, "no such alert stored")
    store.audit_logged(user, "alert.acknowledge", {"alert_id": row.alert_id})
    return back(request, "/alerts", f"Alert on {row.plate} acknowledged.")


@router.get("/audit", response_class=HTMLResponse)
def audit_page(request: Request, user: Admin, store: Store) -> HTMLResponse:
    with store.database.connect() as connection:
        rows = queries.audit(connection, 200)
    return render(request, "audit.html", rows=rows)


# --- watch list ---------------------------------------------------------------------------------
@router.get("/watchlist", response_class=HTMLResponse)
def watchlist_page(request: Request, user: Reader, store: Store) -> HTMLResponse:
    return render(request, "watchlist.html", entries=store.watchlist())


@router.post("/watchlist/add")
def watchlist_add(
    request: Request,
    user: Admin,
    store: Store,
    plate: Annotated[str, Form(max_length=64)],
    list_name: Annotated[str, Form(alias="list", max_length=128)],
    label: Annotated[str, Form(max_length=256)] = "",
    max_distance: Annotated[str, Form(max_length=16)] = "",
    expires_at: Annotated[str, Form(max_length=64)] = "",
    kind: Annotated[WatchKind, Form()] = WatchKind.WATCH,
    overstay_s: Annotated[str, Form(max_length=16)] = "",
) -> RedirectResponse:
    entry = entry_or_422(
        plate, list_name, label or None, max_distance or None, expires_at or None, kind, overstay_s or None
    )
    store.change_watchlist(user, "watchlist.add", entries=[entry])
    allow = " (an allow entry: it raises no alert)" if kind is WatchKind.ALLOW else ""
    return back(request, "/watchlist", f"Added {entry.plate} to {entry.list}{allow}.")


@router.post("/watchlist/remove")
def watchlist_remove(
    request: Request, user: Admin, store: Store, plate: Annotated[str, Form(max_length=64)]
) -> RedirectResponse:
    plate = listed_plate_or_404(store, plate)
    store.change_watchlist(user, "watchlist.remove", removals=[plate])
    return back(request, "/watchlist", f"Removed {plate}.")


@router.post("/watchlist/import")
async def watchlist_import(
    request: Request, user: Admin, store: Store, file: Annotated[UploadFile, File()]
) -> RedirectResponse:
    data = await file.read(MAX_UPLOAD_BYTES + 1)
    if len(data) > MAX_UPLOAD_BYTES:
        raise HTTPException(413, "the CSV file is larger than 2 MiB")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise HTTPException(422, "the CSV file is not UTF-8 text") from None
    entries = import_rows(text)
    watched = set()
    if entries:
        listed = await run_in_threadpool(store.watchlist)
        watched = {entry.plate for entry in listed if entry.effective_kind is WatchKind.WATCH}
        await run_in_threadpool(store.change_watchlist, user, "watchlist.import", entries)
    allowed = [entry.plate for entry in entries if entry.effective_kind is WatchKind.ALLOW]
    notice = f"Imported {len(entries)} entries ({len(allowed)} allow entries, which raise no alert)."
    silenced = [plate for plate in allowed if plate in watched]
    if silenced:  # a watched plate made an allow entry stops alerting: say so, never silently
        shown = ", ".join(silenced[:20]) + (" ..." if len(silenced) > 20 else "")
        notice += f" No longer watched (now allowed): {shown}."
    return back(request, "/watchlist", notice)


# --- cameras ------------------------------------------------------------------------------------
@router.get("/cameras", response_class=HTMLResponse)
def cameras_page(request: Request, user: Reader, store: Store) -> HTMLResponse:
    configured = store.cameras()
    with store.database.connect() as connection:
        seen = {camera.camera_id: camera.last_seen for camera in queries.cameras_seen(connection)}
    states = camera_states(store)
    names = sorted(set(configured) | set(seen) | set(states))
    return render(request, "cameras.html", names=names, configured=configured, seen=seen, states=states)


@router.get("/cameras/{camera_id}", response_class=HTMLResponse)
def camera_page(request: Request, camera_id: str, user: Reader, store: Store) -> HTMLResponse:
    camera_id = camera_id_or_422(camera_id)
    settings = store.cameras().get(camera_id)
    data = settings.model_dump(mode="json") if settings is not None else {}
    text = orjson.dumps(data, option=orjson.OPT_INDENT_2).decode()
    region = (settings.region if settings is not None else None) or DEFAULT_REGION
    regions = sorted(known_regions() | {region})  # a newer version's region stays shown as it is
    scales = settings.detector_scales if settings is not None else None
    return render(
        request,
        "camera.html",
        camera_id=camera_id,
        settings=settings,
        status=camera_states(store).get(camera_id),
        source=shown(settings.source.url) if settings is not None and settings.source is not None else None,
        now=time.time(),
        settings_json=text,
        region=region,
        regions=regions,
        detector_scales=detector_scales_text(scales) if scales else "",
    )


@router.post("/cameras/{camera_id}")
def camera_set(
    request: Request,
    camera_id: str,
    user: Admin,
    store: Store,
    settings: Annotated[str, Form(max_length=256 * 1024)],
    region: Annotated[str, Form(max_length=32)] = "",
    detector_scales: Annotated[str, Form(max_length=200)] = "",
) -> RedirectResponse:
    """`region` (the page's region field) replaces the JSON's; the default one (`ru`) is written as no
    region at all, which means the same and keeps the settings as they were before regions.
    `detector_scales` (the page's field, `1.0,0.5,3.0`) replaces the JSON's too; empty or `default`:
    none, Triton's default."""
    camera_id = camera_id_or_422(camera_id)
    try:
        data = orjson.loads(settings or "{}")
    except orjson.JSONDecodeError:
        raise HTTPException(422, "the settings are not JSON") from None
    try:
        scales = parse_detector_scales(detector_scales)
    except ValueError as error:
        raise HTTPException(422, f"detector scales {error}") from None
    if region and isinstance(data, dict):
        data = {key: value for key, value in data.items() if key != "region"}
        if region != DEFAULT_REGION:
            data["region"] = region
    if isinstance(data, dict):
        data = {key: value for key, value in data.items() if key != "detector_scales"}
        if scales is not None:
            data["detector_scales"] = scales
    store.set_camera(user, camera_id, settings_or_422(data))
    return back(request, camera_url(camera_id), f"Saved the settings of {camera_id}.")


@router.post("/cameras/{camera_id}/remove")
def camera_remove(request: Request, camera_id: str, user: Admin, store: Store) -> RedirectResponse:
    camera_id = configured_camera_or_404(store, camera_id)
    store.remove_camera(user, camera_id)
    return back(request, "/cameras", f"{camera_id} is back to the default settings.")


# --- notifications ------------------------------------------------------------------------------
DELIVERIES_SHOWN = 50


@router.get("/notifications", response_class=HTMLResponse)
def notifications_page(
    request: Request,
    user: Reader,
    store: Store,
    edit: Annotated[str, Query(max_length=128)] = "",
) -> HTMLResponse:
    """The targets (secrets as their ${NAME} references only), the delivery log, and for an admin
    the form that adds or replaces a target (`edit=NAME` fills it with that target)."""
    targets = store.notify_targets()
    editing = targets.get(edit)
    return render(
        request,
        "notifications.html",
        targets=targets,
        status=store.notify_status(),
        shown={name: _indented(t) for name, t in targets.items()},
        deliveries=store.deliveries(DELIVERIES_SHOWN),
        edit_name=edit if editing is not None else "",
        edit_text=_indented(editing) if editing is not None else "",
    )


def _indented(target: NotifyTarget) -> str:
    return orjson.dumps(target.model_dump(mode="json"), option=orjson.OPT_INDENT_2).decode()


@router.post("/notifications/targets")
def target_set(
    request: Request,
    user: Admin,
    store: Store,
    name: Annotated[str, Form(max_length=128)],
    target: Annotated[str, Form(max_length=256 * 1024)],
) -> RedirectResponse:
    """Add or replace the target `name` from its JSON or YAML (checked whole: 422 with why)."""
    name = target_name_or_422(name)
    parsed = target_or_422(target)
    store.set_notify_target(user, name, parsed)
    status = store.notify_status()
    missing = status.missing(parsed) if status is not None else []
    warning = (
        f" Notify has no secret {', '.join(missing)}: its deliveries are held until it does."
        if missing
        else ""
    )
    return back(request, "/notifications", f"Saved the target {name}.{warning}")


@router.post("/notifications/targets/{name}/remove")
def target_remove(request: Request, name: str, user: Admin, store: Store) -> RedirectResponse:
    name = stored_target_or_404(store, name)
    store.remove_notify_target(user, name)
    return back(request, "/notifications", f"Removed the target {name}.")


@router.post("/notifications/targets/{name}/test")
def target_test(request: Request, name: str, user: Admin, store: Store) -> RedirectResponse:
    name = stored_target_or_404(store, name)
    test_id = store.send_test(user, name)
    return back(
        request, "/notifications", f"A test ({test_id}) is on its way to {name}: see the delivery log."
    )
