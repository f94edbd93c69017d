"""Per-frame detector scales on the real local Triton (`detector_scales` input): a dash camera's
frame shown at 3.0 as well finds the small, distant plate the default scales miss, and a frame
beside it in the same request is answered as when alone. The frame and its box come from
../shared/plates-world/ro-scenes (skipped without it)."""

from __future__ import annotations

import cv2
import pytest
from support import require

from stream_worker.evaluation.voc import load_voc_labels
from stream_worker.triton_client import PlateRecognitionClient
from tests.conftest import weights_dir

pytestmark = pytest.mark.integration

RO_SCENES = weights_dir().parent / "plates-world" / "ro-scenes"
# A 73x21 plate in a 1280x720 frame: scored 0.00 at scale 1.0, 0.42 at 3.0 (docs/performance.md).
SMALL_PLATE_FRAME = "dayride_type1_001.mp4_t172.jpg"
DASH_CAMERA = (1.0, 0.5, 3.0)


def _overlap(a: tuple[float, ...], b: tuple[float, ...]) -> float:
    width = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    height = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = width * height
    return inter / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter)


def _found(result, box: tuple[float, ...]) -> bool:
    return any(_overlap(plate.box, box) >= 0.3 for plate in result.plates)


def test_a_frame_with_its_own_scales_finds_the_small_plate(triton_url: str, car_jpeg: bytes) -> None:
    require(RO_SCENES.exists(), f"needs {RO_SCENES}")
    (box,) = load_voc_labels(RO_SCENES)[SMALL_PLATE_FRAME].boxes
    # The frame is a PNG named .jpg: sent as a JPEG, as `eval` sends it.
    image = cv2.imread(str(RO_SCENES / SMALL_PLATE_FRAME), cv2.IMREAD_COLOR)
    frame = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, 95])[1].tobytes()
    with PlateRecognitionClient(triton_url) as client:
        (default,) = client.recognize([frame], recognizers=["global"])
        (car_alone,) = client.recognize([car_jpeg])
        dash, car = client.recognize(
            [frame, car_jpeg], recognizers=["global", ""], detector_scales=[DASH_CAMERA, ()]
        )
        with pytest.raises(Exception, match="detector_scales: frame 0: detector_scales must be"):
            client.recognize([frame], detector_scales=[(5.0,)])
    assert not _found(default, box)
    assert _found(dash, box)
    assert car == car_alone
