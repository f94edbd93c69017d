"""plate_recognition end to end on the real local Triton, with the real networks (tritonclient.grpc)."""

from __future__ import annotations

import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
from support import edit_distance, process_tree, resident_bytes
from tritonclient.utils import InferenceServerException

from stream_worker.triton_client import OUTPUT_NAMES  # the outputs the worker asks for
from tests.model_repository.test_frames import declared_jpeg

pytestmark = pytest.mark.integration

EXPECTED_BOX = (94, 331, 132, 342)
EXPECTED_TEXT = "B840CK197"


def recognize(url: str, frames: list[bytes]) -> dict[str, np.ndarray]:
    client = grpcclient.InferenceServerClient(url)
    images = grpcclient.InferInput("images", [len(frames)], "BYTES")
    images.set_data_from_numpy(np.array(frames, dtype=np.object_))
    result = client.infer("plate_recognition", [images], client_timeout=300)
    return {name: result.as_numpy(name) for name in OUTPUT_NAMES}


def iou(a, b) -> float:
    width = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    height = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = width * height
    return inter / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter)


def character_confidences(url: str, frames, car_jpeg: bytes, corners: np.ndarray) -> tuple[str, list[float]]:
    """Re-read one plate through stn and lprnet directly, to check the per-character confidences."""
    image = frames.decode_jpeg(car_jpeg, 40_000_000)
    client = grpcclient.InferenceServerClient(url)
    tensor = grpcclient.InferInput("input", [1, 3, 24, 94], "FP32")
    tensor.set_data_from_numpy(frames.plate_tensor(image, corners)[None])
    rectified = client.infer("stn", [tensor]).as_numpy("output")
    tensor.set_data_from_numpy(rectified)
    logits = client.infer("lprnet", [tensor]).as_numpy("logits")
    return frames.ctc_greedy_decode(logits[0])


def test_car_has_one_plate_read_within_one_edit(triton_url: str, car_jpeg: bytes, frames) -> None:
    started = time.perf_counter()
    result = recognize(triton_url, [car_jpeg])
    print(f"car.jpg latency {time.perf_counter() - started:.3f} s")
    assert result["frame_status"].tolist() == [b"ok"]
    assert result["frame_size"].tolist() == [[780, 439]]
    assert result["plate_frame"].tolist() == [0]
    box, text = result["plate_box"][0], result["plate_text"][0].decode()
    corners = result["plate_corners"][0]
    text_again, confidences = character_confidences(triton_url, frames, car_jpeg, corners)
    print(
        f"read {text!r} confidence {result['plate_confidence'][0]:.3f} "
        f"detection {result['plate_detection_score'][0]:.3f} box {box.tolist()} "
        f"IoU {iou(box, EXPECTED_BOX):.2f}; per character: "
        + " ".join(f"{c}={p:.3f}" for c, p in zip(text_again, confidences, strict=True))
    )
    assert iou(box, EXPECTED_BOX) >= 0.5
    assert edit_distance(text, EXPECTED_TEXT) <= 1
    assert text_again == text
    np.testing.assert_allclose(result["plate_character_confidences"], confidences, atol=1e-5)
    assert result["plate_confidence"][0] == pytest.approx(min(confidences), abs=1e-5)
    # The detector's own score (objectness x layout probability), not a constant.
    assert 0.3 < result["plate_detection_score"][0] < 1.0
    assert result["plate_layout"].tolist() == [b"single_row"]
    # The corners lie on the box's edges, give or take a few pixels.
    assert (
        np.abs(corners - [[box[0], box[1]], [box[2], box[1]], [box[2], box[3]], [box[0], box[3]]]).max() < 6
    )


def test_cat_is_ok_without_plates(triton_url: str, cat_jpeg: bytes) -> None:
    result = recognize(triton_url, [cat_jpeg])
    assert result["frame_status"].tolist() == [b"ok"]
    assert result["plate_frame"].shape == (0,)
    assert result["plate_box"].shape == (0, 4)
    assert result["plate_text"].shape == (0,)


def test_an_empty_micro_batch_gets_empty_outputs(triton_url: str) -> None:
    result = recognize(triton_url, [])
    assert {name: array.shape for name, array in result.items()} == {
        "plate_frame": (0,),
        "plate_box": (0, 4),
        "plate_corners": (0, 4, 2),
        "plate_text": (0,),
        "plate_confidence": (0,),
        "plate_character_confidences": (0,),
        "plate_detection_score": (0,),
        "plate_layout": (0,),
        "plate_image": (0,),
        "plate_lprnet_probs": (0, 18, 23),
        "plate_global_probs": (0, 9, 37),
        "plate_recognizers": (0,),
        "frame_status": (0,),
        "frame_size": (0, 2),
        "frame_masked": (0,),
    }


