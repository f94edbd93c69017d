"""Masks end to end on the real local Triton: a plate whose centre lies in its frame's mask is
dropped before it is read and counted in `frame_masked`; frames without masks are untouched."""

from __future__ import annotations

import json

import numpy as np
import pytest
import tritonclient.grpc as grpcclient

from stream_worker.triton_client import OUTPUT_NAMES, PlateRecognitionClient

pytestmark = pytest.mark.integration

# In samples/car.jpg (780x439) the van's plate centre is near (0.15, 0.77).
OVER_THE_VAN = json.dumps([[[0.0, 0.6], [0.4, 0.6], [0.4, 1.0], [0.0, 1.0]]]).encode()
ELSEWHERE = json.dumps([[[0.6, 0.0], [1.0, 0.0], [1.0, 0.4]]]).encode()


def recognize(
    url: str, frames: list[bytes], masks: list[bytes], pictures: bool = False
) -> dict[str, np.ndarray]:
    client = grpcclient.InferenceServerClient(url)
    images = grpcclient.InferInput("images", [len(frames)], "BYTES")
    images.set_data_from_numpy(np.array(frames, dtype=np.object_))
    polygons = grpcclient.InferInput("plate_masks", [len(masks)], "BYTES")
    polygons.set_data_from_numpy(np.array(masks, dtype=np.object_))
    inputs = [images, polygons]
    if pictures:
        flags = grpcclient.InferInput("plate_images", [len(frames)], "BOOL")
        flags.set_data_from_numpy(np.ones(len(frames), dtype=np.bool_))
        inputs.append(flags)
    result = client.infer("plate_recognition", inputs, client_timeout=300)
    return {name: result.as_numpy(name) for name in OUTPUT_NAMES}


def test_a_masked_plate_is_dropped_and_counted_per_frame(triton_url: str, car_jpeg: bytes) -> None:
    result = recognize(triton_url, [car_jpeg, car_jpeg, car_jpeg], [OVER_THE_VAN, b"", ELSEWHERE], True)
    assert result["frame_masked"].tolist() == [1, 0, 0]
    assert result["plate_frame"].tolist() == [1, 2]  # the first frame's plate is gone
    assert all(jpeg.startswith(b"\xff\xd8\xff") for jpeg in result["plate_image"].tolist())
    assert result["frame_status"].tolist() == [b"ok"] * 3


def test_bad_masks_fail_the_request_with_the_reason(triton_url: str, car_jpeg: bytes) -> None:
    with pytest.raises(Exception, match=r"plate_masks: polygon 0 has coordinates outside 0\.\.1"):
        recognize(triton_url, [car_jpeg], [json.dumps([[[0, 0], [2, 0], [1, 1]]]).encode()])
    with pytest.raises(Exception, match="plate_masks has 1 values for 2 frames"):
        recognize(triton_url, [car_jpeg, car_jpeg], [OVER_THE_VAN])


def test_the_client_sends_masks_per_frame(triton_url: str, car_jpeg: bytes) -> None:
    with PlateRecognitionClient(triton_url) as client:
        masked, plain = client.recognize([car_jpeg, car_jpeg], plate_masks=[OVER_THE_VAN, b""])
        [default] = client.recognize([car_jpeg])
    assert (masked.plates, masked.masked) == ((), 1)
    assert plain.masked == default.masked == 0
    assert plain.plates == default.plates and len(default.plates) == 1
