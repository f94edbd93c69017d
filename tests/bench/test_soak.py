"""bench soak for real at a toy length: `up` with one RTSP gate camera looping the van, measured
twice 30 s apart: every column in every row, the van's alerts delivered to the webhook, the report
and the PNG written. Then the pure pieces: which metrics count as shed frames, the pairs of alerts
too close in capture time."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson
import pytest

import bench.soak as soak
from bench.soak_probe import PAGES, Topics, lag_seconds, percentile, published_total, shed_total
from stream_worker.contracts import PlateAlert

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.mark.integration
@pytest.mark.timeout(420)
def test_a_short_real_soak_reports_every_column_and_draws_the_curves(
    rtsp_available: None, video_clips: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report, picture = tmp_path / "soak.json", tmp_path / "soak.png"
    argv = ["--cameras", "1", "--minutes", "1", "--interval", "30", "--requests", "2", "--allow-busy"]
    argv += ["--videos", str(video_clips[0].parent), "--report", str(report), "--plot", str(picture)]
    code = soak.main(argv)
    out = capsys.readouterr()
    assert code == 0, out.err  # a string, shown whole (the soak says why it stopped, with up's output)
    document = orjson.loads(report.read_bytes())
    rows = document["rows"]
    assert len(rows) == 2
    for row in rows:
        assert set(soak.COLUMNS) <= set(row), set(soak.COLUMNS) - set(row)
        assert row["pages_not_200"] == 0 and row["cli_status"]["exit"] == 0
        assert row["cli_status"]["via"] == "console", row["cli_status"]  # up's console answered
        assert set(row["pages"]) == set(PAGES)
        assert {"broker", "triton", "worker", "connector", "store"} <= set(row["rss_mib_by_child"])
        assert 0 < row["broker_mib"] <= row["data_mib"]
    last = rows[-1]
    assert last["published_fps"] > 0  # the connector's counter, as a rate between the two rows
    assert last["alerts"] >= 1 and last["webhook_posts"] >= 1 and last["sighting_age_s"] is not None
    assert document["cameras"][0]["plate"] == "H133OE123" and document["busy"] in (True, False)
    assert picture.read_bytes()[:8] == PNG_MAGIC
    header = out.out.splitlines()[0]
    assert all(column in header for column in soak.COLUMNS)


def test_shed_frames_are_counted_by_a_shed_counter_not_by_published_frames() -> None:
    published = {'stream_worker_connector_frames_published_total{camera="a"}': 90.0}
    assert shed_total(published) is None and published_total(published) == 90.0
    shed = {**published, 'stream_worker_connector_frames_shed_total{camera="a"}': 12.0}
    assert shed_total(shed) == 12.0
    assert lag_seconds(published) is None
    assert lag_seconds({"stream_worker_lag_seconds": 1.5, 'x_lag_seconds{p="1"}': 4.0}) == 4.0
    assert percentile([5.0, 1.0, 3.0, 2.0, 4.0], 0.5) == 3.0 and percentile([5.0, 1.0, 3.0], 0.95) == 5.0


def _alert(camera: str, seconds: float, number: int) -> bytes:
    at = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=seconds)
    return PlateAlert.model_validate(
        {
            "alert_id": f"00000000-0000-4000-8000-{number:012d}",
            "list": "soak", "label": None, "plate": "H133OE123", "match_kind": "exact", "distance": 0.0,
            "candidate": "H133OE123", "confidence": 0.9, "camera_id": camera,
            "frame_id": f"{camera}/{number}", "event_id": f"e{number}", "captured_at": at.isoformat(),
            "box": {"x1": 0, "y1": 0, "x2": 10, "y2": 5},
            "source": {"topic": "plates", "partition": 0, "offset": number},
            "frame_source": {"topic": "frames", "partition": 0, "offset": number},
            "alerted_at": at.isoformat(),
        }
    ).model_dump_json().encode()  # fmt: skip


class _Message:
    def __init__(self, topic: str, value: bytes) -> None:
        self._topic, self._value = topic, value

    def topic(self) -> str:
        return self._topic

    def value(self) -> bytes:
        return self._value


def test_alerts_of_one_pass_closer_than_6_s_are_counted_per_camera_and_a_replay_once() -> None:
    topics = Topics({"H133OE123"})
    for camera, seconds, number in [
        ("gate-1", 0, 1),
        ("gate-1", 2.5, 2),
        ("gate-1", 10, 3),
        ("gate-2", 1, 4),
    ]:
        topics.handle(_Message("alerts", _alert(camera, seconds, number)), 0.0)  # type: ignore[arg-type]
    topics.handle(_Message("alerts", _alert("gate-1", 0, 1)), 0.0)  # type: ignore[arg-type]  # a replay
    topics.handle(_Message("alerts", b"not json"), 0.0)  # type: ignore[arg-type]
    assert topics.alert_figures() == {
        "gate-1": {"alerts": 3, "close_pairs": 1, "origin_sighting": 0},
        "gate-2": {"alerts": 1, "close_pairs": 0, "origin_sighting": 0},
    }
    assert topics.invalid == 1
