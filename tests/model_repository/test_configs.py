"""Every model's GPU variant (configs/gpu.pbtxt) parses and serves the same contract as its default."""

from __future__ import annotations

from pathlib import Path

import pytest
from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2

from tests.model_repository.conftest import load_model_file

MODEL_REPOSITORY = Path(__file__).resolve().parents[2] / "model_repository"
MODELS = ("plate_recognition", "plate_detector", "haar_detector", "stn", "lprnet", "global_ocr")
# The ONNX networks `stream-worker models prepare` writes: batched, on the GPU in the gpu variant.
NETWORKS = ("plate_detector", "stn", "lprnet", "global_ocr")
RECOGNIZERS = ("stn", "lprnet", "global_ocr")


def _config(path: Path) -> model_config_pb2.ModelConfig:
    return text_format.Parse(path.read_text(), model_config_pb2.ModelConfig())


def _signature(config: model_config_pb2.ModelConfig) -> tuple:
    def tensors(items) -> list[tuple]:
        return [(t.name, t.data_type, tuple(t.dims)) for t in items]

    return tensors(config.input), tensors(config.output), config.max_batch_size


def _variants(model: str) -> tuple[model_config_pb2.ModelConfig, model_config_pb2.ModelConfig]:
    return (
        _config(MODEL_REPOSITORY / model / "config.pbtxt"),
        _config(MODEL_REPOSITORY / model / "configs" / "gpu.pbtxt"),
    )


def test_the_repository_holds_exactly_the_pipeline_models() -> None:
    assert sorted(p.name for p in MODEL_REPOSITORY.iterdir() if p.is_dir()) == sorted(MODELS)


@pytest.mark.parametrize("model", MODELS)
def test_gpu_variant_has_the_default_contract(model: str) -> None:
    default, gpu = _variants(model)
    assert default.name == gpu.name == model
    assert _signature(gpu) == _signature(default)
    assert gpu.HasField("dynamic_batching") == default.HasField("dynamic_batching")
    assert gpu.dynamic_batching == default.dynamic_batching


@pytest.mark.parametrize("model", NETWORKS)
def test_networks_run_on_the_gpu_with_tensorrt_fp16(model: str) -> None:
    _, gpu = _variants(model)
    assert gpu.backend == "onnxruntime"
    assert gpu.default_model_filename == "model.onnx"
    assert [group.kind for group in gpu.instance_group] == [model_config_pb2.ModelInstanceGroup.KIND_GPU]
    (accelerator,) = gpu.optimization.execution_accelerators.gpu_execution_accelerator
    assert accelerator.name == "tensorrt"
    assert accelerator.parameters["precision_mode"] == "FP16"
    assert accelerator.parameters["trt_engine_cache_path"] == f"/tmp/trt_cache_{model}"


@pytest.mark.parametrize("model", NETWORKS)
def test_networks_batch_dynamically_with_a_bounded_delay_and_queue(model: str) -> None:
    for config in _variants(model):
        assert config.max_batch_size >= 32
        assert 0 < config.dynamic_batching.max_queue_delay_microseconds <= 10_000
        assert config.dynamic_batching.default_queue_policy.max_queue_size > 0
        assert all(size <= config.max_batch_size for size in config.dynamic_batching.preferred_batch_size)


@pytest.mark.parametrize("model", NETWORKS)
def test_networks_run_the_shared_onnx_runtime_model_on_the_cpu(model: str) -> None:
    default, _ = _variants(model)
    assert default.backend == "python"
    script = MODEL_REPOSITORY / model / "1" / "model.py"
    assert script.resolve() == (MODEL_REPOSITORY / "lprnet" / "1" / "model.py").resolve()
    if model != "lprnet":
        assert script.is_symlink() and not Path(script.readlink()).is_absolute()


