"""The independent check of a `bench chaos` run: what was published against what came out.

Pure (no Kafka, no servers) so that the rules are unit-tested. Every frame is known by where the
broker stored it, its source (partition, offset): events carry `source`, dead letters the
`source.*` headers. Per frame, the outputs are reduced to their distinct outcomes (an event, or
a dead letter with its reason); extra copies of the same outcome are duplicates, counted against
the bound `stream_worker/worker/app.py` states; a second, different outcome is a failure.
"""

from __future__ import annotations

import bisect
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from stream_worker.worker.events import event_id as expected_event_id

Source = tuple[int, int]  # (partition, offset) on the frames topic
SAMPLES = 10  # examples kept per failure


@dataclass(frozen=True)
class Published:
    """One frame the broker acknowledged, with what its kind says must come of it."""

    index: int
    kind: str  # "valid", or a hostile kind
    expected_reason: str | None  # None: an event
    source: Source
    camera_id: str | None  # expected in the event (None: not checked)
    frame_id: str | None  # expected in the event (None: topic:partition:offset)

    @property
    def expects_event(self) -> bool:
        return self.expected_reason is None


@dataclass(frozen=True)
class Output:
    """One record read from the output or dead-letter topic."""

    arrived: float  # time.time() when the independent consumer read it
    dead_letter: bool
    source: Source | None  # None: the record does not say (a failure)
    event_id: str | None = None
    camera_id: str | None = None
    frame_id: str | None = None
    reason: str | None = None  # dead letters: error.reason
    stage: str | None = None
    detail: str | None = None
    plates: int = 0

    @property
    def outcome(self) -> str:
        return "event" if not self.dead_letter else f"dead_letter:{self.reason or ''}"


def duplicate_bound(kills: int, max_inflight_batches: int, max_batch_frames: int) -> int:
    """app.py: a batch holds its in-flight slot until its offsets are committed, so a worker has at
    most max_inflight_batches x max_batch_frames frames published but uncommitted; each kill can
    publish those again."""
    return kills * max_inflight_batches * max_batch_frames


def check(
    topic: str, published: Sequence[Published], outputs: Sequence[Output], bound: int
) -> dict[str, Any]:
    """Per-frame verdicts, duplicates and the per-kind table; `ok` is True when all invariants hold."""
    by_source: dict[Source, list[Output]] = defaultdict(list)
    unattributed: list[Output] = []
    planned = {frame.source: frame for frame in published}
    for output in outputs:
        if output.source in planned:
            by_source[output.source].append(output)
        else:
            unattributed.append(output)

    failures: dict[str, list[dict[str, Any]]] = defaultdict(list)
    duplicates = Counter[str]()
    kinds: dict[str, Counter[str]] = defaultdict(Counter)
    for frame in published:
        got = by_source.get(frame.source, [])
        outcomes = Counter(output.outcome for output in got)
        row = kinds[frame.kind]
        row["frames"] += 1
        for outcome, copies in outcomes.items():
            row[outcome] += 1
            if copies > 1:
                duplicates["events" if outcome == "event" else "dead_letters"] += copies - 1
        where = {"index": frame.index, "kind": frame.kind, "source": list(frame.source)}
        if not got:
            name = "valid_without_event" if frame.expects_event else "hostile_without_dead_letter"
            failures[name].append(where)
            row["missing"] += 1
            continue
        if len(outcomes) > 1:
            failures["several_outcomes"].append({**where, "outcomes": sorted(outcomes)})
            row["wrong"] += 1
            continue
        output = got[0]
        if frame.expects_event and output.dead_letter:
            failures["valid_with_dead_letter"].append(
                {**where, "reason": output.reason, "detail": output.detail}
            )
            row["wrong"] += 1
        elif not frame.expects_event and not output.dead_letter:
            failures["hostile_with_event"].append({**where, "expected": frame.expected_reason})
            row["wrong"] += 1
        elif output.dead_letter and (output.reason != frame.expected_reason or not output.detail):
            failures["dead_letter_with_wrong_reason"].append(
                {**where, "expected": frame.expected_reason, "reason": output.reason, "detail": output.detail}
            )
            row["wrong"] += 1
        elif not output.dead_letter and (problem := _event_problem(topic, frame, got)):
            failures["event_not_matching_its_frame"].append({**where, "problem": problem})
            row["wrong"] += 1
        else:
            row["ok"] += 1
    for output in unattributed:
        failures["output_of_no_published_frame"].append(
            {"source": list(output.source) if output.source else None, "outcome": output.outcome}
        )

    total_duplicates = duplicates["events"] + duplicates["dead_letters"]
    valid = [frame for frame in published if frame.expects_event]
    hostile = [frame for frame in published if frame.kind != "valid"]
    counts = {name: len(items) for name, items in failures.items()}
    return {
        "ok": not failures and total_duplicates <= bound,
        "frames": {
            "published": len(published),
            "expecting_event": len(valid),
            "valid": sum(1 for frame in published if frame.kind == "valid"),
            "hostile": len(hostile),
            "hostile_expecting_event": sum(1 for frame in hostile if frame.expects_event),
            "hostile_expecting_dead_letter": sum(1 for frame in hostile if not frame.expects_event),
        },
        "outputs": {
            "records": len(outputs),
            "events": sum(1 for output in outputs if not output.dead_letter),
            "dead_letters": sum(1 for output in outputs if output.dead_letter),
            "events_with_plates": sum(1 for output in outputs if not output.dead_letter and output.plates),
        },
        "failures": {name: counts.get(name, 0) for name in FAILURES} | counts,
        "failure_samples": {name: items[:SAMPLES] for name, items in failures.items()},
        "duplicates": {
            "events": duplicates["events"],
            "dead_letters": duplicates["dead_letters"],
            "total": total_duplicates,
            "bound": bound,
            "within_bound": total_duplicates <= bound,
        },
        "by_kind": [{"kind": kind, **dict(row)} for kind, row in sorted(kinds.items(), key=_kind_order)],
    }


FAILURES = (
    "valid_without_event",
    "valid_with_dead_letter",
    "hostile_without_dead_letter",
    "hostile_with_event",
    "dead_letter_with_wrong_reason",
    "several_outcomes",
    "event_not_matching_its_frame",
    "output_of_no_published_frame",
)


def _kind_order(item: tuple[str, Counter[str]]) -> tuple[int, str]:
    return (0 if item[0] == "valid" else 1, item[0])


def _event_problem(topic: str, frame: Published, events: Sequence[Output]) -> str | None:
    """Why an event does not belong to its frame (id, camera, frame id), or None."""
    partition, offset = frame.source
    wanted_id = expected_event_id(topic, partition, offset)
    wanted_frame_id = frame.frame_id or f"{topic}:{partition}:{offset}"
    for event in events:
        if event.event_id != wanted_id:
            return f"event_id {event.event_id} is not {wanted_id}"
        if frame.camera_id is not None and event.camera_id != frame.camera_id:
            return f"camera_id {event.camera_id!r} is not {frame.camera_id!r}"
        if event.frame_id != wanted_frame_id:
            return f"frame_id {event.frame_id!r} is not {wanted_frame_id!r}"
    return None


def next_event_after(arrivals: Sequence[float], moment: float) -> float | None:
    """Seconds from `moment` to the first event readable after it (arrivals sorted), or None."""
    position = bisect.bisect_right(arrivals, moment)
    return round(arrivals[position] - moment, 3) if position < len(arrivals) else None
