"""Writing a prepared ONNX graph into the model repository: only once it answers as its source does.

Shared by the graphs `models prepare` derives from published ones (the detector rewritten for any
batch, the global recognizer renamed), so that a graph that fails its check never replaces a good one.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import onnx


def place_checked(
    model: onnx.ModelProto,
    target: Path,
    measure: Callable[[Path], float],
    refuse: Callable[[float], Exception | None],
) -> float:
    """Save `model` beside `target`, measure the saved file (`measure(path)` -> its error against the
    source), and replace `target` atomically unless `refuse(error)` gives an exception to raise;
    returns the measured error."""
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, temp_name = tempfile.mkstemp(prefix=".model.", suffix=".onnx.part", dir=target.parent)
    os.close(handle)
    temp_path = Path(temp_name)
    try:
        onnx.save(model, str(temp_path))
        error = measure(temp_path)
        problem = refuse(error)
        if problem is not None:
            raise problem
        temp_path.chmod(0o644)  # readable by a Triton container running as another user
        os.replace(temp_path, target)
    finally:
        temp_path.unlink(missing_ok=True)
    return error
