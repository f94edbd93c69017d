"""baseline: the original design's per-frame chain, kept only as the benchmark's reference.

One request = one decoded frame. The frame is letterboxed at each of `plate_recognition`'s
`detector_scales` and the plate detector (the same ONNX graph as `plate_detector`) runs on each
canvas in this model's own ONNX Runtime session, one canvas per run (batch 1), as the original
ran its detector inside a Python model; then stn and lprnet are called with blocking BLS calls for
this frame's plates only: no batching across frames, no overlap inside a request.

Everything else is `plate_recognition`'s own code and parameters, read from the served model
repository (`served_repository`, set by the bench; by default the repository beside bench/):
letterbox, decoding and NMS (detections.py), the corner warp and CTC (frames.py), scales,
thresholds, margins, the detector's ONNX Runtime threads and providers. So both designs compute
the same thing and differ only in how it is served.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path

import numpy as np
import onnxruntime as ort
import triton_python_backend_utils as pb_utils

_PARAMETER = re.compile(
    r'parameters:\s*\{\s*key:\s*"(?P<key>[^"]+)"\s*,?\s*value:\s*\{\s*string_value:\s*"(?P<value>[^"]*)"\s*\}\s*\}'
)


def _load_module(path: Path, name: str) -> object:
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None or not path.is_file():
        raise pb_utils.TritonModelException(f"baseline: {path} not found")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while it executes
    spec.loader.exec_module(module)
    return module


def _served_parameters(repository: Path, model: str, config_name: str) -> dict[str, str]:
    """A served model's config parameters (configs/NAME.pbtxt when it exists, as Triton picks)."""
    path = repository / model / "configs" / f"{config_name}.pbtxt"
    if not config_name or not path.is_file():
        path = repository / model / "config.pbtxt"
    return {match["key"]: match["value"] for match in _PARAMETER.finditer(path.read_text())}


class TritonPythonModel:
    def initialize(self, args: dict) -> None:
        config = json.loads(args["model_config"])
        parameters = {k: v["string_value"] for k, v in config.get("parameters", {}).items()}
        # args["model_repository"] is this model's folder, e.g. bench/baseline_repository/baseline.
        default = Path(args["model_repository"]).resolve().parents[2] / "model_repository"
        repository = Path(parameters.get("served_repository") or default)
        config_name = parameters.get("served_config_name", "")
        self.detections = _load_module(
            repository / "plate_recognition/1/detections.py", "baseline_detections"
        )
        self.frames = _load_module(repository / "plate_recognition/1/frames.py", "baseline_frames")

        recognition = _served_parameters(repository, "plate_recognition", config_name)
        self.scales = self.detections.parse_scales(
            recognition.get("detector_scales", self.detections.DEFAULT_SCALES)
        )
        self.margins = self.detections.parse_margins(
            recognition.get("detector_margins", self.detections.DEFAULT_MARGINS), len(self.scales)
        )
        self.score_threshold = float(recognition.get("score_threshold", 0.25))
        self.nms_iou = float(recognition.get("nms_iou", 0.5))
        self.vertical_margin = float(recognition.get("crop_vertical_margin", 0.2))
        self.horizontal_margin = float(recognition.get("crop_horizontal_margin", 0.08))
        self.stn = recognition.get("stn_model", "stn")
        self.lprnet = recognition.get("lprnet_model", "lprnet")

        detector_model = recognition.get("detector_model", "plate_detector")
        detector = _served_parameters(repository, detector_model, config_name)
        options = ort.SessionOptions()
        threads = parameters.get("detector_intra_op_threads") or detector.get("intra_op_threads", "2")
        options.intra_op_num_threads = int(threads)
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        providers = [p for p in detector.get("onnx_providers", "CPUExecutionProvider").split(",") if p]
        path = repository / detector_model / "1" / "model.onnx"
        self.detector = ort.InferenceSession(str(path), options, providers=providers)
        self.detector_input = self.detector.get_inputs()[0].name

    def execute(self, requests: list) -> list:
        responses = []
        for request in requests:
            try:
                responses.append(self._recognize(request))
            except Exception as error:
                responses.append(pb_utils.InferenceResponse(error=pb_utils.TritonError(f"baseline: {error}")))
        return responses

    def _recognize(self, request: object) -> object:
        image = pb_utils.get_input_tensor_by_name(request, "image").as_numpy()
        canvases = self.detections.canvases_for([image], self.scales, self.margins)
        rows = [None] * len(canvases.placements)
        for batch in canvases.batches:  # one canvas per run, as the seed ran its detector
            for view, pixels in zip(batch.views, batch.pixels, strict=True):
                rows[view] = self.detector.run(None, {self.detector_input: pixels[None]})[0][0]
        size = (image.shape[1], image.shape[0])
        (plates,) = self.detections.frame_detections(
            rows, canvases.placements, [size], len(self.scales), self.score_threshold, self.nms_iou
        )
        boxes, texts, confidences = [], [], []
        if len(plates):
            crops = np.stack(
                [
                    self.frames.plate_tensor(
                        image,
                        self.detections.usable_corners(corners, box),
                        self.vertical_margin,
                        self.horizontal_margin,
                    )
                    for corners, box in zip(plates.corners, plates.boxes, strict=True)
                ]
            )
            (rectified,) = _call(self.stn, [pb_utils.Tensor("input", crops)], ["output"])
            (logits,) = _call(self.lprnet, [pb_utils.Tensor("input", rectified)], ["logits"])
            for box, plate_logits in zip(plates.boxes, logits, strict=True):
                text, characters = self.frames.ctc_greedy_decode(plate_logits)
                if text:  # empty readings are dropped, as plate_recognition does
                    boxes.append(box)
                    texts.append(text.encode())
                    confidences.append(self.frames.plate_confidence(characters))
        return pb_utils.InferenceResponse(
            output_tensors=[
                pb_utils.Tensor("boxes", np.array(boxes, dtype=np.float32).reshape(-1, 4)),
                pb_utils.Tensor("texts", np.array(texts, dtype=np.object_)),
                pb_utils.Tensor("confidences", np.array(confidences, dtype=np.float32)),
            ]
        )


def _call(model: str, inputs: list, outputs: list[str]) -> list[np.ndarray]:
    response = pb_utils.InferenceRequest(
        model_name=model, inputs=inputs, requested_output_names=outputs
    ).exec()
    if response.has_error():
        raise RuntimeError(f"{model} failed: {response.error().message()}")
    return [pb_utils.get_output_tensor_by_name(response, name).as_numpy() for name in outputs]
