"""PlateRecognitionClient: output regrouping (pure), error mapping, and calls to the real Triton."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from tritonclient.utils import InferenceServerException

from stream_worker.launchers.ports import free_port
from stream_worker.recognition import FrameResult, Plate
from stream_worker.triton_client import (
    PlateRecognitionClient,
    TritonInferenceError,
    TritonUnavailableError,
    _translate,
    parse_outputs,
    recognizer_names,
)

CAR_BOX = (94.0, 331.0, 132.0, 342.0)


def corners_of(box: tuple[float, float, float, float]) -> tuple[tuple[float, float], ...]:
    x1, y1, x2, y2 = box
    return ((x1, y1), (x2, y1), (x2, y2), (x1, y2))


def outputs(
    frames: list[tuple[bytes, tuple[int, int]]],
    plates: list[tuple[int, tuple[float, float, float, float], bytes, float, float]],
) -> dict[str, np.ndarray]:
    """Arrays shaped as `plate_recognition` sends them (BYTES outputs as object arrays of bytes).

    Each plate's corners are its box's; its characters' confidences are 0.5, 0.75, 1.0, 0.5, ...
    """
    characters = [
        [(0.5, 0.75, 1.0)[i % 3] for i in range(len(p[2].decode(errors="replace")))] for p in plates
    ]
    return {
        "frame_status": np.array([status for status, _ in frames], dtype=np.object_),
        "frame_size": np.array([size for _, size in frames], dtype=np.int32).reshape(-1, 2),
        "frame_masked": np.zeros(len(frames), dtype=np.int32),
        "plate_frame": np.array([p[0] for p in plates], dtype=np.int32),
        "plate_box": np.array([p[1] for p in plates], dtype=np.float32).reshape(-1, 4),
        "plate_corners": np.array([corners_of(p[1]) for p in plates], dtype=np.float32).reshape(-1, 4, 2),
        "plate_text": np.array([p[2] for p in plates], dtype=np.object_),
        "plate_confidence": np.array([p[3] for p in plates], dtype=np.float32),
        "plate_character_confidences": np.array([c for cs in characters for c in cs], dtype=np.float32),
        "plate_detection_score": np.array([p[4] for p in plates], dtype=np.float32),
        "plate_layout": np.array([b"single_row"] * len(plates), dtype=np.object_),
        "plate_image": np.array([b""] * len(plates), dtype=np.object_),
        "plate_lprnet_probs": np.zeros((len(plates), 18, 23), dtype=np.float32),
        "plate_global_probs": np.zeros((len(plates), 9, 37), dtype=np.float32),
        "plate_recognizers": np.array([b"lprnet"] * len(plates), dtype=np.object_),
    }


# --- parse_outputs ----------------------------------------------------------------------------


def test_empty_batch_gives_no_results() -> None:
    assert parse_outputs(outputs([], []), frame_count=0) == []


def test_frames_without_plates_keep_status_and_size() -> None:
    results = parse_outputs(
        outputs([(b"ok", (780, 439)), (b"invalid_image: not a JPEG", (0, 0))], []), frame_count=2
    )
    assert results == [
        FrameResult(status="ok", width=780, height=439, plates=()),
        FrameResult(status="invalid_image: not a JPEG", width=0, height=0, plates=()),
    ]
    assert results[0].ok and not results[1].ok


def test_each_frame_says_how_many_plates_its_masks_dropped() -> None:
    raw = outputs([(b"ok", (780, 439)), (b"ok", (640, 480))], [])
    raw["frame_masked"] = np.array([0, 3], dtype=np.int32)
    assert [r.masked for r in parse_outputs(raw, frame_count=2)] == [0, 3]
    raw["frame_masked"] = np.array([1], dtype=np.int32)
    with pytest.raises(TritonInferenceError, match="1 masked counts for 2 frames"):
        parse_outputs(raw, frame_count=2)


def test_plates_are_regrouped_by_frame_in_order() -> None:
    raw = outputs(
        [(b"ok", (780, 439)), (b"ok", (640, 480)), (b"ok", (100, 50))],
        [
            # Values exact in float32, so they compare equal after the round trip.
            (0, CAR_BOX, b"B840CK197", 0.875, 0.75),
            (2, (1.5, 2.5, 30.0, 12.0), b"A001AA77", 0.5, 0.25),
            (0, (10.0, 20.0, 50.0, 30.0), b"E123KX99", 0.625, 0.5),
        ],
    )
    results = parse_outputs(raw, frame_count=3)
    assert [len(r.plates) for r in results] == [2, 0, 1]
    assert results[0].plates == (
        Plate(
            text="B840CK197",
            confidence=0.875,
            box=CAR_BOX,
            detection_score=0.75,
            corners=corners_of(CAR_BOX),
            character_confidences=(0.5, 0.75, 1.0) * 3,
            layout="single_row",
        ),
        Plate(
            text="E123KX99",
            confidence=0.625,
            box=(10.0, 20.0, 50.0, 30.0),
            detection_score=0.5,
            corners=corners_of((10.0, 20.0, 50.0, 30.0)),
            character_confidences=(0.5, 0.75, 1.0, 0.5, 0.75, 1.0, 0.5, 0.75),
        ),
    )
    assert results[2].plates[0].character_confidences == (0.5, 0.75, 1.0, 0.5, 0.75, 1.0, 0.5, 0.75)
    assert results[2].plates[0].box == (1.5, 2.5, 30.0, 12.0)
    assert all(isinstance(v, float) for v in results[2].plates[0].box)


def test_plate_pictures_ride_with_their_plates_and_are_empty_when_not_asked() -> None:
    raw = outputs([(b"ok", (780, 439))], [(0, CAR_BOX, b"B840CK197", 0.5, 0.5), (0, CAR_BOX, b"X", 0.5, 0.5)])
    raw["plate_image"] = np.array([b"\xff\xd8\xffjpeg", b""], dtype=np.object_)
    (result,) = parse_outputs(raw, frame_count=1)
    assert [plate.image for plate in result.plates] == [b"\xff\xd8\xffjpeg", b""]
    raw["plate_image"] = raw["plate_image"][:1]
    with pytest.raises(TritonInferenceError, match="image 1"):
        parse_outputs(raw, frame_count=1)


def test_each_plate_carries_the_probabilities_of_the_recognizers_that_ran() -> None:
    raw = outputs(
        [(b"ok", (780, 439))],
        [
            (0, CAR_BOX, b"B840CK197", 0.5, 0.5),
            (0, CAR_BOX, b"AB123CD", 0.5, 0.5),
            (0, CAR_BOX, b"X1", 0.5, 0.5),
        ],
    )
    raw["plate_recognizers"] = np.array([b"lprnet", b"global", b"lprnet,global"], dtype=np.object_)
    raw["plate_lprnet_probs"][[0, 2]] = 0.25
    raw["plate_global_probs"][[1, 2]] = 0.5
    (result,) = parse_outputs(raw, frame_count=1)
    assert [p.recognizers for p in result.plates] == [("lprnet",), ("global",), ("lprnet", "global")]
    first, second, both = result.plates
    assert first.global_probs is None and second.lprnet_probs is None
    assert first.lprnet_probs.shape == both.lprnet_probs.shape == (18, 23)
    assert second.global_probs.shape == both.global_probs.shape == (9, 37)
    assert (both.lprnet_probs == 0.25).all() and (both.global_probs == 0.5).all()
    raw["plate_global_probs"] = raw["plate_global_probs"][:2]
    with pytest.raises(TritonInferenceError, match="global probabilities 2"):
        parse_outputs(raw, frame_count=1)


@pytest.mark.parametrize(
    ("value", "names"),
    [
        ("", ("lprnet",)),
        ("lprnet", ("lprnet",)),
        ("global", ("global",)),
        ("global, lprnet", ("lprnet", "global")),
        (("global",), ("global",)),
        (("global", "lprnet"), ("lprnet", "global")),
        ((), ("lprnet",)),
    ],
)
def test_recognizer_names_are_normalised(value, names) -> None:
    assert recognizer_names(value) == names


def test_an_unknown_recognizer_is_refused_before_any_request() -> None:
    with pytest.raises(ValueError, match=r"unknown recognizer\(s\) \['cyrillic'\]"):
        recognizer_names("lprnet,cyrillic")
    with PlateRecognitionClient(f"127.0.0.1:{free_port()}", timeout_s=1.0) as client:
        with pytest.raises(ValueError, match="unknown recognizer"):
            client.recognize([b"x"], recognizers=["eu"])
        with pytest.raises(ValueError, match="2 recognizers values for 1 frames"):
            client.recognize([b"x"], recognizers=["global", "global"])


def test_bytes_are_decoded_as_utf8_and_bad_bytes_do_not_raise() -> None:
    cyrillic = "\u0412840\u0421\u041a197"  # Cyrillic letters, as printed on real plates
    raw = outputs(
        [(b"ok", (1, 1))],
        [(0, CAR_BOX, cyrillic.encode(), 0.5, 0.5), (0, CAR_BOX, b"\xff\xfeX", 0.5, 0.5)],
    )
    (result,) = parse_outputs(raw, frame_count=1)
    assert result.status == "ok"
    assert result.plates[0].text == cyrillic
    assert result.plates[1].text == "\ufffd\ufffdX"


def test_answer_for_fewer_frames_than_sent_is_an_inference_error() -> None:
    with pytest.raises(TritonInferenceError, match=r"1 statuses, .* for 2 frames"):
        parse_outputs(outputs([(b"ok", (1, 1))], []), frame_count=2)


def test_plate_of_a_frame_not_in_the_request_is_an_inference_error() -> None:
    with pytest.raises(TritonInferenceError, match="plate for frame 1"):
        parse_outputs(outputs([(b"ok", (1, 1))], [(1, CAR_BOX, b"X", 0.1, 0.1)]), frame_count=1)


def test_per_plate_outputs_of_different_lengths_are_an_inference_error() -> None:
    raw = outputs([(b"ok", (1, 1))], [(0, CAR_BOX, b"X", 0.1, 0.1)])
    raw["plate_corners"] = np.zeros((0, 4, 2), np.float32)
    with pytest.raises(TritonInferenceError, match="corners 0"):
        parse_outputs(raw, frame_count=1)


def test_character_confidences_not_matching_the_texts_are_an_inference_error() -> None:
    raw = outputs([(b"ok", (1, 1))], [(0, CAR_BOX, b"AB", 0.1, 0.1)])
    raw["plate_character_confidences"] = np.zeros(3, np.float32)
    with pytest.raises(TritonInferenceError, match="3 character confidences for 2 characters"):
        parse_outputs(raw, frame_count=1)


def test_missing_output_is_an_inference_error() -> None:
    raw = outputs([(b"ok", (1, 1))], [])
    raw["plate_text"] = None
    with pytest.raises(TritonInferenceError, match="plate_text"):
        parse_outputs(raw, frame_count=1)


# --- error mapping ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "message"),
    [
        ("StatusCode.UNAVAILABLE", "failed to connect to all addresses"),
        ("StatusCode.DEADLINE_EXCEEDED", "Deadline Exceeded"),
        ("StatusCode.NOT_FOUND", "Request for unknown model: 'plate_recognition' is not found"),
        ("StatusCode.INTERNAL", "Request for unknown model: 'plate_recognition' has no available versions"),
        ("StatusCode.INTERNAL", "Stub process 'plate_recognition_0_0' is not healthy."),
        ("StatusCode.INTERNAL", "Server not ready"),
        ("StatusCode.INTERNAL", "plate_detector failed: Exceeds maximum queue size"),
        ("StatusCode.UNAVAILABLE", "Exceeds maximum queue size"),
    ],
)
def test_server_down_or_model_not_ready_is_unavailable(status: str, message: str) -> None:
    error = _translate(InferenceServerException(msg=message, status=status), "host:1")
    assert isinstance(error, TritonUnavailableError)
    assert message in str(error) and "host:1" in str(error)


def test_other_server_errors_keep_the_servers_message() -> None:
    message = "unexpected shape for input 'images'"
    error = _translate(InferenceServerException(msg=message, status="StatusCode.INVALID_ARGUMENT"), "h:1")
    assert isinstance(error, TritonInferenceError)
    assert message in str(error)


# --- real network -----------------------------------------------------------------------------


def test_closed_port_raises_unavailable_and_is_not_ready() -> None:
    with PlateRecognitionClient(f"127.0.0.1:{free_port()}", timeout_s=10) as client:
        assert client.is_ready() is False
        with pytest.raises(TritonUnavailableError, match=r"127\.0\.0\.1"):
            client.recognize([b"\xff\xd8"])
        with pytest.raises(TritonUnavailableError):
            _ = client.model_version


def test_empty_batch_sends_no_request() -> None:
    with PlateRecognitionClient(f"127.0.0.1:{free_port()}", timeout_s=10) as client:
        assert client.recognize([]) == []


@pytest.mark.integration
def test_recognize_car_and_cat_in_one_request(triton_url: str, car_jpeg: bytes, cat_jpeg: bytes) -> None:
    with PlateRecognitionClient(triton_url, timeout_s=120) as client:
        assert client.is_ready()
        car, bad, cat = client.recognize([car_jpeg, b"not a jpeg", cat_jpeg])
        assert client.model_version == "1"
    assert (car.status, car.width, car.height, len(car.plates)) == ("ok", 780, 439, 1)
    [plate] = car.plates
    assert len(plate.corners) == 4 and len(plate.character_confidences) == len(plate.text)
    assert plate.confidence == pytest.approx(min(plate.character_confidences))
    assert plate.layout == "single_row"
    assert bad.status.startswith("invalid_image") and bad.plates == ()
    assert (cat.status, cat.plates) == ("ok", ())


@pytest.mark.integration
def test_unknown_model_is_unavailable(triton_url: str, car_jpeg: bytes) -> None:
    with (
        PlateRecognitionClient(triton_url, model_name="no_such_model", timeout_s=60) as client,
        pytest.raises(TritonUnavailableError, match="no_such_model"),
    ):
        client.recognize([car_jpeg])


@pytest.mark.integration
def test_one_client_serves_concurrent_threads(triton_url: str, car_jpeg: bytes, cat_jpeg: bytes) -> None:
    batches = [[car_jpeg], [cat_jpeg], [cat_jpeg, car_jpeg], [car_jpeg, car_jpeg, cat_jpeg]] * 2
    with PlateRecognitionClient(triton_url, timeout_s=300) as client, ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(client.recognize, batches))
    for batch, results in zip(batches, answers, strict=True):
        assert [len(r.plates) for r in results] == [1 if frame is car_jpeg else 0 for frame in batch]
