"""`bench chaos`: the checker's rules (no servers), and a tiny run through the real command.

The tiny run has every part of the full one (two workers, a worker SIGKILL, a Triton SIGKILL and
restart, hostile frames of several kinds, the independent consumer and the same invariants) at a
size that takes well under a minute on an idle 2-core machine; its figures mean nothing.
"""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from bench.chaos_check import Output, Published, check, duplicate_bound, next_event_after
from bench.chaos_faults import Schedule
from bench.chaos_traffic import parse_output
from stream_worker.worker.events import event_id

TOPIC = "chaos.frames"


def valid(index: int, offset: int) -> Published:
    return Published(index, "valid", None, (0, offset), "cam00", f"chaos-{index}")


def hostile(index: int, offset: int, reason: str = "invalid_image") -> Published:
    return Published(index, "png", reason, (1, offset), "cam01", f"chaos-{index}")


def event_for(frame: Published, **changes: object) -> Output:
    fields = {
        "arrived": 1.0,
        "dead_letter": False,
        "source": frame.source,
        "event_id": event_id(TOPIC, *frame.source),
        "camera_id": frame.camera_id,
        "frame_id": frame.frame_id,
    }
    return Output(**{**fields, **changes})  # type: ignore[arg-type]


def dead_letter_for(frame: Published, reason: str = "invalid_image") -> Output:
    return Output(2.0, True, frame.source, reason=reason, stage="decode", detail="not a JPEG")


def test_every_frame_with_its_expected_outcome_passes_and_copies_count_as_duplicates() -> None:
    frames = [valid(0, 0), hostile(1, 0), valid(2, 1)]
    outputs = [event_for(frames[0]), event_for(frames[0]), dead_letter_for(frames[1])]
    outputs += [dead_letter_for(frames[1]), event_for(frames[2])]
    verdict = check(TOPIC, frames, outputs, bound=2)
    assert verdict["ok"], verdict["failure_samples"]
    assert verdict["duplicates"] == {
        "events": 1,
        "dead_letters": 1,
        "total": 2,
        "bound": 2,
        "within_bound": True,
    }
    rows = {row["kind"]: row for row in verdict["by_kind"]}
    assert rows["valid"]["ok"] == 2 and rows["png"]["dead_letter:invalid_image"] == 1
    assert not check(TOPIC, frames, outputs, bound=1)["ok"]  # over the bound


@pytest.mark.parametrize(
    ("outputs", "failure"),
    [
        ([], "valid_without_event"),
        ([dead_letter_for(valid(0, 0), "inference_failed")], "valid_with_dead_letter"),
        ([event_for(valid(0, 0), camera_id="cam07")], "event_not_matching_its_frame"),
        ([event_for(valid(0, 0), frame_id="other")], "event_not_matching_its_frame"),
        ([event_for(valid(0, 0), event_id="x")], "event_not_matching_its_frame"),
        ([event_for(valid(0, 0)), dead_letter_for(valid(0, 0))], "several_outcomes"),
    ],
)
def test_a_valid_frame_needs_exactly_its_event(outputs: list[Output], failure: str) -> None:
    verdict = check(TOPIC, [valid(0, 0)], outputs, bound=0)
    assert not verdict["ok"] and verdict["failures"][failure] == 1, verdict["failures"]
    assert verdict["failure_samples"][failure][0]["source"] == [0, 0]


@pytest.mark.parametrize(
    ("outputs", "failure"),
    [
        ([], "hostile_without_dead_letter"),
        ([event_for(hostile(1, 0))], "hostile_with_event"),
        ([dead_letter_for(hostile(1, 0), "empty_frame")], "dead_letter_with_wrong_reason"),
        ([Output(2.0, True, (1, 0), reason="invalid_image", detail="")], "dead_letter_with_wrong_reason"),
    ],
)
def test_a_hostile_frame_needs_one_dead_letter_with_its_reason(outputs: list[Output], failure: str) -> None:
    verdict = check(TOPIC, [hostile(1, 0)], outputs, bound=0)
    assert not verdict["ok"] and verdict["failures"][failure] == 1, verdict["failures"]


def test_outputs_of_no_published_frame_fail_the_run() -> None:
    frames = [valid(0, 0)]
    stray = [event_for(frames[0]), Output(1.0, False, (5, 9)), Output(1.0, True, None)]
    verdict = check(TOPIC, frames, stray, bound=0)
    assert verdict["failures"]["output_of_no_published_frame"] == 2 and not verdict["ok"]


