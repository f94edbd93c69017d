"""The second recognizer end to end on the real local Triton: `global_ocr` batched, and
`plate_recognition` reading each frame with the recognizers it asks for (`plate_recognizers`),
frames that are plate crops (`frame_is_plate`), and requests without them answered by LPRNet alone."""

from __future__ import annotations

import csv
from concurrent.futures import ThreadPoolExecutor

import cv2
import numpy as np
import pytest
import tritonclient.grpc as grpcclient

from stream_worker.triton_client import OUTPUT_NAMES, PlateRecognitionClient
from tests.conftest import weights_dir
from tests.model_repository.test_pipeline import _statistics, character_confidences

pytestmark = pytest.mark.integration

GLOBAL_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_"
US_CROPS = weights_dir().parent / "plates-world" / "us-crops"


def infer(
    url: str, frames: list[bytes], recognizers: list[bytes] | None = None, is_plate: list[bool] | None = None
) -> dict[str, np.ndarray]:
    """`plate_recognition` through tritonclient directly, sending exactly the inputs given."""
    images = grpcclient.InferInput("images", [len(frames)], "BYTES")
    images.set_data_from_numpy(np.array(frames, dtype=np.object_))
    inputs = [images]
    if recognizers is not None:
        names = grpcclient.InferInput("plate_recognizers", [len(recognizers)], "BYTES")
        names.set_data_from_numpy(np.array(recognizers, dtype=np.object_))
        inputs.append(names)
    if is_plate is not None:
        flags = grpcclient.InferInput("frame_is_plate", [len(is_plate)], "BOOL")
        flags.set_data_from_numpy(np.array(is_plate, dtype=np.bool_))
        inputs.append(flags)
    result = grpcclient.InferenceServerClient(url).infer("plate_recognition", inputs, client_timeout=300)
    return {name: result.as_numpy(name) for name in OUTPUT_NAMES}


def argmax_text(probabilities: np.ndarray) -> str:
    return "".join(GLOBAL_ALPHABET[i] for i in probabilities.argmax(axis=1)).replace("_", "")


def us_crops(count: int) -> list[tuple[bytes, str]]:
    """The first `count` labelled US plate crops, as JPEGs (the model takes JPEG frames)."""
    with (US_CROPS / "labels.csv").open() as labels:
        rows = list(csv.DictReader(labels))[:count]
    return [
        (
            cv2.imencode(".jpg", cv2.imread(str(US_CROPS / row["file"])), [cv2.IMWRITE_JPEG_QUALITY, 95])[
                1
            ].tobytes(),
            row["plate"],
        )
        for row in rows
    ]


def _counts(url: str, models: tuple[str, ...]) -> dict[str, tuple[int, int]]:
    """(requests, inferences) so far per model."""
    counts = {}
    for model in models:
        requests, _, inferences, _ = _statistics(url, model)
        counts[model] = (requests, inferences)
    return counts


def _since(url: str, before: dict[str, tuple[int, int]]) -> dict[str, tuple[int, int]]:
    now = _counts(url, tuple(before))
    return {model: (now[model][0] - before[model][0], now[model][1] - before[model][1]) for model in before}


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    """Byte for byte (BYTES outputs element by element)."""
    if a.dtype == object or b.dtype == object:
        return a.shape == b.shape and a.tolist() == b.tolist()
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def test_old_requests_get_todays_answer_whatever_the_default_is_spelt(
    triton_url: str, car_jpeg: bytes, frames
) -> None:
    """No `plate_recognizers` input, b"" and b"lprnet" answer alike: LPRNet's reading (checked against
    STN + LPRNet called directly) and its probabilities; no global probabilities."""
    old = infer(triton_url, [car_jpeg])
    for spelt in ([b""], [b"lprnet"], [b" lprnet "]):
        again = infer(triton_url, [car_jpeg], spelt)
        for name in OUTPUT_NAMES:
            assert _same(again[name], old[name]), name
    text, characters = character_confidences(triton_url, frames, car_jpeg, old["plate_corners"][0])
    assert old["plate_text"].tolist() == [text.encode()]
    assert old["plate_character_confidences"].tolist() == pytest.approx(characters, abs=1e-6)
    assert old["plate_recognizers"].tolist() == [b"lprnet"]
    probabilities = old["plate_lprnet_probs"][0]
    assert probabilities.shape == (18, 23) and np.allclose(probabilities.sum(axis=1), 1, atol=1e-5)
    assert not old["plate_global_probs"].any()


def test_a_global_frame_is_read_by_global_ocr_alone(
    triton_url: str, car_jpeg: bytes, cat_jpeg: bytes
) -> None:
    """Frames asking for `global` go as one global_ocr request and never reach STN or LPRNet; the
    text is the CCT's argmax (the Russian plate's letters are Latin look-alikes)."""
    models = ("stn", "lprnet", "global_ocr")
    before = _counts(triton_url, models)
    result = infer(triton_url, [car_jpeg, cat_jpeg, car_jpeg], [b"global"] * 3)
    _statistics(triton_url, "global_ocr", at_least=before["global_ocr"][0] + 1)
    assert _since(triton_url, before) == {
        "stn": (0, 0),
        "lprnet": (0, 0),
        "global_ocr": (1, 2),
    }
    assert result["plate_frame"].tolist() == [0, 2]
    assert result["plate_recognizers"].tolist() == [b"global", b"global"]
    assert not result["plate_lprnet_probs"].any()
    probabilities = result["plate_global_probs"]
    assert probabilities.shape == (2, 9, 37) and np.allclose(probabilities.sum(axis=2), 1, atol=1e-4)
    texts = [t.decode() for t in result["plate_text"]]
    print("global_ocr reads car.jpg as", texts, "confidence", result["plate_confidence"].tolist())
    assert texts[0] == texts[1] == argmax_text(probabilities[0])
    assert texts[0]  # the van's plate is 36x12 pixels: what it reads is the CCT's business
    slots = probabilities[0].max(axis=1)[probabilities[0].argmax(axis=1) != 36]
    assert result["plate_character_confidences"][: len(texts[0])].tolist() == pytest.approx(slots.tolist())
    assert result["plate_confidence"][0] == pytest.approx(slots.min())


