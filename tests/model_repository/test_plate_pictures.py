"""Plate pictures end to end on the real local Triton: asked per frame, bounded, readable, else absent."""

from __future__ import annotations

from types import ModuleType

import cv2
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
from support import edit_distance

from stream_worker.triton_client import OUTPUT_NAMES, PlateRecognitionClient
from tests.model_repository.test_pipeline import EXPECTED_TEXT

pytestmark = pytest.mark.integration


def recognize(url: str, frames: list[bytes], wanted: list[bool] | None) -> dict[str, np.ndarray]:
    client = grpcclient.InferenceServerClient(url)
    images = grpcclient.InferInput("images", [len(frames)], "BYTES")
    images.set_data_from_numpy(np.array(frames, dtype=np.object_))
    inputs = [images]
    if wanted is not None:
        flags = grpcclient.InferInput("plate_images", [len(wanted)], "BOOL")
        flags.set_data_from_numpy(np.array(wanted, dtype=np.bool_))
        inputs.append(flags)
    result = client.infer("plate_recognition", inputs, client_timeout=300)
    return {name: result.as_numpy(name) for name in OUTPUT_NAMES}


def read_picture(url: str, frames: ModuleType, picture: np.ndarray) -> str:
    """The recogniser's text for a picture: the plate inside its margins through stn and lprnet."""
    height, width = picture.shape[:2]
    # The picture is the plate inset by the crop margins; warping those corners gives the plate again.
    left = width * frames.PLATE_HORIZONTAL_MARGIN / (1 + 2 * frames.PLATE_HORIZONTAL_MARGIN)
    top = height * frames.PLATE_VERTICAL_MARGIN / (1 + 2 * frames.PLATE_VERTICAL_MARGIN)
    corners = np.array(
        [[left, top], [width - left, top], [width - left, height - top], [left, height - top]], np.float32
    )
    client = grpcclient.InferenceServerClient(url)
    tensor = grpcclient.InferInput("input", [1, 3, 24, 94], "FP32")
    tensor.set_data_from_numpy(frames.plate_tensor(picture, corners)[None])
    rectified = client.infer("stn", [tensor]).as_numpy("output")
    tensor.set_data_from_numpy(rectified)
    logits = client.infer("lprnet", [tensor]).as_numpy("logits")
    return frames.ctc_greedy_decode(logits[0])[0]


def test_the_vans_picture_is_bounded_decodes_and_reads_back(
    triton_url: str, car_jpeg: bytes, frames: ModuleType, pictures: ModuleType, tmp_path
) -> None:
    result = recognize(triton_url, [car_jpeg], [True])
    assert result["plate_frame"].tolist() == [0]
    text = result["plate_text"][0].decode()
    [jpeg] = result["plate_image"].tolist()
    picture = cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_COLOR)
    assert picture is not None and 0 < len(jpeg) <= pictures.PICTURE_MAX_BYTES
    cv2.imwrite(str(tmp_path / "van.png"), picture)
    again = read_picture(triton_url, frames, picture)
    # The picture as a frame of its own, on a grey background, through the whole pipeline.
    canvas = np.full((picture.shape[0] * 4, picture.shape[1] * 3, 3), 128, np.uint8)
    canvas[picture.shape[0] * 2 : picture.shape[0] * 3, picture.shape[1] : picture.shape[1] * 2] = picture
    as_frame = recognize(triton_url, [cv2.imencode(".jpg", canvas)[1].tobytes()], None)
    print(
        f"\nvan's picture {picture.shape[1]}x{picture.shape[0]}, {len(jpeg)} bytes; event {text!r}, "
        f"picture re-read {again!r}, as a frame {[t.decode() for t in as_frame['plate_text']]}"
    )
    assert edit_distance(text, EXPECTED_TEXT) <= 1
    assert edit_distance(again, text) <= 1
    assert [edit_distance(t.decode(), text) <= 1 for t in as_frame["plate_text"]] == [True]
    assert picture.shape[0] >= 48


def test_pictures_come_only_for_the_frames_that_ask(triton_url: str, car_jpeg: bytes) -> None:
    without = recognize(triton_url, [car_jpeg], None)
    assert without["plate_image"].tolist() == [b""] * len(without["plate_text"])
    assert recognize(triton_url, [car_jpeg], [False])["plate_image"].tolist() == [b""]
    mixed = recognize(triton_url, [car_jpeg, car_jpeg], [False, True])
    by_frame = dict(zip(mixed["plate_frame"].tolist(), mixed["plate_image"].tolist(), strict=True))
    assert by_frame[0] == b"" and by_frame[1].startswith(b"\xff\xd8\xff")
    # The other outputs do not depend on the pictures.
    np.testing.assert_allclose(mixed["plate_box"][0], without["plate_box"][0])


def test_a_flag_per_frame_is_required(triton_url: str, car_jpeg: bytes) -> None:
    with pytest.raises(Exception, match="plate_images has 1 values for 2 frames"):
        recognize(triton_url, [car_jpeg, car_jpeg], [True])


def test_the_client_asks_pictures_per_frame(triton_url: str, car_jpeg: bytes, cat_jpeg: bytes) -> None:
    with PlateRecognitionClient(triton_url) as client:
        car, cat, plain = client.recognize([car_jpeg, cat_jpeg, car_jpeg], [True, True, False])
        [default] = client.recognize([car_jpeg])
    assert car.plates[0].image.startswith(b"\xff\xd8\xff") and not cat.plates
    assert plain.plates[0].image == default.plates[0].image == b""
    assert plain.plates[0].text == car.plates[0].text == default.plates[0].text
