"""The tensor contract of `plate_recognition` and of the detector it calls, stated once.

`model.py` builds its answer from `OUTPUTS` (names, order and dtypes); `config.pbtxt` (both
variants), the client (`stream_worker/triton_client.py`) and the detector's configs and ONNX graph
are checked against this file by tests/model_repository/test_contract.py. No Triton import.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, slots=True)
class TensorSpec:
    name: str
    triton_type: str  # as config.pbtxt spells it
    dtype: type  # what the model hands Triton
    dims: tuple[int, ...]  # -1: variable
    optional: bool = False  # an input a client may leave out (config.pbtxt's `optional: true`)


IMAGES = TensorSpec("images", "TYPE_STRING", np.object_, (-1,))  # one JPEG per element
# One per frame: whether to answer its plates' pictures (`plate_image`). Optional, so that clients
# that do not know it work as before, and a request without it costs no picture.
PLATE_IMAGES = TensorSpec("plate_images", "TYPE_BOOL", np.bool_, (-1,), optional=True)
# One per frame: the camera's mask polygons as JSON (masks.py), b"" for none. Masked plates are
# dropped before their crop and counted in `frame_masked`. Optional, like `plate_images`.
PLATE_MASKS = TensorSpec("plate_masks", "TYPE_STRING", np.object_, (-1,), optional=True)
INPUTS = (IMAGES, PLATE_IMAGES, PLATE_MASKS)
OUTPUTS = (
    # per plate, all frames' plates in order
    TensorSpec("plate_frame", "TYPE_INT32", np.int32, (-1,)),
    TensorSpec("plate_box", "TYPE_FP32", np.float32, (-1, 4)),
    TensorSpec("plate_corners", "TYPE_FP32", np.float32, (-1, 4, 2)),
    TensorSpec("plate_text", "TYPE_STRING", np.object_, (-1,)),
    TensorSpec("plate_confidence", "TYPE_FP32", np.float32, (-1,)),
    TensorSpec("plate_character_confidences", "TYPE_FP32", np.float32, (-1,)),  # all plates' flattened
    TensorSpec("plate_detection_score", "TYPE_FP32", np.float32, (-1,)),
    TensorSpec("plate_layout", "TYPE_STRING", np.object_, (-1,)),
    # the plate's picture: a JPEG of at most pictures.PICTURE_MAX_BYTES, b"" unless its frame asked
    TensorSpec("plate_image", "TYPE_STRING", np.object_, (-1,)),
    # per frame
    TensorSpec("frame_status", "TYPE_STRING", np.object_, (-1,)),
    TensorSpec("frame_size", "TYPE_INT32", np.int32, (-1, 2)),
    TensorSpec("frame_masked", "TYPE_INT32", np.int32, (-1,)),  # plates dropped by its plate_masks
)

# plate_detector: letterboxed uint8 BGR canvases [B, H, W, 3] (H, W multiples of 32) in; each
# canvas's best rows [B, K, 15] out (detector_graph.py, which writes the ONNX graph).
DETECTOR_IMAGES = TensorSpec("images", "TYPE_UINT8", np.uint8, (-1, -1, 3))
DETECTOR_ROWS = TensorSpec("detections", "TYPE_FP32", np.float32, (-1, 15))
DETECTOR_ROW_WIDTH = DETECTOR_ROWS.dims[-1]


def output_arrays(values: dict[str, object]) -> list[tuple[str, np.ndarray]]:
    """`values` by output name as the contract's arrays, in its order; refuses a missing or extra name."""
    if set(values) != {spec.name for spec in OUTPUTS}:
        raise KeyError(f"outputs {sorted(values)} do not match the contract's {[s.name for s in OUTPUTS]}")
    return [(spec.name, np.asarray(values[spec.name], dtype=spec.dtype)) for spec in OUTPUTS]
