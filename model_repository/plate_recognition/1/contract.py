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
# One per frame: which recognizers read its plates, b"lprnet" | b"global" | b"lprnet,global" (any
# order, comma-separated); absent or b"" = b"lprnet", today's reading. Another value fails the request.
PLATE_RECOGNIZERS = TensorSpec("plate_recognizers", "TYPE_STRING", np.object_, (-1,), optional=True)
# One per frame: the frame is itself a plate crop (eval over crop folders): not detected, one plate
# whose box is the whole image, read without crop margins.
FRAME_IS_PLATE = TensorSpec("frame_is_plate", "TYPE_BOOL", np.bool_, (-1,), optional=True)
# One per frame: the detector's scales for it, b"1.0,0.5,3.0" (detections.py: up to 4.0, for dash
# cameras' small, distant plates); absent or b"" = the model's `detector_scales`. A bad value fails
# the request with the reason.
DETECTOR_SCALES = TensorSpec("detector_scales", "TYPE_STRING", np.object_, (-1,), optional=True)
INPUTS = (IMAGES, PLATE_IMAGES, PLATE_MASKS, PLATE_RECOGNIZERS, FRAME_IS_PLATE, DETECTOR_SCALES)

# The recognizers a frame may ask for, by the names `plate_recognizers` uses, in the order they are
# reported; `lprnet` (STN + LPRNet, Russian) is the default.
LPRNET, GLOBAL = "lprnet", "global"
RECOGNIZERS = (LPRNET, GLOBAL)
DEFAULT_RECOGNIZERS = (LPRNET,)
# LPRNet's CTC output: 18 time steps of 23 classes (`0-9ABEKMHOPCTYX`, 22 = blank).
LPRNET_STEPS, LPRNET_CLASSES = 18, 23
# global_ocr (fast-plate-ocr's CCT, cct_xs_v1_global.onnx): 9 slots of 37 classes, `_` pads.
GLOBAL_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_"
GLOBAL_PAD = "_"
GLOBAL_SLOTS, GLOBAL_CLASSES = 9, len(GLOBAL_ALPHABET)
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
    # LPRNet's softmax per time step (time-major), zeros where it did not run for the plate
    TensorSpec("plate_lprnet_probs", "TYPE_FP32", np.float32, (-1, LPRNET_STEPS, LPRNET_CLASSES)),
    # global_ocr's softmax per slot, zeros where it did not run for the plate
    TensorSpec("plate_global_probs", "TYPE_FP32", np.float32, (-1, GLOBAL_SLOTS, GLOBAL_CLASSES)),
    # which recognizers read the plate: b"lprnet", b"global" or b"lprnet,global"
    TensorSpec("plate_recognizers", "TYPE_STRING", np.object_, (-1,)),
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

# global_ocr: plate crops uint8 RGB [B, 64, 128, 3] (the 1/255 scaling is inside the graph) in; the
# softmax per slot [B, 9, 37] out (stream_worker/nets/global_ocr.py renames the published output).
GLOBAL_OCR_INPUT = TensorSpec("input", "TYPE_UINT8", np.uint8, (64, 128, 3))
GLOBAL_OCR_OUTPUT = TensorSpec("probabilities", "TYPE_FP32", np.float32, (GLOBAL_SLOTS, GLOBAL_CLASSES))


def output_arrays(values: dict[str, object]) -> list[tuple[str, np.ndarray]]:
    """`values` by output name as the contract's arrays, in its order; refuses a missing or extra name."""
    if set(values) != {spec.name for spec in OUTPUTS}:
        raise KeyError(f"outputs {sorted(values)} do not match the contract's {[s.name for s in OUTPUTS]}")
    return [(spec.name, np.asarray(values[spec.name], dtype=spec.dtype)) for spec in OUTPUTS]
