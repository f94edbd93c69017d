"""`stream-worker demo` (cli.py adds the command to the root app). The body imports app.py, and
through it the Kafka client and the launchers, only when it runs.
"""

from __future__ import annotations

from pathlib import Path

import typer

from stream_worker.service.options import REPOSITORY_OPTION, TRITON_URL_OPTION, WEIGHTS_DIR_OPTION

commands = typer.Typer()  # this package's commands; cli.py adds them to the root app


# --- demo --------------------------------------------------------------------------
@commands.command(
    epilog=(
        "Examples:\n\n"
        "  LPR_WEIGHTS_DIR=../shared/weights stream-worker demo\n\n"
        "  stream-worker demo photos/ --cameras 6 --fps 5 --duration 30\n\n"
        "  stream-worker demo --video-camera gate.mp4 --video-camera street.mkv\n\n"
        "  stream-worker demo clip.mp4 --bootstrap-servers kafka:9092 --triton-url triton:8001\n\n"
        "Exit codes: 0 every frame published came back as an event or a dead letter, 1 a server or "
        "the worker failed or frames went unaccounted for, 2 nothing to publish, an unusable path, "
        "or missing/corrupt weights, 130 interrupted (Ctrl-C; 143 SIGTERM)."
    )
)
def demo(
    inputs: list[Path] = typer.Argument(
        None,
        help="JPEG files, folders of JPEGs or videos to publish "
        "(default: the JPEGs in $LPR_WEIGHTS_DIR/../samples).",
        show_default=False,
    ),
    cameras: int = typer.Option(3, "--cameras", min=1, max=100, help="Simulated cameras publishing."),
    fps: float = typer.Option(1.0, "--fps", min=0.1, max=1000.0, help="Frames per second per camera."),
    duration: float = typer.Option(10.0, "--duration", min=0.1, help="Seconds each camera publishes."),
    corrupt_frames: int = typer.Option(
        1, "--corrupt-frames", min=0, help="Undecodable frames cam-1 sends, to show the dead-letter topic."
    ),
    bootstrap_servers: str | None = typer.Option(
        None,
        "--bootstrap-servers",
        help="Use this Kafka (run-specific topics, deleted afterwards) instead of starting the local broker.",
        show_default=False,
    ),
    triton_url: str | None = TRITON_URL_OPTION,
    weights_dir: Path | None = WEIGHTS_DIR_OPTION,
    repository: Path = REPOSITORY_OPTION,
    plate_images: Path | None = typer.Option(
        None,
        "--plate-images",
        help="Folder for the plate pictures of the events and sightings "
        "(default: a new folder per run under the system's temporary folder, the 5 newest kept; "
        "the summary names it).",
        show_default=False,
    ),
    video_cameras: list[Path] = typer.Option(
        None,
        "--video-camera",
        help="A video file read in a loop by the camera connector (stream-worker connect) as one more "
        "camera, video-1, video-2, ... (repeatable; default: the longest clip in $LPR_WEIGHTS_DIR/../videos, "
        "if any).",
        show_default=False,
    ),
    no_video_camera: bool = typer.Option(
        False, "--no-video-camera", help="No video camera: the camera connector is not started."
    ),
) -> None:
    """Run the whole pipeline on this machine and show the plate events live.

    Starts what is not given (local Kafka broker, models, local Triton) and a worker.

    Simulated cameras publish the frames and, when there is a video, the camera connector reads it in
    a loop as one more camera; each event and dead letter is printed, then a summary.

    Everything the demo starts is stopped when it ends, fails, or gets Ctrl-C or SIGTERM.
    """
    from stream_worker.demo.app import DemoOptions, run_demo

    options = DemoOptions(
        inputs=inputs or (),
        cameras=cameras,
        fps=fps,
        duration_s=duration,
        corrupt_frames=corrupt_frames,
        bootstrap_servers=bootstrap_servers,
        triton_url=triton_url,
        weights_dir=weights_dir,
        repository=repository,
        plate_images=plate_images,
        video_cameras=video_cameras or (),
        video_camera=not no_video_camera,
    )
    raise typer.Exit(run_demo(options))