def test_both_recognizers_read_a_frame_that_asks_for_both(triton_url: str, car_jpeg: bytes) -> None:
    old = infer(triton_url, [car_jpeg])
    global_only = infer(triton_url, [car_jpeg], [b"global"])
    both = infer(triton_url, [car_jpeg, car_jpeg], [b"global,lprnet", b""])
    assert both["plate_recognizers"].tolist() == [b"lprnet,global", b"lprnet"]
    assert both["plate_text"].tolist() == old["plate_text"].tolist() * 2  # LPRNet's text when it ran
    np.testing.assert_allclose(
        both["plate_lprnet_probs"], np.repeat(old["plate_lprnet_probs"], 2, axis=0), atol=1e-6
    )
    np.testing.assert_allclose(both["plate_global_probs"][0], global_only["plate_global_probs"][0], atol=1e-6)
    assert not both["plate_global_probs"][1].any()


def test_the_client_parses_what_each_recognizer_read(triton_url: str, car_jpeg: bytes) -> None:
    with PlateRecognitionClient(triton_url) as client:
        default, global_only, both = client.recognize(
            [car_jpeg] * 3, recognizers=[(), "global", ("global", "lprnet")]
        )
        [today] = client.recognize([car_jpeg])
    # LPRNet read frames 0 and 2 in one batch: the same plate, the same numbers
    assert default.plates[0].text == both.plates[0].text
    np.testing.assert_array_equal(default.plates[0].lprnet_probs, both.plates[0].lprnet_probs)
    assert default.plates[0].box == pytest.approx(today.plates[0].box, abs=1e-3)
    [plate] = today.plates
    assert plate.recognizers == ("lprnet",) and plate.global_probs is None
    assert plate.lprnet_probs.shape == (18, 23)
    assert global_only.plates[0].recognizers == ("global",) and global_only.plates[0].lprnet_probs is None
    assert global_only.plates[0].global_probs.shape == (9, 37)
    assert both.plates[0].recognizers == ("lprnet", "global")


def test_a_frame_that_is_a_plate_is_read_whole(triton_url: str, car_jpeg: bytes) -> None:
    crops = us_crops(8)
    frames = [data for data, _ in crops]
    models = ("plate_detector", "global_ocr")
    before = _counts(triton_url, models)
    result = infer(triton_url, [*frames, car_jpeg], [b"global"] * 9, [True] * 8 + [False])
    _statistics(triton_url, "global_ocr", at_least=before["global_ocr"][0] + 1)
    counts = _since(triton_url, before)
    assert counts["global_ocr"] == (1, 9)
    assert counts["plate_detector"][1] == 2  # the scene alone, at its two scales
    assert result["plate_frame"].tolist() == list(range(9))
    for i, data in enumerate(frames):
        height, width = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR).shape[:2]
        assert result["plate_box"][i].tolist() == [0, 0, width, height]
        assert result["plate_corners"][i].tolist() == [[0, 0], [width, 0], [width, height], [0, height]]
    assert result["plate_detection_score"][:8].tolist() == [1.0] * 8
    assert result["plate_layout"][:8].tolist() == [b"single_row"] * 8
    read = [t.decode() for t in result["plate_text"][:8]]
    print("US crops read", list(zip(read, [text for _, text in crops], strict=True)))
    assert sum(r == text for r, (_, text) in zip(read, crops, strict=True)) >= 6


def test_a_bad_recognizer_value_fails_the_request_with_the_reason(triton_url: str, car_jpeg: bytes) -> None:
    with pytest.raises(
        Exception, match=r"plate_recognizers: frame 1 asks for 'lprnet,eu'; .* lprnet, global"
    ):
        infer(triton_url, [car_jpeg, car_jpeg], [b"global", b"lprnet,eu"])
    with pytest.raises(Exception, match=r"plate_recognizers: frame 0 asks for 'lprnet,'"):
        infer(triton_url, [car_jpeg], [b"lprnet,"])
    with pytest.raises(Exception, match="plate_recognizers has 1 values for 2 frames"):
        infer(triton_url, [car_jpeg, car_jpeg], [b"global"])
    with pytest.raises(Exception, match="frame_is_plate has 2 values for 1 frames"):
        infer(triton_url, [car_jpeg], None, [True, False])


def test_global_ocr_batches_concurrent_requests(triton_url: str) -> None:
    """8 clients each sending one crop at a time: executions of size > 1 merged requests."""
    crop = grpcclient.InferInput("input", [1, 64, 128, 3], "UINT8")
    crop.set_data_from_numpy(np.full((1, 64, 128, 3), 200, np.uint8))

    def client(_: int) -> None:
        connection = grpcclient.InferenceServerClient(triton_url)
        for _ in range(20):
            assert connection.infer("global_ocr", [crop]).as_numpy("probabilities").shape == (1, 9, 37)

    requests_before, executions_before, inferences_before, _ = _statistics(triton_url, "global_ocr")
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(client, range(8)))
    requests, executions, inferences, sizes = _statistics(
        triton_url, "global_ocr", at_least=requests_before + 160
    )
    print(
        f"global_ocr: {requests - requests_before} requests in "
        f"{executions - executions_before} executions; {sizes}"
    )
    assert requests - requests_before == inferences - inferences_before == 160
    assert executions - executions_before < inferences - inferences_before
