"""A network in ONNX (`stn`, `lprnet`, `plate_detector`): one input tensor in, one output tensor out.

This machine's variant: Python backend + ONNX Runtime CPU. `stn/1/model.py` and
`plate_detector/1/model.py` are links to this file: each model runs `model.onnx` from its own
version folder (written by `stream-worker models prepare`) and takes the tensor names from its
config.pbtxt. The input goes to ONNX Runtime in the config's data type as Triton delivers it
(float32 crops for stn/lprnet, uint8 frames for plate_detector), never converted here.

Triton's dynamic batcher hands several requests to one execute(): they are concatenated into one
ONNX Runtime run and split back. The GPU variant (configs/gpu.pbtxt) runs the same file on the
native onnxruntime backend instead. Which file: graphs.py (beside this file's target), e.g. LPRNet's
INT8 graph on CPUs with VNNI.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import numpy as np
import onnxruntime as ort
import triton_python_backend_utils as pb_utils


def _graphs() -> ModuleType:
    """graphs.py beside this file: lprnet/1/graphs.py, which stn/1, plate_detector/1 and global_ocr/1
    link as they link model.py, so that a copy of the repository that follows links keeps both."""
    path = Path(__file__).resolve().parent / "graphs.py"
    spec = importlib.util.spec_from_file_location("onnx_model_graphs", path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class TritonPythonModel:
    def initialize(self, args: dict) -> None:
        config = json.loads(args["model_config"])
        self.input_name = config["input"][0]["name"]
        self.output_name = config["output"][0]["name"]
        parameters = {k: v["string_value"] for k, v in config.get("parameters", {}).items()}
        options = ort.SessionOptions()
        options.intra_op_num_threads = int(parameters.get("intra_op_threads", 2))
        options.inter_op_num_threads = 1
        # Spinning threads burn the cores the other models need.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        # Comma-separated, by preference; e.g. "CUDAExecutionProvider,CPUExecutionProvider" where
        # onnxruntime-gpu is installed (bench/gpu.sh). CPU when unset.
        providers = [p for p in parameters.get("onnx_providers", "CPUExecutionProvider").split(",") if p]
        graphs = _graphs()
        version_dir = Path(args["model_repository"]) / args["model_version"]
        path = graphs.onnx_file(version_dir, parameters, providers, graphs.cpu_flags())
        self.graph_file = path.name
        self.session = ort.InferenceSession(str(path), options, providers=providers)
        # Largest batch one ONNX Runtime run takes (0: all): Triton's batch is cut into runs of this
        # size, since a network's activations grow with the batch and ONNX Runtime keeps its peak
        # (the detector at batch 32 took 1.2 GB). On a CPU, runs beyond a few images gain nothing.
        self.run_batch_size = int(parameters.get("run_batch_size", 0))

    def execute(self, requests: list) -> list:
        batches = [pb_utils.get_input_tensor_by_name(r, self.input_name).as_numpy() for r in requests]
        # Triton batches only requests of one shape; requests of several shapes (never seen) run apart.
        if len({b.shape[1:] for b in batches}) > 1:
            return [response for r in requests for response in self.execute([r])]
        try:
            batch = batches[0] if len(batches) == 1 else np.concatenate(batches)
            step = self.run_batch_size or len(batch) or 1
            result = np.concatenate(
                [
                    self.session.run([self.output_name], {self.input_name: batch[start : start + step]})[0]
                    for start in range(0, max(len(batch), 1), step)
                ]
            )
        except Exception as error:
            failure = pb_utils.TritonError(f"ONNX Runtime: {error}")
            return [pb_utils.InferenceResponse(error=failure) for _ in requests]
        splits = np.cumsum([len(b) for b in batches])[:-1]
        return [
            pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor(self.output_name, part)])
            for part in np.split(result, splits)
        ]
