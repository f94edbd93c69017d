"""plate_recognition/1/contract.py is the one statement of the tensors: configs, client and graph agree."""

from __future__ import annotations

from types import ModuleType

import numpy as np
import pytest
from tritonclient.grpc import model_config_pb2

from stream_worker import triton_client
from stream_worker.nets import detector_graph
from tests.model_repository.test_configs import _variants


def _tensors(items) -> list[tuple[str, str, tuple[int, ...]]]:
    return [(t.name, model_config_pb2.DataType.Name(t.data_type), tuple(t.dims)) for t in items]


def _specs(specs) -> list[tuple[str, str, tuple[int, ...]]]:
    return [(s.name, s.triton_type, s.dims) for s in specs]


def test_plate_recognition_configs_declare_the_contract(contract: ModuleType) -> None:
    for config in _variants("plate_recognition"):
        assert _tensors(config.input) == _specs(contract.INPUTS)
        assert [t.optional for t in config.input] == [s.optional for s in contract.INPUTS]
        assert _tensors(config.output) == _specs(contract.OUTPUTS)


def test_the_client_asks_for_every_output_of_the_contract(contract: ModuleType) -> None:
    assert list(triton_client.OUTPUT_NAMES) == [spec.name for spec in contract.OUTPUTS]


def test_the_client_sends_the_contracts_inputs(contract: ModuleType) -> None:
    assert tuple(s.name for s in contract.INPUTS) == (
        triton_client.INPUT_NAME,
        triton_client.PLATE_IMAGES_NAME,
        triton_client.PLATE_MASKS_NAME,
        triton_client.PLATE_RECOGNIZERS_NAME,
        triton_client.FRAME_IS_PLATE_NAME,
        triton_client.DETECTOR_SCALES_NAME,
    )
    assert not contract.IMAGES.optional  # old clients send images only
    assert all(spec.optional for spec in contract.INPUTS[1:])


def test_the_client_knows_the_contracts_recognizers(contract: ModuleType) -> None:
    from stream_worker import recognition

    assert recognition.RECOGNIZERS == contract.RECOGNIZERS
    assert (recognition.LPRNET, recognition.GLOBAL) == (contract.LPRNET, contract.GLOBAL)
    assert recognition.Plate("A1", 1.0, (0, 0, 1, 1), 1.0).recognizers == contract.DEFAULT_RECOGNIZERS


def test_global_ocr_configs_declare_the_recognizers_contract(contract: ModuleType) -> None:
    for config in _variants("global_ocr"):
        assert _tensors(config.input) == _specs([contract.GLOBAL_OCR_INPUT])
        assert _tensors(config.output) == _specs([contract.GLOBAL_OCR_OUTPUT])
    outputs = {spec.name: spec for spec in contract.OUTPUTS}
    assert outputs["plate_global_probs"].dims[1:] == contract.GLOBAL_OCR_OUTPUT.dims
    assert contract.GLOBAL_CLASSES == len(contract.GLOBAL_ALPHABET) == 37
    assert contract.GLOBAL_ALPHABET.endswith(contract.GLOBAL_PAD)


def test_lprnet_probabilities_are_its_logits_time_major(contract: ModuleType) -> None:
    (lprnet, _) = _variants("lprnet")
    classes, steps = tuple(lprnet.output[0].dims)
    outputs = {spec.name: spec for spec in contract.OUTPUTS}
    assert outputs["plate_lprnet_probs"].dims == (-1, steps, classes)


def test_the_picture_bound_is_the_events(pictures: ModuleType) -> None:
    from stream_worker.contracts import PLATE_IMAGE_MAX_BYTES

    assert pictures.PICTURE_MAX_BYTES == PLATE_IMAGE_MAX_BYTES


def test_plate_detector_configs_and_graph_declare_the_detector_contract(contract: ModuleType) -> None:
    for config in _variants("plate_detector"):
        assert _tensors(config.input) == _specs([contract.DETECTOR_IMAGES])
        assert _tensors(config.output) == _specs([contract.DETECTOR_ROWS])
    assert (
        contract.DETECTOR_IMAGES.name,
        contract.DETECTOR_ROWS.name,
    ) == (detector_graph.INPUT_NAME, detector_graph.OUTPUT_NAME)
    assert detector_graph.ROW_WIDTH == contract.DETECTOR_ROW_WIDTH


def test_the_detections_helpers_read_rows_of_the_contracts_width(
    contract: ModuleType, detections: ModuleType
) -> None:
    assert detections.ROW_WIDTH == contract.DETECTOR_ROW_WIDTH
    assert detections.STRIDE == detector_graph.STRIDE


def test_output_arrays_cast_to_the_contract_and_refuse_other_names(contract: ModuleType) -> None:
    values = {spec.name: [] for spec in contract.OUTPUTS}
    values["frame_size"] = [[640, 480]]
    values["frame_status"] = [b"ok"]
    arrays = contract.output_arrays(values)
    assert [name for name, _ in arrays] == [spec.name for spec in contract.OUTPUTS]
    assert all(array.dtype == spec.dtype for (_, array), spec in zip(arrays, contract.OUTPUTS, strict=True))
    assert dict(arrays)["frame_size"].dtype == np.int32
    with pytest.raises(KeyError, match="plate_box"):
        contract.output_arrays({k: v for k, v in values.items() if k != "plate_box"})
    with pytest.raises(KeyError):
        contract.output_arrays({**values, "extra": []})


def test_cameras_detector_scales_are_bounded_as_the_model_bounds_them(detections: ModuleType) -> None:
    from stream_worker.contracts.cameras import MAX_DETECTOR_SCALE, MAX_DETECTOR_SCALES

    assert (MAX_DETECTOR_SCALES, MAX_DETECTOR_SCALE) == (detections.MAX_SCALES, detections.MAX_SCALE)