def _server_pids(url: str) -> set[int]:
    """The local tritonserver serving `url` and its backend stubs (empty if not local)."""
    port = url.rsplit(":", 1)[1]
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and f"--grpc-port={port}\0" in (entry / "cmdline").read_bytes().decode():
                return process_tree(int(entry.name))
        except OSError:
            continue
    return set()


def test_bad_frames_fail_alone_and_huge_headers_are_not_decoded(
    triton_url: str, car_jpeg: bytes, cat_jpeg: bytes
) -> None:
    pids = _server_pids(triton_url)
    before = resident_bytes(pids)
    result = recognize(
        triton_url, [car_jpeg, b"not a jpeg", b"", cat_jpeg, car_jpeg, declared_jpeg(60000, 60000)]
    )
    after = resident_bytes(pids)
    statuses = [s.decode() for s in result["frame_status"]]
    print(
        "statuses",
        statuses,
        f"server PSS {before / 2**20:.0f} -> {after / 2**20:.0f} MiB over {len(pids)} pids",
    )
    assert [s.split(":")[0] for s in statuses] == [
        "ok",
        "invalid_image",
        "invalid_image",
        "ok",
        "ok",
        "invalid_image",
    ]
    assert "60000x60000" in statuses[5]
    assert sorted(result["plate_frame"].tolist()) == [0, 4]
    assert result["frame_size"].tolist() == [[780, 439], [0, 0], [0, 0], [1071, 1600], [780, 439], [0, 0]]
    if not pids:
        pytest.skip("Triton is not a local process: server memory not measured")
    assert after - before < 2**30


def _statistics(url: str, model: str = "lprnet", at_least: int = 0) -> tuple[int, int, int, dict[int, int]]:
    """A model's (requests, executions, inferences, executions by batch size) so far.

    Triton counts a request once its response is on its way, so a client can see its answer a
    moment before the statistics do: with `at_least`, wait (up to 10 s) for that many requests.
    """
    deadline = time.monotonic() + 10
    while (statistics := _read_statistics(url, model))[0] < at_least and time.monotonic() < deadline:
        time.sleep(0.05)
    return statistics


def _read_statistics(url: str, model: str) -> tuple[int, int, int, dict[int, int]]:
    statistics = grpcclient.InferenceServerClient(url).get_inference_statistics(model, as_json=True)
    (model,) = statistics["model_stats"]
    by_size = {int(s["batch_size"]): int(s["compute_infer"]["count"]) for s in model.get("batch_stats", [])}
    requests = int(model["inference_stats"]["success"].get("count", 0))
    return requests, int(model.get("execution_count", 0)), int(model.get("inference_count", 0)), by_size


def test_concurrent_clients_are_batched_together(triton_url: str) -> None:
    """8 clients each sending one crop at a time to lprnet: executions of size > 1 merged requests."""
    crop = grpcclient.InferInput("input", [1, 3, 24, 94], "FP32")
    crop.set_data_from_numpy(np.zeros((1, 3, 24, 94), np.float32))

    def client(_: int) -> None:
        connection = grpcclient.InferenceServerClient(triton_url)
        for _ in range(20):
            assert connection.infer("lprnet", [crop]).as_numpy("logits").shape == (1, 23, 18)

    requests_before, executions_before, _, sizes_before = _statistics(triton_url)
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(client, range(8)))
    requests_after, executions_after, _, sizes_after = _statistics(triton_url, at_least=requests_before + 160)
    merged = {size: n - sizes_before.get(size, 0) for size, n in sizes_after.items() if size > 1}
    print(
        f"lprnet: {requests_after - requests_before} requests in "
        f"{executions_after - executions_before} executions; by batch size {merged}"
    )
    assert requests_after - requests_before == 160
    assert any(n > 0 for n in merged.values())
    assert executions_after - executions_before < 160


def test_concurrent_frames_are_detected_in_shared_batches(triton_url: str, car_jpeg: bytes) -> None:
    """8 clients sending single frames through plate_recognition: the detector runs them batched
    (each frame is one request per scale, its canvases being of two shapes).

    Whether two clients' canvases meet in the detector's 2 ms queue is a matter of timing: a burst
    of 32 frames made 4-12 merged executions idle; beside three busy loops 2-12, and none in 1 burst
    of 12. So up to 6 bursts are sent until one merges; without dynamic batching (or with canvases
    that never share a shape) none ever does.
    """
    merged_by_burst = []
    for _ in range(6):
        requests_before, executions_before, _, sizes_before = _statistics(triton_url, "plate_detector")
        with ThreadPoolExecutor(8) as pool:
            results = list(pool.map(lambda _: recognize(triton_url, [car_jpeg]), range(32)))
        requests_after, executions_after, _, sizes_after = _statistics(
            triton_url, "plate_detector", at_least=requests_before + 64
        )
        merged = {size: n - sizes_before.get(size, 0) for size, n in sizes_after.items()}
        print(
            f"plate_detector: {requests_after - requests_before} requests in "
            f"{executions_after - executions_before} executions; by batch size {merged}"
        )
        assert all(r["plate_frame"].tolist() == [0] for r in results)
        assert requests_after - requests_before == 64
        merged_by_burst.append(sum(n for size, n in merged.items() if size > 1))
        if merged_by_burst[-1]:
            break
    assert any(merged_by_burst), merged_by_burst  # canvases of several clients in one execution


