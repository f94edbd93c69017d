"""plate_detector: one decoded BGR image in, plate boxes (source pixels) and scores out.

The detector is chosen by the config's parameters (see detectors.make_detector): OpenCV's
Russian-plate Haar cascade by default, or a user-supplied YOLO-style ONNX model.
"""

from __future__ import annotations

import json
from pathlib import Path

import triton_python_backend_utils as pb_utils
from detectors import make_detector


class TritonPythonModel:
    def initialize(self, args: dict) -> None:
        config = json.loads(args["model_config"])
        parameters = {k: v["string_value"] for k, v in config.get("parameters", {}).items()}
        model_dir = Path(args["model_repository"]) / args["model_version"]
        self.detector = make_detector(parameters, model_dir)

    def execute(self, requests: list) -> list:
        responses = []
        for request in requests:
            image = pb_utils.get_input_tensor_by_name(request, "image").as_numpy()
            try:
                boxes, scores = self.detector.detect(image)
            except Exception as error:
                responses.append(
                    pb_utils.InferenceResponse(error=pb_utils.TritonError(f"{type(error).__name__}: {error}"))
                )
                continue
            responses.append(
                pb_utils.InferenceResponse(
                    output_tensors=[pb_utils.Tensor("boxes", boxes), pb_utils.Tensor("scores", scores)]
                )
            )
        return responses
