"""The `stream-worker cameras` group: the Typer layer, which cli.py adds to the root app.

The commands' work is in cameras/actions.py, which imports numpy, the Kafka client and OpenCV's
loader at module level; this module imports only typer and the shared options, and the command
bodies import commands.py only when they run, so `--help` needs none of them.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from stream_worker.contracts import topics
from stream_worker.service.options import SETTINGS_EXIT_CODES, echo_err, topic_command

if TYPE_CHECKING:
    from stream_worker.service.options import Connection

# --- cameras -----------------------------------------------------------------------
cameras_app = typer.Typer(
    help="Manage each camera's settings (masks, zones, minimum plate width, plate pictures), kept on "
    "the compacted topic `cameras`.",
    epilog=(
        "Examples:\n\n"
        "  stream-worker cameras set gate-1 --file gate-1.yaml\n\n"
        "  stream-worker cameras get gate-1\n\n"
        "  stream-worker cameras list --json\n\n"
        "  stream-worker cameras draw frame.jpg --file gate-1.yaml --out gate-1.png"
    ),
    no_args_is_help=True,
)

STATUS_TOPIC = topics.CAMERA_STATUS.name
CAMERAS_TOPIC_OPTION = typer.Option(
    topics.CAMERAS.name,
    "--topic",
    envvar="STREAM_WORKER_CAMERAS_TOPIC",
    help="Compacted camera-settings topic.",
)
cameras_command = topic_command(CAMERAS_TOPIC_OPTION)


@cameras_app.command(
    "set",
    epilog=(
        "Example: stream-worker cameras set gate-1 --file gate-1.yaml\n\n"
        "The file (JSON or YAML) replaces the camera's settings whole: display_name, masks (polygons "
        "of [x, y] points in 0..1), zones ({name, polygon}), min_plate_width (pixels), plate_images "
        "(true/false), region (what plates it sees: ru, us, auto...), detector_scales (a list of "
        "fractions of 640 pixels); see docs/cameras.md. "
        "A bad file is refused whole, each problem named.\n\n"
        "Example: stream-worker cameras set gate-1 --region us  (the region alone, the rest kept)\n\n"
        "Example: stream-worker cameras set dash-1 --detector-scales 1.0,0.5,3.0  (a dash camera's "
        "small, distant plates; --detector-scales default clears them)\n\n" + SETTINGS_EXIT_CODES
    ),
)
@cameras_command
def cameras_set(
    camera: str = typer.Argument(..., help="The camera id, as in the frames' camera_id."),
    file: Path | None = typer.Option(
        None, "--file", "-f", exists=True, dir_okay=False, help="Settings file, JSON or YAML."
    ),
    region: str | None = typer.Option(
        None,
        "--region",
        help="The camera's region (ru, eu, us, br, ar..., auto): over the file's, or alone over the "
        "stored settings. Without one: ru, the Russian recognizer alone.",
    ),
    detector_scales: str | None = typer.Option(
        None,
        "--detector-scales",
        help="The scales the detector sees the camera's frames at, comma-separated fractions of 640 "
        "pixels (1.0,0.5,3.0 for dash cameras), or `default` (Triton's 1.0,0.5): over the file's, or "
        "alone over the stored settings.",
        show_default=False,
    ),
    *,
    connection: Connection,
) -> int:
    """Give a camera the settings of a file (replaces any it had), and/or its region or detector scales."""
    from stream_worker.cameras.actions import set_settings

    return set_settings(connection, camera, file, typer.echo, echo_err, region, detector_scales)


@cameras_app.command(
    "get",
    epilog=(
        "Example: stream-worker cameras get gate-1 > gate-1.json  (a file `set` takes back)\n\n"
        + SETTINGS_EXIT_CODES
    ),
)
@cameras_command
def cameras_get(
    camera: str = typer.Argument(..., help="The camera id."),
    *,
    connection: Connection,
) -> int:
    """Print a camera's settings as JSON (the defaults when it has none)."""
    from stream_worker.cameras.actions import get_settings

    return get_settings(connection, camera, typer.echo, echo_err)


@cameras_app.command(
    "list",
    epilog=(
        "Examples:\n\n  stream-worker cameras list\n\n  stream-worker cameras list --json | jq .camera_id\n\n"
        + SETTINGS_EXIT_CODES
    ),
)
@cameras_command
def cameras_list(
    as_json: bool = typer.Option(False, "--json", help="One {camera_id, settings} JSON object per line."),
    status_topic: str = typer.Option(
        STATUS_TOPIC,
        "--status-topic",
        envvar="STREAM_WORKER_CONNECT_STATUS_TOPIC",
        help="Compacted camera-status topic: each camera's state in the table.",
    ),
    *,
    connection: Connection,
) -> int:
    """Print every camera that has settings, by id, with its state, region and source (its account
    shown as ***); undecodable records are reported on stderr."""
    from stream_worker.cameras.actions import list_settings

    return list_settings(connection, as_json, typer.echo, echo_err, status_topic)


@cameras_app.command(
    "remove",
    epilog=("Example: stream-worker cameras remove gate-1\n\n" + SETTINGS_EXIT_CODES),
)
@cameras_command
def cameras_remove(
    camera: str = typer.Argument(..., help="The camera id."),
    *,
    connection: Connection,
) -> int:
    """Put a camera back to the defaults (writes its tombstone)."""
    from stream_worker.cameras.actions import remove

    return remove(connection, camera, typer.echo, echo_err)


@cameras_app.command(
    "draw",
    epilog=(
        "Examples:\n\n"
        "  stream-worker cameras draw frame.jpg --file gate-1.yaml --out gate-1.png  (check a file "
        "before `set`)\n\n"
        "  stream-worker cameras draw frame.jpg --camera gate-1 --out gate-1.jpg  (what is stored)\n\n"
        "Masks are filled dark red and outlined; each zone is outlined in its own colour with its "
        "name inside near its first point. The image itself is never changed. The file is checked "
        "exactly as `set` checks it.\n\n"
        "Exit codes: 0 written, 1 the broker failed or timed out (--camera), 2 bad input (the "
        "image, the settings file, the camera id or the output; nothing written)."
    ),
)
@cameras_command
def cameras_draw(
    image: Path = typer.Argument(
        ..., exists=True, dir_okay=False, help="A frame of the camera (JPEG, PNG, ...)."
    ),
    out: Path = typer.Option(
        ...,
        "--out",
        "-o",
        dir_okay=False,
        help="Where to write the copy; .jpg/.jpeg or .png chooses the format.",
    ),
    file: Path | None = typer.Option(
        None, "--file", "-f", exists=True, dir_okay=False, help="Settings file (JSON or YAML) to draw."
    ),
    camera: str | None = typer.Option(None, "--camera", "-c", help="Draw this camera's stored settings."),
    *,
    connection: Connection,
) -> int:
    """Draw a camera's masks and zones over a frame, from a settings file or the topic."""
    from stream_worker.cameras.actions import draw

    return draw(image, out, file, camera, connection, typer.echo, echo_err)
