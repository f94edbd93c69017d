"""What the `stream-worker cameras` commands do, apart from parsing their options (cameras/cli.py).

Each returns the exit status (service/topic_actions.py: 0 done, 1 the broker failed, 2 bad input,
nothing written).
"""

from __future__ import annotations

import time
from pathlib import Path
from types import ModuleType

import numpy as np
import orjson
from confluent_kafka import KafkaException

from stream_worker.cameras.drawing import draw_settings
from stream_worker.cameras.files import load_settings_file
from stream_worker.cameras.records import encode_removal, encode_settings, validate_camera_id
from stream_worker.cameras.store import CAMERAS, STATUSES, CamerasSnapshot
from stream_worker.contracts.cameras import (
    CameraSettings,
    CameraSettingsError,
    detector_scales_text,
    parse_detector_scales,
)
from stream_worker.contracts.credentials import shown
from stream_worker.contracts.plate_formats import known_regions
from stream_worker.media import MediaSupportMissing, opencv
from stream_worker.service.options import Connection
from stream_worker.service.topic_actions import (
    BAD_INPUT,
    BROKER_FAILED,
    OK,
    Echo,
    read_settings_topic,
    remove_from_settings_topic,
    settings_json,
    write_settings_topic,
)

DRAW_SUFFIXES = (".jpg", ".jpeg", ".png")  # `cameras draw`'s output formats, by extension
WHEN_MISSING = "no camera has settings"


def set_settings(
    connection: Connection,
    camera_id: str,
    path: Path | None,
    out: Echo,
    err: Echo,
    region: str | None = None,
    detector_scales: str | None = None,
) -> int:
    """Check the file whole, then store it as the camera's settings (replacing any it had). `region`
    and `detector_scales` (as typed: `1.0,0.5,3.0`, or `default` to clear them): over the file's,
    or, without a file, over its stored settings (the rest kept as they are)."""
    camera_id = _valid_camera_id(camera_id, err)
    if camera_id is None:
        return BAD_INPUT
    if path is None and region is None and detector_scales is None:
        err(
            "error: give the settings with --file FILE, or alone the region with --region REGION "
            "and/or the detector scales with --detector-scales SCALES"
        )
        return BAD_INPUT
    if region is not None and region not in known_regions():
        err(f"error: unknown region {region!r}: one of {', '.join(sorted(known_regions()))}; nothing written")
        return BAD_INPUT
    changes: dict[str, object] = {} if region is None else {"region": region}
    if detector_scales is not None:
        try:
            changes["detector_scales"] = parse_detector_scales(detector_scales)
        except ValueError as error:
            err(f"error: --detector-scales {error}; nothing written")
            return BAD_INPUT
    if path is not None:
        settings = _load_file(path, err)
        if settings is None:
            return BAD_INPUT
    else:
        snapshot = _read(connection, err)
        if snapshot is None:
            return BROKER_FAILED
        settings = snapshot.values.get(camera_id) or CameraSettings()
    settings = settings.model_copy(update=changes)  # each change checked above by the contract's own field
    status = write_settings_topic(connection, CAMERAS, [encode_settings(camera_id, settings)], err)
    if status == OK:
        out(f"set {camera_id}: {summary(settings)}")
    return status


def get_settings(connection: Connection, camera_id: str, out: Echo, err: Echo) -> int:
    """Print the camera's settings as JSON (a file `set` takes back); the defaults when it has none."""
    snapshot = _read(connection, err)
    if snapshot is None:
        return BROKER_FAILED
    settings = snapshot.values.get(camera_id)
    if settings is None:
        err(f"note: camera {camera_id!r} has no settings: it uses the defaults")
        settings = CameraSettings()
    out(settings_json(settings))
    return OK


