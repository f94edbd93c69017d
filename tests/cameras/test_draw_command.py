"""`stream-worker cameras draw`: a settings file (no broker) or a camera's stored settings (the real
local broker) drawn over a copy of a frame; bad input exits 2 naming the problem, writing nothing."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest
from typer.testing import CliRunner

from stream_worker.cameras.drawing import MASK_ALPHA, MASK_COLOUR, zone_colour
from stream_worker.cli import app

runner = CliRunner()
CLOSED = "127.0.0.1:9"  # nothing listens there
GREY = 128
GATE_YAML = """\
masks:
  - [[0.0, 0.0], [0.5, 0.0], [0.5, 0.5], [0.0, 0.5]]
zones:
  - name: lane-1
    polygon: [[0.5, 0.5], [1.0, 0.5], [1.0, 1.0], [0.5, 1.0]]
"""
TINT = np.rint(GREY * (1 - MASK_ALPHA) + np.asarray(MASK_COLOUR) * MASK_ALPHA)


def _draw(*args: str, bootstrap: str = CLOSED, topic: str = "cameras"):
    return runner.invoke(
        app, ["cameras", "draw", *args, "--bootstrap-servers", bootstrap, "--topic", topic, "--timeout", "5"]
    )


def _write(path: Path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    return str(path)


def _frame(path: Path, image: np.ndarray | None = None) -> str:
    cv2.imwrite(str(path), np.full((200, 300, 3), GREY, np.uint8) if image is None else image)
    return str(path)


def _check_drawn(path: Path, lossless: bool) -> None:
    drawn = cv2.imread(str(path), cv2.IMREAD_COLOR)
    assert drawn is not None and drawn.shape == (200, 300, 3)
    tolerance = 0 if lossless else 6
    assert np.abs(drawn[50, 75].astype(int) - TINT).max() <= tolerance  # inside the mask
    assert np.abs(drawn[50, 225].astype(int) - GREY).max() <= tolerance  # outside everything
    assert np.abs(drawn[199, 225].astype(int) - zone_colour(0)).max() <= 3 * tolerance  # lane-1's edge


@pytest.mark.parametrize("suffix", [".png", ".jpg", ".JPEG"])
def test_draw_a_file_without_a_broker(tmp_path: Path, suffix: str) -> None:
    image = _frame(tmp_path / "frame.png")
    before = Path(image).read_bytes()
    settings = _write(tmp_path / "gate.yaml", GATE_YAML)
    out = tmp_path / f"drawn{suffix}"
    result = _draw(image, "--file", settings, "--out", str(out))
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == f"wrote {out} (300x200): 1 mask(s), 1 zone(s) (lane-1) of {settings}"
    assert Path(image).read_bytes() == before
    assert out.read_bytes()[:4] == (b"\x89PNG" if suffix == ".png" else b"\xff\xd8\xff\xe0")
    _check_drawn(out, lossless=suffix == ".png")


def test_a_grayscale_png_with_alpha_is_drawn_in_colour(tmp_path: Path) -> None:
    gray_alpha = np.zeros((200, 300, 4), np.uint8)
    gray_alpha[..., :3], gray_alpha[..., 3] = GREY, 255
    image = _frame(tmp_path / "frame.png", gray_alpha)
    assert cv2.imread(image, cv2.IMREAD_UNCHANGED).shape[2] == 4
    out = tmp_path / "drawn.png"
    settings = _write(tmp_path / "gate.json", '{"masks": [[[0, 0], [0.5, 0], [0.5, 0.5], [0, 0.5]]]}')
    assert _draw(image, "-f", settings, "-o", str(out)).exit_code == 0
    drawn = cv2.imread(str(out), cv2.IMREAD_UNCHANGED)
    assert drawn.shape == (200, 300, 3) and (drawn[50, 75] == TINT).all()


def test_a_bad_file_is_refused_as_set_refuses_it(tmp_path: Path) -> None:
    image = _frame(tmp_path / "frame.png")
    bad = _write(
        tmp_path / "bad.yaml",
        "masks:\n  - [[0, 0], [1, 0], [0, 1], [1, 1]]\n"
        "zones:\n  - {name: gate, polygon: [[0, 0], [1, 0], [1, 1.5]]}\n"
        "colour: red\n",
    )
    out = tmp_path / "drawn.png"
    drawn = _draw(image, "--file", bad, "--out", str(out))
    refused = runner.invoke(app, ["cameras", "set", "gate-1", "--file", bad, "--bootstrap-servers", CLOSED])
    assert drawn.exit_code == refused.exit_code == 2
    assert drawn.stderr == refused.stderr
    assert f"error: {bad} refused, nothing written (3 problem(s)):" in drawn.stderr
    assert "masks[0]: not a simple polygon" in drawn.stderr
    assert not out.exists()


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda tmp: _write(tmp / "notes.png", "not an image"), "cannot decode image"),
        (lambda tmp: _write(tmp / "empty.jpg", ""), "cannot decode image"),
    ],
)
def test_an_unreadable_image_exits_2(tmp_path: Path, make, message: str) -> None:
    settings = _write(tmp_path / "gate.yaml", GATE_YAML)
    image = make(tmp_path)
    out = tmp_path / "drawn.png"
    result = _draw(image, "--file", settings, "--out", str(out))
    assert result.exit_code == 2, result.output
    assert f"error: {message} {image}" in result.stderr
    assert not out.exists()


def test_other_bad_input_exits_2_before_the_broker(tmp_path: Path) -> None:
    image = _frame(tmp_path / "frame.png")
    settings = _write(tmp_path / "gate.yaml", GATE_YAML)
    out = str(tmp_path / "drawn.png")
    neither = _draw(image, "--out", out)
    both = _draw(image, "--file", settings, "--camera", "gate-1", "--out", out)
    for result in (neither, both):
        assert result.exit_code == 2 and "either --file FILE or --camera CAMERA" in result.stderr
    gif = _draw(image, "--file", settings, "--out", str(tmp_path / "drawn.gif"))
    assert gif.exit_code == 2 and "must end in .jpg, .jpeg, .png" in gif.stderr
    bad_id = _draw(image, "--camera", " gate", "--out", out)
    assert bad_id.exit_code == 2 and "camera id" in bad_id.stderr
    no_folder = _draw(image, "--file", settings, "--out", str(tmp_path / "absent" / "drawn.png"))
    assert no_folder.exit_code == 2 and "cannot write" in no_folder.stderr
    missing = _draw(str(tmp_path / "absent.jpg"), "--file", settings, "--out", out)
    assert missing.exit_code == 2  # typer's own check: the image must exist
    assert not Path(out).exists()


def test_an_unreachable_broker_exits_1(tmp_path: Path) -> None:
    image = _frame(tmp_path / "frame.png")
    out = tmp_path / "drawn.png"
    result = runner.invoke(
        app,
        [
            "cameras",
            "draw",
            image,
            "--camera",
            "gate-1",
            "--out",
            str(out),
            "--bootstrap-servers",
            CLOSED,
            "--timeout",
            "1",
        ],
    )
    assert result.exit_code == 1, result.output
    assert result.stderr.startswith("error: ")
    assert not out.exists()


@pytest.mark.integration
def test_draw_a_cameras_stored_settings(kafka_bootstrap: str, unique_name: str, tmp_path: Path) -> None:
    settings = _write(tmp_path / "gate.yaml", GATE_YAML)
    stored = runner.invoke(
        app,
        [
            "cameras",
            "set",
            "gate-1",
            "--file",
            settings,
            "--bootstrap-servers",
            kafka_bootstrap,
            "--topic",
            unique_name,
        ],
    )
    assert stored.exit_code == 0, stored.output
    image = _frame(tmp_path / "frame.png")
    out = tmp_path / "gate-1.png"
    result = _draw(
        image, "--camera", "gate-1", "--out", str(out), bootstrap=kafka_bootstrap, topic=unique_name
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == f"wrote {out} (300x200): 1 mask(s), 1 zone(s) (lane-1) of camera gate-1"
    _check_drawn(out, lossless=True)

    # A camera without settings: the copy is the frame as it is, and a note says why.
    plain = tmp_path / "yard.png"
    result = _draw(
        image, "--camera", "yard", "--out", str(plain), bootstrap=kafka_bootstrap, topic=unique_name
    )
    assert result.exit_code == 0, result.output
    assert "camera 'yard' has no settings" in result.stderr
    assert (cv2.imread(str(plain)) == GREY).all()
