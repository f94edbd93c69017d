"""End to end through the real broker, the real Triton, `stream-worker run` and `stream-worker
sightings`: labelled photos of ../shared/evalset/scenes made into short vehicle passes (scale and
position drift, blur, noise, JPEG) give one sighting per pass, with the labelled text.

The benchmark (`stream-worker bench sightings`) runs the same thing over every photo; this is the
small version that keeps it from rotting.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import cv2
import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench.passes import make_pass  # noqa: E402
from bench.sightings import plan, run_passes  # noqa: E402
from bench.sightings_score import score  # noqa: E402
from stream_worker.contracts import Direction, PlateSighting  # noqa: E402
from stream_worker.evaluation.labels import load_labels  # noqa: E402

pytestmark = pytest.mark.integration

SCENES = (
    Path(os.environ.get("LPR_WEIGHTS_DIR", REPO_ROOT.parent / "shared" / "weights")).parent
    / "evalset"
    / "scenes"
)
# Photos whose plate every frame of the benchmark's passes read (the test is about the pipeline,
# not about hard photos), one pass of each kind but one.
PHOTOS = {
    "dstaroff_ru_061.jpg": Direction.APPROACHING,
    "dstaroff_ru_093.jpg": Direction.RECEDING,
    "dstaroff_ru_130.jpg": Direction.LEFT,
}
FRAMES = 6
FPS = 10.0


def test_photos_made_into_passes_give_one_exact_sighting_each(kafka_bootstrap, triton_url):
    labels = load_labels(SCENES)
    passes = [
        make_pass(
            cv2.imread(str(SCENES / name)), name, labels[name].texts, labels[name].boxes, kind, FRAMES, n
        )
        for n, (name, kind) in enumerate(PHOTOS.items())
    ]
    planned = plan(passes, cameras=2, fps=FPS, start_ms=int(time.time() * 1000))
    outputs = run_passes(kafka_bootstrap, triton_url, planned, FPS, partitions=3, timeout_s=900)

    figures = score(planned, outputs)
    frames, sightings = figures["frames"], figures["sightings"]
    print(f"\nexact per frame: {frames['exact']}/{frames['plates']}", end="; ")
    print(f"per sighting: {sightings['exact']}/{sightings['plates']}")
    texts = sum(text is not None for name in PHOTOS for text in labels[name].texts)
    assert sightings["plates"] == texts
    assert sightings["one_sighting"] == texts  # one sighting per pass and plate, none split or missed
    assert sightings["exact"] == texts
    assert sightings["direction_right"] == texts
    for sighting in outputs.sightings:
        PlateSighting.model_validate(sighting)
    for row in figures["plates"]:
        assert row["reads"] >= FRAMES - 1, row  # the pass's frames were voted together
