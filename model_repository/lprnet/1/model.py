"""LPRNet: rectified plate crops [B,3,24,94] -> CTC logits [B,23 classes,18 steps].

This machine's variant: Python backend + ONNX Runtime CPU.

Runs `model.onnx` from this folder (exported by `stream-worker models prepare`). Triton's dynamic
batcher hands several requests to one execute(): they are concatenated into one ONNX Runtime run
and split back. The GPU variant (configs/gpu.pbtxt) runs the same file on the native onnxruntime
backend instead.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnxruntime as ort
import triton_python_backend_utils as pb_utils

INPUT, OUTPUT = "input", "logits"


class TritonPythonModel:
    def initialize(self, args: dict) -> None:
        config = json.loads(args["model_config"])
        parameters = {k: v["string_value"] for k, v in config.get("parameters", {}).items()}
        options = ort.SessionOptions()
        options.intra_op_num_threads = int(parameters.get("intra_op_threads", 2))
        options.inter_op_num_threads = 1
        # Spinning threads burn the cores the detector and the other network need.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        path = Path(args["model_repository"]) / args["model_version"] / "model.onnx"
        # Comma-separated, by preference; e.g. "CUDAExecutionProvider,CPUExecutionProvider" where
        # onnxruntime-gpu is installed (bench/gpu.sh). CPU when unset.
        providers = [p for p in parameters.get("onnx_providers", "CPUExecutionProvider").split(",") if p]
        self.session = ort.InferenceSession(str(path), options, providers=providers)

    def execute(self, requests: list) -> list:
        batches = [pb_utils.get_input_tensor_by_name(r, INPUT).as_numpy() for r in requests]
        try:
            (result,) = self.session.run([OUTPUT], {INPUT: np.concatenate(batches).astype(np.float32)})
        except Exception as error:
            failure = pb_utils.TritonError(f"ONNX Runtime: {error}")
            return [pb_utils.InferenceResponse(error=failure) for _ in requests]
        splits = np.cumsum([len(b) for b in batches])[:-1]
        return [
            pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor(OUTPUT, part)])
            for part in np.split(result, splits)
        ]
