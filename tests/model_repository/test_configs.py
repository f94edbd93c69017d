"""Every model's GPU variant (configs/gpu.pbtxt) parses and serves the same contract as its default."""

from __future__ import annotations

from pathlib import Path

import pytest
from google.protobuf import text_format
from tritonclient.grpc import model_config_pb2

MODEL_REPOSITORY = Path(__file__).resolve().parents[2] / "model_repository"
MODELS = ("plate_recognition", "plate_detector", "stn", "lprnet")
NETWORKS = ("stn", "lprnet")


def _config(path: Path) -> model_config_pb2.ModelConfig:
    return text_format.Parse(path.read_text(), model_config_pb2.ModelConfig())


def _signature(config: model_config_pb2.ModelConfig) -> tuple:
    def tensors(items) -> list[tuple]:
        return [(t.name, t.data_type, tuple(t.dims)) for t in items]

    return tensors(config.input), tensors(config.output), config.max_batch_size


def test_the_repository_holds_exactly_the_pipeline_models() -> None:
    assert sorted(p.name for p in MODEL_REPOSITORY.iterdir() if p.is_dir()) == sorted(MODELS)


@pytest.mark.parametrize("model", MODELS)
def test_gpu_variant_has_the_default_contract(model: str) -> None:
    default = _config(MODEL_REPOSITORY / model / "config.pbtxt")
    gpu = _config(MODEL_REPOSITORY / model / "configs" / "gpu.pbtxt")
    assert default.name == gpu.name == model
    assert _signature(gpu) == _signature(default)
    assert gpu.HasField("dynamic_batching") == default.HasField("dynamic_batching")


@pytest.mark.parametrize("model", NETWORKS)
def test_networks_run_on_the_gpu_with_tensorrt_fp16(model: str) -> None:
    gpu = _config(MODEL_REPOSITORY / model / "configs" / "gpu.pbtxt")
    assert gpu.backend == "onnxruntime"
    assert [group.kind for group in gpu.instance_group] == [model_config_pb2.ModelInstanceGroup.KIND_GPU]
    (accelerator,) = gpu.optimization.execution_accelerators.gpu_execution_accelerator
    assert accelerator.name == "tensorrt"
    assert accelerator.parameters["precision_mode"] == "FP16"


@pytest.mark.parametrize("model", NETWORKS)
def test_networks_batch_dynamically_with_a_bounded_delay(model: str) -> None:
    for path in (
        MODEL_REPOSITORY / model / "config.pbtxt",
        MODEL_REPOSITORY / model / "configs" / "gpu.pbtxt",
    ):
        config = _config(path)
        assert config.max_batch_size >= 64
        assert 0 < config.dynamic_batching.max_queue_delay_microseconds <= 10_000
        assert all(size <= config.max_batch_size for size in config.dynamic_batching.preferred_batch_size)


def test_recognition_chunks_no_larger_than_the_networks_accept() -> None:
    for path in (
        MODEL_REPOSITORY / "plate_recognition" / "config.pbtxt",
        MODEL_REPOSITORY / "plate_recognition" / "configs" / "gpu.pbtxt",
    ):
        chunk = int(_config(path).parameters["recognizer_max_batch"].string_value)
        assert all(chunk <= _config(MODEL_REPOSITORY / n / "config.pbtxt").max_batch_size for n in NETWORKS)
