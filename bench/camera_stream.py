"""A long camera stream for `bench gating`: an H.264 video of vehicle passes between quiet spells.

Made from what ../shared holds and kept only in a temporary folder (never in the repository):
the clips of `videos/` (each played at its own pace) and passes made from the labelled photos of
`evalset/scenes` (bench/passes.py), each letterboxed into a 1920x1080 frame at 25 frames/s, and
between two passes a quiet spell, still but for sensor noise: the gate camera's empty lane, the
first frame of `gate-van-H133OE123.mov` with the tow truck waiting at the far end blurred out
(`QUIET_HIDE`), the same view before every pass, as a fixed camera sees it between vehicles. A real
camera's view weighs what it weighs: a frame of it is about as large a JPEG as a frame of a pass.
(Recipe 2 blurred the next pass's first view beyond reading instead, so a quiet frame weighed 96 KB
against 264 KB for one in view; without that clip, that is still the quiet view.) Passes fill
`in_view_share` of the stream. The plan says where each pass lies in stream time, with its labels.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from fractions import Fraction
from pathlib import Path

import cv2
import numpy as np

from bench.passes import KINDS, Difficulty, make_pass

SIZE = (1920, 1080)
FPS = 25
KEYFRAME_S = 2  # a key frame every 2 s, as IP cameras are usually set
NOISE_SIGMA = 2.0  # grey levels of sensor noise on the still frames
NOISE_FRAMES = 8  # noise patterns cycled (drawing a new 1080p pattern per frame costs more than the rest)
PHOTO_PASS_S = 6.0  # how long a vehicle made from a photo is in view (a gate camera: seconds)
# Easier than bench sightings' passes: this measures what gating costs in reads, not the recognizer.
PHOTO_DIFFICULTY = Difficulty(min_scale=0.6, jpeg_quality=(70, 90), max_blur_px=2, noise_sigma=2.0)
QUIET_CLIP = "gate-van-H133OE123.mov"
QUIET_HIDE = (230, 0, 500, 200)  # x1, y1, x2, y2 in its 1280x960 first frame: the truck waiting
QUIET_BLUR_SIGMA = 25.0
VERSION = 3  # of the recipe: part of the cached file's name


@dataclass(frozen=True)
class PlannedView:
    """One vehicle pass of the stream: its labelled plate texts and where it is in stream time."""

    name: str
    texts: list[str]
    start_s: float
    end_s: float

    def to_json(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True)
class _Scene:
    name: str
    texts: list[str]
    count: int  # frames
    fps: float
    make: Callable[[], list[np.ndarray]]  # its frames, BGR, any size: made only for the scenes used

    @property
    def duration_s(self) -> float:
        return self.count / self.fps


def letterbox(image: np.ndarray, size: tuple[int, int] = SIZE) -> np.ndarray:
    width, height = size
    scale = min(width / image.shape[1], height / image.shape[0])
    resized = cv2.resize(
        image, (round(image.shape[1] * scale), round(image.shape[0] * scale)), interpolation=cv2.INTER_AREA
    )
    canvas = np.zeros((height, width, 3), dtype=np.uint8)
    top, left = (height - resized.shape[0]) // 2, (width - resized.shape[1]) // 2
    canvas[top : top + resized.shape[0], left : left + resized.shape[1]] = resized
    return canvas


def empty_lane(videos: Path) -> np.ndarray | None:
    """The quiet view (see the module), or None without its clip."""
    import av

    path = videos / QUIET_CLIP
    if not path.exists():
        return None
    with av.open(str(path)) as container:
        first = next(container.decode(video=0)).to_ndarray(format="bgr24")
    x1, y1, x2, y2 = QUIET_HIDE
    region = np.zeros(first.shape[:2], np.float32)
    region[y1:y2, x1:x2] = 1.0
    region = cv2.GaussianBlur(region, (0, 0), 8.0)[..., None]  # a soft edge, not a rectangle
    blurred = cv2.GaussianBlur(first, (0, 0), QUIET_BLUR_SIGMA).astype(np.float32)
    return np.clip(region * blurred + (1.0 - region) * first.astype(np.float32), 0, 255).astype(np.uint8)


def clip_scenes(videos: Path) -> list[_Scene]:
    import av

    scenes = []
    for path in sorted(videos.iterdir()):
        if path.suffix.lower() not in (".mp4", ".mov", ".mkv", ".avi", ".webm"):
            continue
        with av.open(str(path)) as container:
            stream = container.streams.video[0]
            rate = float(stream.average_rate or 25)
            frames = [frame.to_ndarray(format="bgr24") for frame in container.decode(stream)]
        label = path.stem.rsplit("-", 1)[-1].upper()
        scenes.append(_Scene(f"video:{path.name}", [label], len(frames), rate, lambda f=frames: f))
    return scenes


def photo_scenes(scenes_dir: Path, seed: int) -> list[_Scene]:
    from stream_worker.evaluation.labels import ImageLabel, load_labels

    frames = round(PHOTO_PASS_S * FPS)
    found = []
    for number, (name, label) in enumerate(sorted(load_labels(scenes_dir).items())):
        texts = [text for text in label.texts if text]
        if label.boxes is None or not texts:
            continue

        def make(name: str = name, label: ImageLabel = label, number: int = number) -> list[np.ndarray]:
            image = cv2.imread(str(scenes_dir / name), cv2.IMREAD_COLOR)
            kind = KINDS[number % len(KINDS)]
            made = make_pass(
                image, name, label.texts, label.boxes or [], kind, frames, seed + number, PHOTO_DIFFICULTY
            )
            return [cv2.imdecode(np.frombuffer(f.jpeg, np.uint8), cv2.IMREAD_COLOR) for f in made.frames]

        found.append(_Scene(f"photo:{name}", texts, frames, FPS, make))
    random.Random(seed).shuffle(found)
    return found


def plan_scenes(
    clips: Sequence[_Scene], photos: Sequence[_Scene], total_s: float, share: float
) -> list[_Scene]:
    """The clips, then photo passes, until vehicles fill `share` of `total_s` (photos repeat if need be)."""
    chosen: list[_Scene] = []
    in_view = 0.0
    pool = list(clips) + list(photos)
    index = 0
    while in_view < share * total_s and pool:
        scene = pool[index % len(pool)]
        chosen.append(scene)
        in_view += scene.duration_s
        index += 1
    return chosen


def _frames(
    scenes: Sequence[_Scene], total_s: float, seed: int, quiet: np.ndarray | None = None
) -> Iterator[tuple[np.ndarray, PlannedView | None]]:
    """Every 25 fps frame of the stream; with the first frame of each pass, its planned view."""
    rng = np.random.default_rng(seed)
    noise = [rng.normal(0, NOISE_SIGMA, (SIZE[1], SIZE[0], 3)).astype(np.int16) for _ in range(NOISE_FRAMES)]
    quiet_total = total_s - sum(scene.duration_s for scene in scenes)
    quiet_each = max(1.0, quiet_total / max(1, len(scenes)))
    frame_number = 0
    lane = None if quiet is None else letterbox(quiet).astype(np.int16)
    for scene in scenes:
        boxed = [letterbox(frame) for frame in scene.make()]
        still = (
            cv2.GaussianBlur(boxed[0], (0, 0), QUIET_BLUR_SIGMA).astype(np.int16) if lane is None else lane
        )
        for _ in range(round(quiet_each * FPS)):
            yield np.clip(still + noise[frame_number % NOISE_FRAMES], 0, 255).astype(np.uint8), None
            frame_number += 1
        start_s = frame_number / FPS
        count = round(scene.duration_s * FPS)
        view = PlannedView(scene.name, scene.texts, start_s, start_s + count / FPS)
        for k in range(count):
            # Each source frame shown for as long as it lasts at the clip's own pace.
            yield boxed[min(len(boxed) - 1, int(k * scene.fps / FPS))], view if k == 0 else None
            frame_number += 1


def build(
    path: Path, videos: Path, scenes_dir: Path, minutes: float, share: float, seed: int
) -> list[PlannedView]:
    """Write the stream to `path` (H.264 in MP4); its planned views."""
    import av

    total_s = minutes * 60
    scenes = plan_scenes(clip_scenes(videos), photo_scenes(scenes_dir, seed), total_s, share)
    views = []
    with av.open(str(path), "w") as container:
        stream = container.add_stream("libx264", rate=FPS)
        stream.width, stream.height = SIZE
        stream.pix_fmt = "yuv420p"
        stream.time_base = Fraction(1, FPS)
        stream.options = {"preset": "ultrafast", "crf": "23", "g": str(KEYFRAME_S * FPS), "bf": "0"}
        for number, (image, view) in enumerate(_frames(scenes, total_s, seed, empty_lane(videos))):
            if view is not None:
                views.append(view)
            frame = av.VideoFrame.from_ndarray(image, format="bgr24")
            frame.pts = number
            container.mux(stream.encode(frame))
        container.mux(stream.encode(None))
    return views