def test_frames_without_a_frame_id_header_expect_the_source_as_frame_id() -> None:
    frame = Published(0, "no_headers", None, (0, 4), "cam00", None)
    output = event_for(frame, frame_id=f"{TOPIC}:0:4")
    assert check(TOPIC, [frame], [output], bound=0)["ok"]


def test_duplicate_bound_and_next_event() -> None:
    assert duplicate_bound(3, 4, 16) == 192
    assert next_event_after([1.0, 2.0, 5.0], 2.0) == 3.0
    assert next_event_after([1.0, 2.0], 3.0) is None


def test_outputs_are_read_from_events_and_dead_letter_headers() -> None:
    event = {"event_id": "e", "camera_id": "cam01", "frame_id": "f", "source": {"partition": 2, "offset": 9}}
    parsed = parse_output("out", "out", orjson.dumps({**event, "plates": [{}]}), [], 5.0)
    assert (parsed.source, parsed.event_id, parsed.plates, parsed.dead_letter) == ((2, 9), "e", 1, False)
    headers = [
        ("camera_id", b"cam01"),
        ("error.stage", b"decode"),
        ("error.reason", b"invalid_image"),
        ("error.detail", b"not a JPEG"),
        ("source.topic", b"in"),
        ("source.partition", b"3"),
        ("source.offset", b"17"),
    ]
    letter = parse_output("dlq", "out", b"\x89PNG", headers, 6.0)
    assert (letter.source, letter.reason, letter.stage, letter.detail) == (
        (3, 17),
        "invalid_image",
        "decode",
        "not a JPEG",
    )
    assert parse_output("out", "out", b"{not json", [], 1.0).source is None
    assert parse_output("dlq", "out", b"", [("error.reason", b"x")], 1.0).source is None


def test_faults_strike_in_order_inside_the_window() -> None:
    schedule = Schedule.draw(20, 3, random.Random(1))
    fractions = [at for at, _ in schedule.actions]
    assert fractions == sorted(fractions) and fractions[0] >= 0.03 and fractions[-1] <= 0.8
    assert sum(action == "triton" for _, action in schedule.actions) == 3
    due = schedule.due(0.5)
    assert due and all(at > 0.5 for at, _ in schedule.actions)
    assert len(due) + len(schedule.actions) == 23


TINY_KINDS = ",".join(
    (
        "truncated",
        "flat_near_limit",
        "flat_over_limit",
        "arithmetic",
        "png",
        "empty_value",
        "no_headers_no_key",
        "malformed_captured_at",
    )
)


@pytest.mark.integration
def test_tiny_chaos_run_holds_every_invariant(prepared_model_repository: Path, tmp_path: Path) -> None:
    report_path = tmp_path / "chaos.json"
    command = [
        sys.executable,
        "-m",
        "stream_worker",
        "bench",
        "chaos",
        "--frames=24",
        "--hostile=8",
        f"--hostile-kinds={TINY_KINDS}",
        "--cameras=4",
        "--partitions=2",
        "--workers=2",
        "--worker-kills=1",
        "--triton-kills=1",
        "--fps=4",
        "--settle-s=60",
        "--time-limit-s=240",
        f"--repository={prepared_model_repository}",
        f"--report={report_path}",
        "--allow-busy",  # the test suite loads the machine; the figures are not judged here
    ]
    finished = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    output = finished.stdout[-6000:] + finished.stderr[-3000:]
    assert finished.returncode == 0, output
    assert "result: PASS" in finished.stdout and "invariants:" in finished.stdout
    report = orjson.loads(report_path.read_bytes())
    assert report["ok"] and report["complete"]
    assert all(value is True or value == 0 for value in report["invariants"].values()), report["invariants"]
    verdict = report["check"]
    assert verdict["frames"]["published"] == 32 and verdict["frames"]["hostile"] == 8
    assert {row["kind"] for row in verdict["by_kind"]} == {"valid", *TINY_KINDS.split(",")}
    assert all(row.get("ok") == row["frames"] for row in verdict["by_kind"])
    assert len(report["worker_kills"]) == 1 and report["worker_kills"][0]["restart_s"] is not None
    (triton_kill,) = report["triton_kills"]
    assert triton_kill["orphaned_stubs"] >= 1 and triton_kill["shm_regions_removed"] >= 1
    assert triton_kill["ready_to_next_answer_s"] is not None
    memory = report["memory"]
    assert memory["triton_server_peak_rss_mib"] > 0 and memory["worker_peak_rss_mib"] > 0
