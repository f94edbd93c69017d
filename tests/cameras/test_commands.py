"""`stream-worker cameras` on the real local broker: set, get, list, remove; bad input writes
nothing."""

from __future__ import annotations

import time
from pathlib import Path

import orjson
import pytest
import yaml
from typer.testing import CliRunner

from stream_worker.cameras.actions import summary
from stream_worker.cameras.status import CameraStatus
from stream_worker.cameras.store import read_cameras
from stream_worker.cli import app
from stream_worker.contracts.cameras import CameraSettings, parse_settings
from stream_worker.service.compacted import write_compacted

runner = CliRunner()
CLOSED = "127.0.0.1:9"  # nothing listens there
GATE_YAML = """\
display_name: Gate 1
masks:
  - [[0.0, 0.0], [0.3, 0.0], [0.3, 0.2], [0.0, 0.2]]
zones:
  - name: lane-1
    polygon: [[0.3, 0.4], [1.0, 0.4], [1.0, 1.0], [0.3, 1.0]]
min_plate_width: 40
plate_images: true
"""


def _cameras(bootstrap: str, topic: str, *args: str):
    return runner.invoke(app, ["cameras", *args, "--bootstrap-servers", bootstrap, "--topic", topic])


def _file(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


@pytest.mark.integration
def test_set_get_list_remove(kafka_bootstrap: str, unique_name: str, tmp_path: Path) -> None:
    gate = _file(tmp_path, "gate.yaml", GATE_YAML)
    result = _cameras(kafka_bootstrap, unique_name, "set", "gate-1", "--file", gate)
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == (
        "set gate-1: 1 mask(s), 1 zone(s) (lane-1), min plate width 40 px, plate pictures on"
    )
    yard = _file(
        tmp_path,
        "yard.json",
        '{"min_plate_width": 25, "region": "ru", "source": {"url": "rtsp://${U}:${P}@10.0.0.5/s1"}, '
        '"site": {"name": "depot", "role": "exit"}}',
    )
    assert _cameras(kafka_bootstrap, unique_name, "set", "yard", "--file", yard).exit_code == 0

    got = _cameras(kafka_bootstrap, unique_name, "get", "gate-1")
    assert got.exit_code == 0, got.output
    settings = CameraSettings.model_validate_json(got.stdout)
    assert settings.display_name == "Gate 1" and settings.zones[0].name == "lane-1"
    # What `get` prints is a file `set` takes back.
    again = _file(tmp_path, "again.json", got.stdout)
    assert _cameras(kafka_bootstrap, unique_name, "set", "gate-2", "--file", again).exit_code == 0

    listed = _cameras(kafka_bootstrap, unique_name, "list", "--json")
    assert listed.exit_code == 0, listed.output
    lines = [orjson.loads(line) for line in listed.stdout.splitlines()]
    assert [line["camera_id"] for line in lines] == ["gate-1", "gate-2", "yard"]
    assert lines[0]["settings"] == lines[1]["settings"] == orjson.loads(settings.to_json())
    assert lines[2]["settings"]["min_plate_width"] == 25

    status = CameraStatus("yard", "ended", 1.0, "EOFError: the stream ended", "rtsp://${U}:${P}@10.0.0.5/s1",
                          "pod-0", time.time(), 0.0, 0.0, 10, 10, 0, 0, 0, 0, None, None)  # fmt: skip
    write_compacted(kafka_bootstrap, f"{unique_name}-status", [(b"yard", status.to_json())])
    table = _cameras(kafka_bootstrap, unique_name, "list", "--status-topic", f"{unique_name}-status")
    assert table.exit_code == 0
    rows = [line.split() for line in table.stdout.splitlines()]
    assert rows[0] == ["CAMERA", "STATE", "REGION", "SITE", "MASKS", "ZONES", "MIN_WIDTH", "PICTURES",
                       "SCALES", "SOURCE", "DISPLAY_NAME"]  # fmt: skip
    assert rows[1] == ["gate-1", "-", "-", "-", "1", "lane-1", "40", "yes", "-", "-", "Gate", "1"]
    assert rows[3] == [
        "yard",
        "ended",
        "ru",
        "depot:exit",
        "0",
        "-",
        "25",
        "no",
        "-",
        "rtsp://***@10.0.0.5/s1",
    ]

    removed = _cameras(kafka_bootstrap, unique_name, "remove", "gate-1")
    assert removed.exit_code == 0, removed.output
    assert removed.stdout.strip() == "removed the settings of gate-1: back to the defaults"
    snapshot = read_cameras(kafka_bootstrap, unique_name)
    assert sorted(snapshot.values) == ["gate-2", "yard"]
    assert snapshot.records == 4  # three settings and the tombstone

    missing = _cameras(kafka_bootstrap, unique_name, "remove", "gate-1")
    assert missing.exit_code == 0 and "gate-1 has no settings; nothing written" in missing.stdout
    assert read_cameras(kafka_bootstrap, unique_name).records == 4

    defaults = _cameras(kafka_bootstrap, unique_name, "get", "gate-1")
    assert defaults.exit_code == 0 and "has no settings: it uses the defaults" in defaults.stderr
    assert CameraSettings.model_validate_json(defaults.stdout) == CameraSettings()


@pytest.mark.integration
def test_a_bad_file_writes_nothing_and_names_each_problem(
    kafka_bootstrap: str, unique_name: str, tmp_path: Path
) -> None:
    bad = _file(
        tmp_path,
        "bad.yaml",
        "masks:\n  - [[0, 0], [1, 0], [0, 1], [1, 1]]\n"
        "zones:\n  - {name: gate, polygon: [[0, 0], [1, 0], [1, 1.5]]}\n"
        "colour: red\n",
    )
    result = _cameras(kafka_bootstrap, unique_name, "set", "gate-1", "--file", bad)
    assert result.exit_code == 2
    assert f"error: {bad} refused, nothing written (3 problem(s)):" in result.stderr
    assert "masks[0]: not a simple polygon: edge 1 (point 1 to 2) crosses" in result.stderr
    assert "zones[0] ('gate') polygon point 2 y: Input should be less than or equal to 1" in result.stderr
    assert "colour: Extra inputs are not permitted" in result.stderr
    assert read_cameras(kafka_bootstrap, unique_name).topic_exists is False

    # A good camera's settings stay as they were when a bad file is refused for it.
    assert (
        _cameras(
            kafka_bootstrap, unique_name, "set", "gate-1", "--file", _file(tmp_path, "g.yaml", GATE_YAML)
        ).exit_code
        == 0
    )
    assert _cameras(kafka_bootstrap, unique_name, "set", "gate-1", "--file", bad).exit_code == 2
    snapshot = read_cameras(kafka_bootstrap, unique_name)
    assert snapshot.records == 1 and snapshot.values["gate-1"].min_plate_width == 40


@pytest.mark.integration
def test_list_of_a_missing_topic_is_empty(kafka_bootstrap: str, unique_name: str) -> None:
    listed = _cameras(kafka_bootstrap, unique_name, "list", "--json")
    assert listed.exit_code == 0 and listed.stdout == ""
    assert "does not exist yet" in listed.stderr
    table = _cameras(kafka_bootstrap, unique_name, "list")
    assert table.exit_code == 0 and "no camera has settings" in table.stderr


def test_bad_input_is_refused_before_the_broker(tmp_path: Path) -> None:
    good = _file(tmp_path, "gate.yaml", GATE_YAML)
    for args in (("set", " gate", "--file", good), ("remove", "")):
        result = _cameras(CLOSED, "cameras", *args)
        assert result.exit_code == 2, result.output
        assert "camera id" in result.stderr
    empty = _file(tmp_path, "empty.yaml", "")
    result = _cameras(CLOSED, "cameras", "set", "gate", "--file", empty)
    assert result.exit_code == 2 and "is empty" in result.stderr
    absent = _cameras(CLOSED, "cameras", "set", "gate", "--file", str(tmp_path / "absent.yaml"))
    assert absent.exit_code == 2  # typer's own check: the file must exist


@pytest.mark.parametrize(
    ("camera_id", "words"),
    [
        ("x" * 255, "has 255 characters, more than 64"),
        ("x?y#z", "'x?y#z' is not 1 to 64 of A-Z a-z 0-9 . _ -"),
        ("../cameras/gate-1/remove?", "'../cameras/gate-1/remove?' is not 1 to 64"),
        ("cam 2", "'cam 2' is not 1 to 64"),
    ],
)
def test_a_camera_id_outside_the_contract_is_refused(tmp_path: Path, camera_id: str, words: str) -> None:
    good = _file(tmp_path, "gate.yaml", GATE_YAML)
    for args in (("set", camera_id, "--file", good), ("remove", camera_id)):
        result = _cameras(CLOSED, "cameras", *args)
        assert result.exit_code == 2, result.output
        assert f"error: camera id {words}" in result.stderr


def test_an_unreachable_broker_exits_1(tmp_path: Path) -> None:
    good = _file(tmp_path, "gate.yaml", GATE_YAML)
    for args in (("set", "gate", "--file", good), ("get", "gate"), ("list",), ("remove", "gate")):
        result = runner.invoke(app, ["cameras", *args, "--bootstrap-servers", CLOSED, "--timeout", "1"])
        assert result.exit_code == 1, (args, result.output)
        assert result.stderr.startswith("error: "), args


def test_summary_words() -> None:
    site = CameraSettings.model_validate({"site": {"name": "depot", "role": "entry"}})
    assert summary(site).endswith(", plate pictures off, entry of site depot")
    assert summary(CameraSettings()) == ("0 mask(s), 0 zone(s), no minimum plate width, plate pictures off")
    assert summary(CameraSettings(detector_scales=(1.0, 0.5, 3.0))).endswith(
        "plate pictures off, detector scales 1.0,0.5,3.0"
    )
    settings = parse_settings(
        {
            "zones": [
                {"name": "a", "polygon": [[0, 0], [1, 0], [1, 1]]},
                {"name": "b", "polygon": [[0, 0], [1, 0], [1, 1]]},
            ]
        }
    )
    assert summary(settings).startswith("0 mask(s), 2 zone(s) (a, b), ")


@pytest.mark.integration
def test_set_region_alone_keeps_the_other_settings(
    kafka_bootstrap: str, unique_name: str, tmp_path: Path
) -> None:
    gate = _file(tmp_path, "gate.yaml", GATE_YAML)
    assert _cameras(kafka_bootstrap, unique_name, "set", "gate-1", "--file", gate).exit_code == 0
    result = _cameras(kafka_bootstrap, unique_name, "set", "gate-1", "--region", "us")
    assert result.exit_code == 0, result.output
    assert result.stdout.strip().endswith("plate pictures on, region us")
    stored = read_cameras(kafka_bootstrap, unique_name).values["gate-1"]
    assert stored == parse_settings({**yaml.safe_load(GATE_YAML), "region": "us"})
    # Over a file: the file's settings with the region given.
    yard = _file(tmp_path, "yard.json", '{"min_plate_width": 25, "region": "ru"}')
    assert (
        _cameras(kafka_bootstrap, unique_name, "set", "yard", "--file", yard, "--region", "auto").exit_code
        == 0
    )
    assert read_cameras(kafka_bootstrap, unique_name).values["yard"].region == "auto"


@pytest.mark.integration
def test_detector_scales_set_alone_over_a_file_shown_and_cleared(
    kafka_bootstrap: str, unique_name: str, tmp_path: Path
) -> None:
    """Dash cameras: `--detector-scales` as `--region` is, `default` clears them."""
    gate = _file(tmp_path, "gate.yaml", GATE_YAML)
    assert _cameras(kafka_bootstrap, unique_name, "set", "dash-1", "--file", gate).exit_code == 0
    result = _cameras(kafka_bootstrap, unique_name, "set", "dash-1", "--detector-scales", "1.0, 0.5,3")
    assert result.exit_code == 0, result.output
    assert result.stdout.strip().endswith("plate pictures on, detector scales 1.0,0.5,3.0")
    stored = read_cameras(kafka_bootstrap, unique_name).values["dash-1"]
    assert stored == parse_settings({**yaml.safe_load(GATE_YAML), "detector_scales": [1.0, 0.5, 3.0]})
    got = _cameras(kafka_bootstrap, unique_name, "get", "dash-1")
    assert orjson.loads(got.stdout)["detector_scales"] == [1.0, 0.5, 3.0]
    rows = [line.split() for line in _cameras(kafka_bootstrap, unique_name, "list").stdout.splitlines()]
    assert rows[0][:9] == [
        "CAMERA",
        "STATE",
        "REGION",
        "SITE",
        "MASKS",
        "ZONES",
        "MIN_WIDTH",
        "PICTURES",
        "SCALES",
    ]
    assert rows[1][:9] == ["dash-1", "-", "-", "-", "1", "lane-1", "40", "yes", "1.0,0.5,3.0"]
    # Over a file, with the region: both replace the file's.
    yard = _file(tmp_path, "yard.json", '{"min_plate_width": 25, "detector_scales": [2.0]}')
    flags = ("--file", yard, "--region", "eu", "--detector-scales", "1.0,0.5,3.0")
    assert _cameras(kafka_bootstrap, unique_name, "set", "yard", *flags).exit_code == 0
    stored = read_cameras(kafka_bootstrap, unique_name).values["yard"]
    assert (stored.min_plate_width, stored.region, stored.detector_scales) == (25, "eu", (1.0, 0.5, 3.0))
    # `default` clears them: the settings as they were before they were set.
    cleared = _cameras(kafka_bootstrap, unique_name, "set", "dash-1", "--detector-scales", "default")
    assert cleared.exit_code == 0 and "detector scales" not in cleared.stdout
    stored = read_cameras(kafka_bootstrap, unique_name).values["dash-1"]
    assert stored == parse_settings(yaml.safe_load(GATE_YAML))


@pytest.mark.parametrize(
    ("scales", "words"),
    [
        ("1.0,0.5,9", "detector_scales[2]: Input should be less than or equal to 4 (got 9.0)"),
        ("0", "detector_scales[0]: Input should be greater than 0"),
        ("1,1,1,1,1", "detector_scales: Tuple should have at most 4 items"),
        ("1.0,big", "'big' is not a number"),
        ("nan", "Input should be a finite number"),
    ],
)
def test_bad_detector_scales_are_refused_before_the_broker(tmp_path: Path, scales: str, words: str) -> None:
    """The contract's own limits, said with what is wanted; nothing written (the broker is never asked)."""
    good = _file(tmp_path, "gate.yaml", GATE_YAML)
    for args in (("--detector-scales", scales), ("--file", good, "--detector-scales", scales)):
        result = _cameras(CLOSED, "cameras", "set", "gate", *args)
        assert result.exit_code == 2, result.output
        assert result.stderr.startswith(f"error: --detector-scales {scales!r}: "), result.stderr
        assert words in result.stderr and "comma-separated numbers in (0, 4], or default" in result.stderr


def test_an_unknown_region_is_refused_before_the_broker() -> None:
    result = _cameras(CLOSED, "cameras", "set", "gate", "--region", "xx")
    assert result.exit_code == 2 and "unknown region 'xx'" in result.stderr
    neither = _cameras(CLOSED, "cameras", "set", "gate")
    assert neither.exit_code == 2 and "--region" in neither.stderr