def list_settings(
    connection: Connection, as_json: bool, out: Echo, err: Echo, status_topic: str | None = None
) -> int:
    """Every camera with settings, by id: a table (with each camera's state from `status_topic`),
    or one JSON object per line."""
    snapshot = _read(connection, err)
    if snapshot is None:
        return BROKER_FAILED
    cameras = sorted(snapshot.values.items())
    if as_json:
        for camera_id, settings in cameras:
            out(orjson.dumps({"camera_id": camera_id, "settings": settings.model_dump(mode="json")}).decode())
    elif cameras:
        states = _states(connection, status_topic, err) if status_topic else {}
        for line in settings_table(cameras, states):
            out(line)
    else:
        err(f"no camera has settings on {connection.topic}")
    return OK


def settings_table(cameras: list[tuple[str, CameraSettings]], states: dict[str, str]) -> list[str]:
    """The table of `cameras list`: columns as wide as their widest cell, the display name last."""
    rows = [
        ("CAMERA", "STATE", "REGION", "SITE", "MASKS", "ZONES", "MIN_WIDTH", "PICTURES", "SCALES", "SOURCE")
    ]
    names = ["DISPLAY_NAME"]
    for camera_id, settings in cameras:
        rows.append(
            (
                camera_id,
                states.get(camera_id, "-"),
                settings.region or "-",
                f"{settings.site.name}:{settings.site.role.value}" if settings.site else "-",
                str(len(settings.masks)),
                ",".join(zone.name for zone in settings.zones) or "-",
                "-" if settings.min_plate_width is None else str(settings.min_plate_width),
                "yes" if settings.plate_images else "no",
                detector_scales_text(settings.detector_scales) if settings.detector_scales else "-",
                shown(settings.source.url) if settings.source is not None else "-",
            )
        )
        names.append(settings.display_name or "")
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        + (f"  {name}" if name else "")
        for row, name in zip(rows, names, strict=True)
    ]


def _states(connection: Connection, status_topic: str, err: Echo) -> dict[str, str]:
    """Each camera's state as its connector last reported it; none when the topic cannot be read."""
    from stream_worker.cameras.status import STATUS_INTERVAL_S, STATUS_WINDOW_S, is_stale
    from stream_worker.service.compacted import CompactedTopicError

    try:  # the last window alone: a running connector rewrites each camera's status within it
        snapshot = STATUSES.read(
            connection.bootstrap_servers,
            status_topic,
            connection.config,
            connection.timeout_s,
            since_s=STATUS_WINDOW_S,
        )
    except (CompactedTopicError, KafkaException) as error:
        err(f"warning: the cameras' states are not shown: {error}")
        return {}
    now = time.time()
    return {
        camera_id: status.state + (" (stale)" if is_stale(status, STATUS_INTERVAL_S, now) else "")
        for camera_id, status in snapshot.values.items()
    }


def remove(connection: Connection, camera_id: str, out: Echo, err: Echo) -> int:
    """Write the camera's tombstone (back to the defaults), unless it has no settings."""
    camera_id = _valid_camera_id(camera_id, err)
    if camera_id is None:
        return BAD_INPUT
    return remove_from_settings_topic(
        connection,
        CAMERAS,
        camera_id,
        [encode_removal(camera_id)],
        when_missing=WHEN_MISSING,
        absent=f"{camera_id} has no settings",
        removed=lambda _settings: f"removed the settings of {camera_id}: back to the defaults",
        out=out,
        err=err,
    )


