"""`stream-worker bench videos`: the real clips through the whole stack, one camera per clip.

Each clip of the folder (default `../shared/videos`, the plate in each file's name: `...-H133OE123.mov`)
is decoded with PyAV, every frame published as a JPEG on its own camera with `captured_at` from the
stream's timestamps, then a blank closing frame; the worker and the sightings service run as in
`bench sightings`. Printed per clip: the sightings published (voted text, reads, whether the text is
a plate of the format), whether one is the labelled plate exactly; and in all: sightings published,
how many are not a plate of the format, clips with an exact sighting.
"""

from __future__ import annotations

import argparse
import contextlib
import re
import sys
import time
from collections.abc import Iterator, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from bench import environment
from bench.report import format_table, write_json
from bench.sightings import (
    BLANK_SIZE,
    PASS_GAP_S,
    REPO_ROOT,
    SightingsBenchError,
    _local_broker,
    _local_triton,
    run_frames,
)
from stream_worker.contracts import PLATE_FORMAT

VIDEO_SUFFIXES = (".mp4", ".mov", ".mkv", ".avi", ".webm")
_FORMAT = re.compile(PLATE_FORMAT)


def default_videos() -> Path:
    from stream_worker.nets.weights import default_weights_dir

    return default_weights_dir().parent / "videos"


def clips(folder: Path) -> list[Path]:
    found = sorted(path for path in folder.iterdir() if path.suffix.lower() in VIDEO_SUFFIXES)
    if not found:
        raise SightingsBenchError(f"no video in {folder}")
    return found


def label_of(clip: Path) -> str:
    """The plate in the clip's name: its last dash-separated part."""
    return clip.stem.rsplit("-", 1)[-1].upper()


def camera_of(clip: Path) -> str:
    return f"video-{clip.stem.lower()}"


def clip_frames(clip: Path, start_ms: int) -> Iterator[tuple[str, str, int, bytes]]:
    """(camera, frame id, captured_at ms, JPEG) of every frame of the clip, by its timestamps."""
    import av

    camera = camera_of(clip)
    with av.open(str(clip)) as container:
        stream = container.streams.video[0]
        base = stream.time_base or Fraction(1, 1000)
        first: int | None = None
        for index, frame in enumerate(container.decode(stream)):
            pts = frame.pts if frame.pts is not None else index
            first = pts if first is None else first
            offset_ms = int(float((pts - first) * base) * 1000) if frame.pts is not None else index * 100
            ok, jpeg = cv2.imencode(".jpg", frame.to_ndarray(format="bgr24"), [cv2.IMWRITE_JPEG_QUALITY, 90])
            if not ok:
                raise SightingsBenchError(f"frame {index} of {clip.name} could not be encoded")
            yield camera, f"{camera}#{index}", start_ms + offset_ms, jpeg.tobytes()


def all_frames(videos: Sequence[Path], start_ms: int) -> Iterator[tuple[str, str, int, bytes]]:
    ok, blank = cv2.imencode(".jpg", np.full((BLANK_SIZE[1], BLANK_SIZE[0], 3), 110, dtype=np.uint8))
    assert ok
    for clip in videos:
        last = start_ms
        for record in clip_frames(clip, start_ms):
            last = record[2]
            yield record
        camera = camera_of(clip)
        yield camera, f"{camera}#end", last + int(PASS_GAP_S * 1000), blank.tobytes()


def score(videos: Sequence[Path], sightings: list[dict[str, Any]]) -> dict[str, Any]:
    rows = []
    for clip in videos:
        label, camera = label_of(clip), camera_of(clip)
        own = sorted((s for s in sightings if s["camera_id"] == camera), key=lambda s: s["first_seen"])
        texts = [s["text"] for s in own]
        rows.append(
            {
                "clip": clip.name,
                "label": label,
                "sightings": len(own),
                "exact": label in texts,
                "not_plates": sum(1 for text in texts if not _FORMAT.match(text)),
                "texts": " ".join(f"{text}({s['reads']})" for text, s in zip(texts, own, strict=True)),
            }
        )
    return {
        "clips": len(rows),
        "clips_exact": sum(row["exact"] for row in rows),
        "sightings": sum(row["sightings"] for row in rows),
        "not_plates": sum(row["not_plates"] for row in rows),
        "rows": rows,
    }


def render(report: dict[str, Any]) -> str:
    lines = [
        f"{report['clips']} clips, {report['frames']} frames, {report['duration_s']} s; load average "
        f"before/after {report['load_average']['before']} / {report['load_average']['after']}",
        "",
        format_table(report["rows"], ["clip", "label", "sightings", "exact", "not_plates", "texts"]),
        "",
        f"clips with an exact sighting {report['clips_exact']}/{report['clips']}; sightings published "
        f"{report['sightings']}, of which not a plate of the format {report['not_plates']}",
    ]
    return "\n".join(lines)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="stream-worker bench videos",
        description=__doc__.split("\n\n")[0] if __doc__ else None,
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        epilog="Example: LPR_WEIGHTS_DIR=../shared/weights stream-worker bench videos --report r.json",
    )
    p.add_argument("--videos", type=Path, default=None, help="Folder of clips (default: ../shared/videos).")
    p.add_argument("--partitions", type=int, default=3, help="Partitions of the benchmark topics.")
    p.add_argument(
        "--sightings-arg",
        action="append",
        default=[],
        help="Extra flag for the sightings service (repeatable, e.g. --sightings-arg=--min-reads=2).",
    )
    p.add_argument("--report", type=Path, default=None, help="Write the JSON report here.")
    p.add_argument("--bootstrap-servers", default=None, help="Use this Kafka instead of the local broker.")
    p.add_argument("--triton-url", default=None, help="Use this Triton instead of starting the local one.")
    p.add_argument("--repository", type=Path, default=REPO_ROOT / "model_repository")
    p.add_argument("--allow-busy", action="store_true", help=environment.ALLOW_BUSY_HELP)
    return p


def main(argv: Sequence[str]) -> int:
    args = parser().parse_args(list(argv))
    if (idle := environment.load_or_refuse(args.allow_busy)) is None:
        return 2
    load_before, busy = idle
    started = time.monotonic()
    try:
        videos = clips(args.videos or default_videos())
        frames = list(all_frames(videos, int(time.time() * 1000)))
        with contextlib.ExitStack() as stack:
            bootstrap = args.bootstrap_servers or _local_broker(stack)
            triton_url = args.triton_url or _local_triton(stack, args.repository)
            outputs = run_frames(
                bootstrap,
                triton_url,
                iter(frames),
                args.partitions,
                sightings_args=args.sightings_arg,
                local_broker=args.bootstrap_servers is None,
            )
    except SightingsBenchError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    report = {
        "scenario": "videos",
        "command": "stream-worker bench videos " + " ".join(argv),
        "duration_s": round(time.monotonic() - started, 1),
        "frames": len(frames),
        "load_average": {"before": load_before, "after": environment.load_average()},
        "busy": busy,
        **score(videos, outputs.sightings),
    }
    print(render(report))
    if args.report:
        write_json(args.report, report)
        print(f"report written to {args.report}")
    return 0