def test_a_micro_batch_makes_one_request_to_each_network(triton_url: str, car_jpeg: bytes) -> None:
    before = {
        model: _statistics(triton_url, model) for model in ("plate_detector", "stn", "lprnet", "global_ocr")
    }
    started = time.perf_counter()
    result = recognize(triton_url, [car_jpeg] * 16)
    print(f"16 x car.jpg latency {time.perf_counter() - started:.3f} s")
    after = {
        model: _statistics(triton_url, model, before[model][0] + (model != "global_ocr")) for model in before
    }
    assert result["plate_frame"].tolist() == list(range(16))
    assert len(set(result["plate_text"].tolist())) == 1
    requests_and_inferences = {
        model: (after[model][0] - before[model][0], after[model][2] - before[model][2]) for model in after
    }
    # The detector sees each frame at two scales, canvases of two shapes: 32 images in 2 requests.
    assert requests_and_inferences == {
        "plate_detector": (2, 32),
        "stn": (1, 16),
        "lprnet": (1, 16),
        "global_ocr": (0, 0),  # not asked for: a request without plate_recognizers is today's
    }


def _failing_lprnet(path: Path) -> None:
    """An lprnet whose ONNX graph fails at run time (6768 values cannot be reshaped to [-1, 23, 18])."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    shape = numpy_helper.from_array(np.array([-1, 23, 18], np.int64), "shape")
    graph = helper.make_graph(
        [helper.make_node("Reshape", ["input", "shape"], ["logits"])],
        "broken_lprnet",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["B", 3, 24, 94])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["B", 23, 18])],
        initializer=[shape],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)


def test_a_failing_sub_model_fails_the_request_clearly(
    prepared_model_repository: Path, tmp_path: Path, car_jpeg: bytes, cat_jpeg: bytes
) -> None:
    from stream_worker.launchers.triton import LocalTriton

    repository = tmp_path / "repository"
    shutil.copytree(prepared_model_repository, repository, ignore=shutil.ignore_patterns("__pycache__"))
    for graph in ("model.onnx", "model.int8.onnx"):  # whichever this CPU runs (graphs.py)
        _failing_lprnet(repository / "lprnet" / "1" / graph)
    with LocalTriton(repository) as server:
        assert recognize(server.grpc_url, [cat_jpeg])["frame_status"].tolist() == [b"ok"]  # no plate
        with pytest.raises(InferenceServerException, match="lprnet failed") as error:
            recognize(server.grpc_url, [car_jpeg, cat_jpeg])
        print("sub-model failure as the client sees it:", error.value.message())


def test_the_haar_fallback_still_reads_the_car(
    prepared_model_repository: Path, tmp_path: Path, car_jpeg: bytes, cat_jpeg: bytes
) -> None:
    """`detector: haar` in plate_recognition's config: the OpenCV cascade instead of the learned detector."""
    from stream_worker.launchers.triton import LocalTriton

    repository = tmp_path / "repository"
    shutil.copytree(prepared_model_repository, repository, ignore=shutil.ignore_patterns("__pycache__"))
    config = repository / "plate_recognition" / "config.pbtxt"
    default = 'key: "detector", value: { string_value: "yolo" }'
    assert default in config.read_text()
    config.write_text(config.read_text().replace(default, 'key: "detector", value: { string_value: "haar" }'))
    with LocalTriton(repository) as server:
        result = recognize(server.grpc_url, [car_jpeg, cat_jpeg])
        detector_requests = _statistics(server.grpc_url, "plate_detector")[0]
    print("haar fallback:", result["plate_text"].tolist(), result["plate_box"].tolist())
    assert result["frame_status"].tolist() == [b"ok", b"ok"]
    assert result["plate_frame"].tolist() == [0]
    assert iou(result["plate_box"][0], EXPECTED_BOX) >= 0.4
    assert edit_distance(result["plate_text"][0].decode(), EXPECTED_TEXT) <= 1
    assert detector_requests == 0