def test_recognition_chunks_no_larger_than_the_networks_accept() -> None:
    for config in _variants("plate_recognition"):
        chunk = int(config.parameters["recognizer_max_batch"].string_value)
        assert all(
            chunk <= _config(MODEL_REPOSITORY / n / "config.pbtxt").max_batch_size for n in RECOGNIZERS
        )


def test_both_variants_crop_and_call_the_same_recognizers() -> None:
    default, gpu = _variants("plate_recognition")
    keys = [k for k in default.parameters if k.endswith("_model") or "crop_" in k or "whole_plate_" in k]
    assert {"global_ocr_model", "global_crop_vertical_margin", "global_crop_horizontal_margin"} <= set(keys)
    for key in keys:
        assert gpu.parameters[key].string_value == default.parameters[key].string_value, key
    assert default.parameters["global_ocr_model"].string_value == "global_ocr"
    frames = load_model_file("plate_recognition", "frames")
    assert (
        float(default.parameters["global_crop_vertical_margin"].string_value) == frames.GLOBAL_VERTICAL_MARGIN
    )
    assert (
        float(default.parameters["global_crop_horizontal_margin"].string_value)
        == frames.GLOBAL_HORIZONTAL_MARGIN
    )
    whole = [
        default.parameters[f"whole_plate_global_{side}_margin"].string_value
        for side in ("vertical", "horizontal")
    ]
    assert [float(v) for v in whole] == [
        frames.WHOLE_GLOBAL_VERTICAL_MARGIN,
        frames.WHOLE_GLOBAL_HORIZONTAL_MARGIN,
    ]


def test_recognition_sends_the_detector_no_larger_requests_than_it_accepts() -> None:
    for config in _variants("plate_recognition"):
        chunk = int(config.parameters["detector_max_batch"].string_value)
        assert 0 < chunk <= _config(MODEL_REPOSITORY / "plate_detector" / "config.pbtxt").max_batch_size


def test_both_variants_show_the_detector_the_same_scales_and_margins() -> None:
    default, gpu = _variants("plate_recognition")
    detections = load_model_file("plate_recognition", "detections")
    assert default.parameters["detector_scales"].string_value == detections.DEFAULT_SCALES
    assert default.parameters["detector_margins"].string_value == detections.DEFAULT_MARGINS
    for key in ("detector_scales", "detector_margins", "score_threshold", "nms_iou", "max_decoded_pixels"):
        assert gpu.parameters[key].string_value == default.parameters[key].string_value, key


def test_the_gpu_detector_warms_up_the_canvases_a_16_by_9_camera_sends() -> None:
    """TensorRT builds an engine profile per canvas shape; a shape left out of the warm-up is built
    while the first 1080p frames wait."""
    detections = load_model_file("plate_recognition", "detections")
    default, _ = _variants("plate_recognition")
    scales = detections.parse_scales(default.parameters["detector_scales"].string_value)
    margins = detections.parse_margins(default.parameters["detector_margins"].string_value, len(scales))
    sent = {
        detections.canvas_layout(1920, 1080, scale, margin)[0][::-1]
        for scale, margin in zip(scales, margins, strict=True)
    }
    _, gpu_detector = _variants("plate_detector")
    warmed = {tuple(sample.inputs["images"].dims[:2]) for sample in gpu_detector.model_warmup}
    assert sent <= warmed


def test_the_decode_limits_in_the_config_are_the_frames_module_defaults() -> None:
    default, _ = _variants("plate_recognition")
    frames = load_model_file("plate_recognition", "frames")
    assert int(default.parameters["max_pixels"].string_value) == frames.DEFAULT_MAX_PIXELS
    assert int(default.parameters["max_decoded_pixels"].string_value) == frames.DEFAULT_MAX_DECODED_PIXELS
    # a 1080p frame is decoded at 1/2: still more pixels than the detector's scale-1.0 canvas
    plan = frames.DecodePlan(frames.JpegHeader(1920, 1080, 3, False), 2)
    assert plan.size[0] * plan.size[1] <= frames.DEFAULT_MAX_DECODED_PIXELS < 1920 * 1080
