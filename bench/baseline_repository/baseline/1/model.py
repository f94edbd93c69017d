"""baseline: the original design's per-frame chain, kept only as the benchmark's reference.

One request = one decoded frame. plate_detector, stn and lprnet are called one after another with
blocking BLS calls, for this frame's plates only: no batching across frames, no overlap inside a
request. Crops and CTC decoding reuse `plate_recognition`'s frames.py so that both designs do the
same computation and differ only in how it is served.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import triton_python_backend_utils as pb_utils


def _load_frames_module(path: Path) -> object:
    spec = importlib.util.spec_from_file_location("baseline_frames", path)
    if spec is None or spec.loader is None or not path.is_file():
        raise pb_utils.TritonModelException(f"baseline: frames_py {path} not found")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class TritonPythonModel:
    def initialize(self, args: dict) -> None:
        config = json.loads(args["model_config"])
        parameters = {k: v["string_value"] for k, v in config.get("parameters", {}).items()}
        # args["model_repository"] is this model's folder: bench/baseline_repository/baseline.
        repo_root = Path(args["model_repository"]).resolve().parents[2]
        self.frames = _load_frames_module(repo_root / parameters["frames_py"])

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
        boxes, _scores = _call("plate_detector", [pb_utils.Tensor("image", image)], ["boxes", "scores"])
        boxes = boxes.reshape(-1, 4)
        texts, confidences = [], []
        if len(boxes):
            crops = np.stack([self.frames.plate_tensor(image, box) for box in boxes])
            (rectified,) = _call("stn", [pb_utils.Tensor("input", crops)], ["output"])
            (logits,) = _call("lprnet", [pb_utils.Tensor("input", rectified)], ["logits"])
            for plate_logits in logits:
                text, characters = self.frames.ctc_greedy_decode(plate_logits)
                texts.append(text.encode())
                confidences.append(self.frames.plate_confidence(characters))
        return pb_utils.InferenceResponse(
            output_tensors=[
                pb_utils.Tensor("boxes", boxes.astype(np.float32)),
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