def draw(
    image_path: Path,
    out_path: Path,
    file: Path | None,
    camera_id: str | None,
    connection: Connection,
    out: Echo,
    err: Echo,
) -> int:
    """Write a copy of the image with the masks and zones of a settings file or of a camera's
    stored settings drawn over it; everything local is checked before the broker is asked."""
    if (file is None) == (camera_id is None):
        err("error: give the settings with either --file FILE or --camera CAMERA (one of them)")
        return BAD_INPUT
    suffix = out_path.suffix.lower()
    if suffix not in DRAW_SUFFIXES:
        err(f"error: {out_path}: the output must end in {', '.join(DRAW_SUFFIXES)} (its format)")
        return BAD_INPUT
    try:
        cv2 = opencv("cameras draw")
    except MediaSupportMissing as error:
        err(f"error: {error}")
        return BAD_INPUT
    image = _read_image(cv2, image_path, err)
    if image is None:
        return BAD_INPUT
    if file is not None:
        settings = _load_file(file, err)
        if settings is None:
            return BAD_INPUT
        source = str(file)
    else:
        assert camera_id is not None
        camera_id = _valid_camera_id(camera_id, err)
        if camera_id is None:
            return BAD_INPUT
        snapshot = _read(connection, err)
        if snapshot is None:
            return BROKER_FAILED
        stored = snapshot.values.get(camera_id)
        if stored is None:
            err(f"note: camera {camera_id!r} has no settings: nothing to draw, the copy is the image as is")
        settings = stored or CameraSettings()
        source = f"camera {camera_id}"
    try:
        canvas = draw_settings(image, settings)
    except ValueError as error:
        err(f"error: cannot draw on {image_path}: {error}")
        return BAD_INPUT
    encoded, data = cv2.imencode(suffix, canvas)
    if not encoded:
        err(f"error: cannot encode the drawing as {suffix}")
        return BAD_INPUT
    try:
        out_path.write_bytes(data.tobytes())
    except OSError as error:
        err(f"error: cannot write {out_path}: {error.strerror or error}")
        return BAD_INPUT
    height, width = canvas.shape[:2]
    zones = ", ".join(zone.name for zone in settings.zones)
    out(
        f"wrote {out_path} ({width}x{height}): {len(settings.masks)} mask(s), "
        f"{len(settings.zones)} zone(s)" + (f" ({zones})" if zones else "") + f" of {source}"
    )
    return OK


def _read_image(cv2: ModuleType, path: Path, err: Echo) -> np.ndarray | None:
    """The decoded image as stored (grayscale and alpha kept, `draw_settings` converts them)."""
    try:
        data = path.read_bytes()
    except OSError as error:
        err(f"error: cannot read image {path}: {error.strerror or error}")
        return None
    image = cv2.imdecode(np.frombuffer(data, dtype=np.uint8), cv2.IMREAD_UNCHANGED) if data else None
    if image is None:
        err(f"error: cannot decode image {path}: not an image OpenCV reads (JPEG, PNG, ...)")
        return None
    return image


def summary(settings: CameraSettings) -> str:
    """The settings in a few words, for a command's confirmation."""
    zones = ", ".join(zone.name for zone in settings.zones)
    parts = [
        f"{len(settings.masks)} mask(s)",
        f"{len(settings.zones)} zone(s)" + (f" ({zones})" if zones else ""),
        "no minimum plate width"
        if settings.min_plate_width is None
        else f"min plate width {settings.min_plate_width} px",
        f"plate pictures {'on' if settings.plate_images else 'off'}",
    ]
    if settings.region is not None:  # without one: the words of before regions
        parts.append(f"region {settings.region}")
    if settings.site is not None:
        parts.append(f"{settings.site.role.value} of site {settings.site.name}")
    if settings.detector_scales is not None:
        parts.append(f"detector scales {detector_scales_text(settings.detector_scales)}")
    return ", ".join(parts)


def _valid_camera_id(camera_id: str, err: Echo) -> str | None:
    """The camera id as stored, or None once the reason it is refused is reported."""
    try:
        return validate_camera_id(camera_id)
    except ValueError as error:
        err(f"error: {error}")
        return None


def _load_file(path: Path, err: Echo) -> CameraSettings | None:
    """The file's settings, or None once every problem is reported (shared by `set` and `draw`,
    so that `draw` checks a file exactly as `set` would)."""
    try:
        return load_settings_file(path)
    except CameraSettingsError as error:
        err(f"error: {path} refused, nothing written ({len(error.problems)} problem(s)):")
        for problem in error.problems:
            err(f"  {problem}")
        return None
    except ValueError as error:
        err(f"error: {error}")
        return None


def _read(connection: Connection, err: Echo) -> CamerasSnapshot | None:
    return read_settings_topic(connection, CAMERAS, WHEN_MISSING, err)
