"""`media`: OpenCV (and ONNX Runtime) stay optional; the worker and its tools run without them."""

from __future__ import annotations

import pkgutil
import subprocess
import sys
import textwrap

import pytest

import stream_worker
from stream_worker.media import MediaSupportMissing, opencv

# Run first in a fresh interpreter: any import of these packages fails, as on a worker-only install.
WITHOUT_EXTRAS = textwrap.dedent(
    """
    import sys

    class _Missing:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in {"cv2", "onnxruntime", "torch", "onnx"}:
                raise ModuleNotFoundError(f"No module named {name!r} (hidden by the test)")
            return None

    sys.meta_path.insert(0, _Missing())
    """
)

# Modules that may need the extras to import: the ONNX export (torch, ONNX Runtime) and the
# detector's graph rewrite (onnx, ONNX Runtime), both only run by `models prepare`.
NEEDS_EXTRAS = {
    "stream_worker.nets.export",
    "stream_worker.nets.stn",
    "stream_worker.nets.lprnet",
    "stream_worker.nets.detector_graph",
    "stream_worker.nets.detector_shuffles",  # models prepare only (onnx): part of the rewrite
    "stream_worker.nets.global_ocr",  # models prepare only (onnx, onnxruntime)
    "stream_worker.nets.placing",
    "stream_worker.nets.denormals",  # models prepare only (onnx): the built graphs' check
    "stream_worker.nets.quantize",  # models prepare only (onnxruntime's quantizer): LPRNet's INT8
    "stream_worker.nets.synthetic_plates",  # models prepare only (OpenCV): INT8 calibration plates
}


def run_without_extras(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", WITHOUT_EXTRAS + textwrap.dedent(code), *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_every_module_but_the_export_imports_without_opencv_or_onnxruntime():
    modules = pkgutil.walk_packages(stream_worker.__path__, "stream_worker.")
    names = [info.name for info in modules if info.name != "stream_worker.__main__"]  # runs the CLI
    assert "stream_worker.worker.app" in names
    code = """
        import importlib, sys
        failed = []
        for name in sys.argv[1:]:
            try:
                importlib.import_module(name)
            except ImportError:
                failed.append(name)
        print(" ".join(failed))
    """
    done = run_without_extras(code, *names)
    assert done.returncode == 0, done.stderr
    assert set(done.stdout.split()) <= NEEDS_EXTRAS


def test_the_hiding_works(tmp_path):
    done = run_without_extras("import cv2")
    assert done.returncode == 1
    assert "hidden by the test" in done.stderr


def test_recognize_annotate_without_opencv_says_which_extra_before_asking_triton(tmp_path):
    image = tmp_path / "frame.jpg"
    image.write_bytes(b"\xff\xd8 not asked")
    code = """
        import sys
        from pathlib import Path
        from stream_worker.tools.recognize import RecognizeError, run
        try:
            # Port 9 (discard): reaching Triton would fail with exit 3, not 2.
            run([Path(sys.argv[1])], "127.0.0.1:9", 1.0, Path(sys.argv[2]), print, print)
        except RecognizeError as error:
            print(error.exit_code, error)
    """
    done = run_without_extras(code, str(image), str(tmp_path / "annotated"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("2 recognize --annotate needs OpenCV"), done.stdout
    assert "stream-worker[media]" in done.stdout


def test_produce_from_a_video_without_opencv_says_which_extra(tmp_path):
    video = tmp_path / "clip.mp4"
    video.write_bytes(b"not checked")
    jpeg = tmp_path / "frame.jpg"
    jpeg.write_bytes(b"\xff\xd8")
    code = """
        import sys
        from pathlib import Path
        from stream_worker.tools.produce import FrameSourceError, check_sources
        check_sources([Path(sys.argv[1]), Path(sys.argv[2]).parent])  # JPEGs and folders need no OpenCV
        try:
            check_sources([Path(sys.argv[2])])
        except FrameSourceError as error:
            print(error)
    """
    done = run_without_extras(code, str(jpeg), str(video))
    assert done.returncode == 0, done.stderr
    assert f"reading {video} as a video needs OpenCV" in done.stdout
    assert "stream-worker[media]" in done.stdout


def test_opencv_is_returned_when_installed():
    assert opencv("anything").__name__ == "cv2"
    assert issubclass(MediaSupportMissing, RuntimeError)


@pytest.mark.parametrize("command", ["run", "produce", "tail", "recognize", "schemas"])
def test_worker_commands_show_help_without_the_extras(command):
    done = run_without_extras(
        "from stream_worker.cli import app; app([sys.argv[1], '--help'], standalone_mode=False)", command
    )
    assert done.returncode == 0, done.stderr
    assert "usage" in done.stdout.lower()
