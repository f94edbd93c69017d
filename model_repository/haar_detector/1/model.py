"""haar_detector: one decoded BGR image in, plate boxes (source pixels) and scores out.

OpenCV's Russian-plate Haar cascade (see detectors.make_detector for its config parameters), kept
as a CPU-only alternative to the batch-dynamic ONNX `plate_detector`.
"""

from __future__ import annotations

import json

import triton_python_backend_utils as pb_utils
from detectors import make_detector


class TritonPythonModel:
    def initialize(self, args: dict) -> None:
        config = json.loads(args["model_config"])
        parameters = {k: v["string_value"] for k, v in config.get("parameters", {}).items()}
        self.detector = make_detector(parameters)

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
