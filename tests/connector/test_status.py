import orjson
import pytest

from stream_worker.cameras.status import ENDED, CameraStatus, decode_status, is_stale
from stream_worker.connector.reader import CameraStats
from stream_worker.connector.states import CameraState
from stream_worker.connector.status import RateMeter, snapshot
from stream_worker.connector.status_view import status_lines

NOW = 1_800_000_000.0


def status(camera_id: str = "gate-1", **changes: object) -> CameraStatus:
    stats = CameraStats(
        state=CameraState.STREAMING, state_since=NOW - 30, decoded=250, sampled=50, motion=10, static=40
    )
    stats.published, stats.last_frame_at = 20, NOW - 0.1
    record = snapshot(camera_id, stats, 3, "rtsp://${U}:${P}@10.0.0.5/s", "pod-0", (25.0, 4.0), True, NOW)
    return CameraStatus(**{**record.__dict__, **changes})


def test_a_status_record_round_trips_through_json():
    record = status()
    key, back = decode_status(b"gate-1", record.to_json())
    assert key == "gate-1" and back == record
    assert back.motion_share == 0.2 and back.frames_dropped == 3 and back.source.startswith("rtsp://${U}")
    assert decode_status(b"gate-1", None) == ("gate-1", None)


@pytest.mark.parametrize("value", [b"[]", b"not json", b'{"camera_id": "x", "surprise": 1}'])
def test_records_that_are_not_statuses_are_refused(value):
    with pytest.raises(ValueError):
        decode_status(b"x", value)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("decoded_fps", "fast"),
        ("frames_published", 1.5),
        ("reconnects", True),
        ("state", 7),
        ("last_error", ["x"]),
        ("updated_at", None),
        ("motion_share", "half"),
        ("frames_dropped", 10**30 * 1.0),
    ],
)
def test_a_field_of_the_wrong_type_refuses_the_record_without_showing_its_value(field, value):
    record = orjson.loads(status().to_json())
    with pytest.raises(ValueError, match=f"'{field}'") as refused:
        decode_status(b"gate-1", orjson.dumps({**record, field: value}))
    assert str(value) not in str(refused.value)


def test_long_texts_are_cut_and_unknown_or_later_fields_tolerated():
    record = orjson.loads(status().to_json())
    del record["static_markers"]  # an older connector's record
    record.update(last_error="E" * 1_000_000, source="s" * 5000, shed_frames=12, lag={"s": 3})
    _, back = decode_status(b"gate-1", orjson.dumps(record))
    assert len(back.last_error) == len(back.source) == 1000 and back.last_error.endswith("…")
    assert back.static_markers is None and back.decoded_fps == 25.0
    with pytest.raises(ValueError, match="'reconnects' missing"):
        decode_status(b"gate-1", orjson.dumps({k: v for k, v in record.items() if k != "reconnects"}))
    with pytest.raises(ValueError, match="key longer"):
        decode_status(b"k" * 300, None)


def test_rates_between_two_records():
    meter = RateMeter()
    assert meter.rate(100, NOW) == 0.0
    assert meter.rate(150, NOW + 10) == 5.0
    assert meter.rate(10, NOW + 20) == 0.0  # a new reader's counter started again


def test_a_record_not_renewed_for_three_intervals_is_stale():
    assert not is_stale(status(), 5.0, NOW + 14)
    assert is_stale(status(), 5.0, NOW + 16)
    assert not is_stale(status(state="ended"), 5.0, NOW + 1000)


def test_the_table_shows_each_cameras_state_and_its_own_error():
    rows = status_lines(
        [
            status(
                "b-cam", state="unauthorized", last_error="HTTPUnauthorizedError: 401 'rtsp://***:***@h/s'"
            ),
            status("a-cam"),
        ],
        as_json=False,
        now=NOW + 1,
    )
    assert rows[0].split()[:3] == ["CAMERA", "STATE", "FOR"]
    assert rows[1].startswith("a-cam") and rows[1].split()[1] == "streaming" and rows[1].endswith("-")
    assert rows[2].startswith("b-cam") and "unauthorized" in rows[2] and rows[2].endswith("@h/s'")
    lines = status_lines([status()], as_json=True, now=NOW + 100)
    assert orjson.loads(lines[0])["stale"] is True
    assert status_lines([], as_json=False, now=NOW) == ["no camera has a status yet"]


def test_a_camera_that_sheds_shows_its_published_of_offered_rate_shed_count_and_delay():
    shedding = status("dash", published_fps=4.0, offered_fps=10.0, frames_shed=600, delay_s=2.34)
    rows = status_lines([shedding, status("gate")], as_json=False, now=NOW + 1)
    header = rows[0].split()
    dash = dict(zip(header, rows[1].replace("4 of 10", "4_of_10").split(), strict=False))
    assert (dash["OUT/S"], dash["SHED"], dash["DELAY"]) == ("4_of_10", "600", "2.3s")
    gate = dict(zip(header, rows[2].split(), strict=False))
    assert (gate["OUT/S"], gate["SHED"], gate["DELAY"]) == ("4", "0", "-")
    older = status("old", offered_fps=None, frames_shed=None, frames_offered=None)
    assert dict(zip(header, status_lines([older], False, NOW + 1)[1].split(), strict=False))["SHED"] == "-"


def test_the_status_records_ended_is_the_connectors_ended_state() -> None:
    # cameras/status.py may not import the connector's states: the two values must stay the same.
    assert CameraState.ENDED.value == ENDED
