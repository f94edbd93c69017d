"""Settings files: JSON or YAML, by extension or by trying JSON then YAML; refused whole."""

from __future__ import annotations

from pathlib import Path

import pytest

from stream_worker.cameras.files import load_settings_file, parse_text
from stream_worker.contracts.cameras import CameraSettingsError, parse_settings

YAML = """\
display_name: Gate 1
masks:
  - [[0.0, 0.0], [0.3, 0.0], [0.3, 0.2], [0.0, 0.2]]   # the billboard
zones:
  - name: lane-1
    polygon: [[0.3, 0.4], [1.0, 0.4], [1.0, 1.0], [0.3, 1.0]]
min_plate_width: 40
plate_images: true
"""
JSON = (
    '{"display_name": "Gate 1", "masks": [[[0.0, 0.0], [0.3, 0.0], [0.3, 0.2], [0.0, 0.2]]],'
    ' "zones": [{"name": "lane-1", "polygon": [[0.3, 0.4], [1.0, 0.4], [1.0, 1.0], [0.3, 1.0]]}],'
    ' "min_plate_width": 40, "plate_images": true}'
)


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("name", "text"),
    [("gate.yaml", YAML), ("gate.yml", YAML), ("gate.json", JSON), ("gate.txt", JSON), ("gate", YAML)],
)
def test_json_and_yaml_give_the_same_settings(tmp_path, name, text):
    settings = load_settings_file(write(tmp_path, name, text))
    assert settings == parse_settings(
        {
            "display_name": "Gate 1",
            "masks": [[[0, 0], [0.3, 0], [0.3, 0.2], [0, 0.2]]],
            "zones": [{"name": "lane-1", "polygon": [[0.3, 0.4], [1, 0.4], [1, 1], [0.3, 1]]}],
            "min_plate_width": 40,
            "plate_images": True,
        }
    )


def test_json_is_also_yaml_under_a_yaml_name(tmp_path):
    assert load_settings_file(write(tmp_path, "gate.yaml", JSON)).min_plate_width == 40


def test_a_json_file_must_be_json(tmp_path):
    with pytest.raises(CameraSettingsError, match="is not valid JSON"):
        load_settings_file(write(tmp_path, "gate.json", YAML))


@pytest.mark.parametrize(
    ("name", "text", "words"),
    [
        ("gate.yaml", "", "is empty"),
        ("gate.json", "  \n", "is empty"),
        ("gate.yaml", "masks: [[[0, 0], [1, 0]\n", "is not valid JSON or YAML"),
        ("gate", "{not: json: nor yaml", "is not valid JSON or YAML"),
        ("gate.yaml", "- 1\n- 2\n", "must be a mapping of settings, not list"),
        ("gate.yaml", "min_plate_width: 0\nplate_images: maybe\n", "min_plate_width"),
    ],
)
def test_bad_files_are_refused_naming_the_file(tmp_path, name, text, words):
    path = write(tmp_path, name, text)
    with pytest.raises(CameraSettingsError) as caught:
        load_settings_file(path)
    assert str(caught.value).startswith(f"{path} refused: ")
    assert any(words in problem for problem in caught.value.problems), caught.value.problems


def test_an_unreadable_file(tmp_path):
    with pytest.raises(CameraSettingsError, match="cannot read it"):
        load_settings_file(tmp_path / "absent.yaml")
    (tmp_path / "latin1.json").write_bytes(b'{"display_name": "\xe9"}')
    with pytest.raises(CameraSettingsError, match="cannot read it"):
        load_settings_file(tmp_path / "latin1.json")


def test_yaml_booleans_are_booleans_but_quoted_strings_are_not():
    assert parse_settings(parse_text("plate_images: yes\n", ".yaml")).plate_images is True
    with pytest.raises(CameraSettingsError, match="plate_images"):
        parse_settings(parse_text("plate_images: 'yes'\n", ".yaml"))


def test_the_documented_example_file_is_valid():
    page = (Path(__file__).resolve().parents[2] / "docs" / "cameras.md").read_text(encoding="utf-8")
    section = page.split("## Camera settings", 1)[1].split("\n## ", 1)[0]
    example = section.split("```yaml\n", 1)[1].split("```", 1)[0]
    settings = parse_settings(parse_text(example, ".yaml", "docs/cameras.md example"))
    assert len(settings.masks) == 2 and [zone.name for zone in settings.zones] == ["lane-1"]
    assert settings.min_plate_width == 24 and settings.plate_images is False
