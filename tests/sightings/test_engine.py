"""The engine end to end without Kafka, and the restart guarantee: a crash anywhere, a restart from
the committed position (replaying from a little earlier), and every read is in a published
sighting, every sighting published twice has one id, and nothing is published that an
uninterrupted run would not have published."""

from __future__ import annotations

import random
from collections import defaultdict

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from plate_events import T0, Pass, as_observation, plate_event, timeline

from stream_worker.contracts import ClosedBy, Direction, PlateEvent
from stream_worker.sightings.engine import Outgoing, SightingsEngine
from stream_worker.sightings.grouping import GroupingRules
from stream_worker.sightings.sighting import sighting_id

TOPIC = "plates"
PARTITION = 0


def engine(floor: int | None = None, min_reads: int = 1) -> SightingsEngine:
    result = SightingsEngine(TOPIC, GroupingRules(), min_reads=min_reads)
    result.assign(PARTITION, floor)
    return result


def merge(*cameras: list[PlateEvent]) -> list[PlateEvent]:
    """Several cameras' events on one partition, in capture order (ties: by camera)."""
    return sorted((e for events in cameras for e in events), key=lambda e: (e.captured_at, e.camera_id))


def feed(
    target: SightingsEngine,
    events: list[PlateEvent],
    start: int = 0,
    stop: int | None = None,
    now: float = 0.0,
) -> list[Outgoing]:
    """Records `start`..`stop` through the engine; each sighting acknowledged and each committable
    position committed at once, as the app does when the broker is quick."""
    published = []
    for offset in range(start, len(events) if stop is None else stop):
        for outgoing in target.add(PARTITION, offset, as_observation(events[offset], PARTITION, offset), now):
            target.delivered(outgoing)
            published.append(outgoing)
        target.mark_committed(target.committable())
    return published


def finish(target: SightingsEngine) -> list[Outgoing]:
    published = target.expire(now=1e9)
    for outgoing in published:
        target.delivered(outgoing)
    target.mark_committed(target.committable())
    return published


def committed(target: SightingsEngine) -> int:
    return target._book.get((TOPIC, PARTITION)).committed or 0  # type: ignore[union-attr]


# --- one run ---------------------------------------------------------------------------------


def test_three_cameras_give_one_sighting_per_vehicle_with_its_vote():
    passes = [
        Pass("cam-1", "A123BC77", T0, frames=10, misreads={3: "A123BC177", 6: "A723BC77"}),
        Pass("cam-1", "K456MH199", T0 + 5, frames=12, grow=1 / 1.04),
        Pass("cam-2", "B840CK197", T0 + 1, frames=8, dx=40, dy=0, grow=1.0, misreads={0: "B840CK97"}),
        Pass("cam-3", "E001KX50", T0 + 2, frames=15, dy=0, grow=1.0),
    ]
    events = merge(*(timeline(passes, c, until=T0 + 12) for c in ("cam-1", "cam-2", "cam-3")))
    target = engine()
    published = feed(target, events) + finish(target)
    got = {(o.sighting.camera_id, o.sighting.text): o.sighting for o in published}
    assert set(got) == {(p.camera_id, p.text) for p in passes}
    assert got[("cam-1", "A123BC77")].reads == 10
    assert got[("cam-1", "A123BC77")].direction is Direction.APPROACHING
    assert got[("cam-1", "K456MH199")].direction is Direction.RECEDING
    assert got[("cam-2", "B840CK197")].direction is Direction.RIGHT
    assert got[("cam-3", "E001KX50")].direction is Direction.STATIONARY
    assert all(s.closed_by is ClosedBy.GAP for s in got.values())
    assert committed(target) == len(events)
    first = got[("cam-2", "B840CK197")]
    assert first.first_seen.timestamp() == pytest.approx(T0 + 1)
    assert first.best_read.text == "B840CK197"
    assert first.source.topic == TOPIC and first.source.first_offset < first.source.last_offset
    assert first.sighting_id == sighting_id("cam-2", TOPIC, _first_read(events, "cam-2"))


def _first_read(events, camera):
    for offset, event in enumerate(events):
        if event.camera_id == camera and event.plates:
            return as_observation(event, PARTITION, offset).reads[0]
    raise AssertionError(camera)


def test_an_open_group_holds_the_commit_until_its_sighting_is_acknowledged():
    vehicle = Pass("cam", "A123BC77", T0 + 1, frames=5)
    events = timeline([vehicle], "cam", until=vehicle.end + 2)
    events = [plate_event("cam", T0, [], frame_offset=100), *events]  # an empty frame first
    target = engine()
    outgoing = []
    for offset, event in enumerate(events):
        outgoing += target.add(PARTITION, offset, as_observation(event, PARTITION, offset), 0.0)
        if not outgoing:
            # Offset 0 (empty) is done; the first read (offset 1 on) is held while its group is open.
            assert target.committable() in ({(TOPIC, 0): 1}, {})
            target.mark_committed(target.committable())
    [sighting] = outgoing
    assert target.committable() == {}  # closed but not yet acknowledged
    target.delivered(sighting)
    assert target.committable() == {(TOPIC, PARTITION): len(events)}


def test_min_reads_drops_short_groups_and_releases_them():
    events = timeline([Pass("cam", "A123BC77", T0, frames=1)], "cam", until=T0 + 3)
    target = engine(min_reads=2)
    assert feed(target, events) + finish(target) == []
    assert target.counts.too_few_reads == 1
    assert committed(target) == len(events)


def test_records_that_are_not_plate_events_are_skipped_and_committed():
    target = engine()
    assert target.add(PARTITION, 0, None, 0.0) == []
    assert target.committable() == {(TOPIC, PARTITION): 1}


def test_a_revoked_partition_drops_its_groups_and_ignores_late_acknowledgements():
    vehicle = Pass("cam", "A123BC77", T0, frames=3)
    events = timeline([vehicle], "cam", until=vehicle.end + 2)
    target = engine()
    published = []
    for offset, event in enumerate(events):
        published += target.add(PARTITION, offset, as_observation(event, PARTITION, offset), 0.0)
    assert len(published) == 1
    target.add(
        PARTITION, len(events), as_observation(timeline([vehicle], "cam", until=T0)[0], PARTITION, 99), 0.0
    )
    assert target.revoke(PARTITION) == 1
    target.assign(PARTITION, 5)
    target.delivered(published[0])  # from the previous assignment: must not touch the new one
    assert target.held() == 0


# --- restarts --------------------------------------------------------------------------------

LETTERS = "ABEKMHOPCTYX"


@st.composite
def busy_partition(draw):
    """2-3 cameras on one partition with passes overlapping in time across cameras."""
    rng = random.Random(draw(st.integers(0, 2**32)))
    passes = []
    for camera in [f"cam-{n}" for n in range(draw(st.integers(2, 3)))]:
        start = T0 + rng.uniform(0, 2)
        for _ in range(draw(st.integers(1, 4))):
            text = (
                rng.choice(LETTERS) + f"{rng.randrange(1000):03d}" + "".join(rng.choices(LETTERS, k=2)) + "77"
            )
            frames = rng.randint(1, 12)
            misreads = {f: text[:-1] + "1" for f in range(frames) if rng.random() < 0.2}
            passes.append(Pass(camera, text, start, frames=frames, misreads=misreads))
            start = passes[-1].end + rng.uniform(1.7, 4.0)
    until = max(p.end for p in passes) + 2
    return merge(*(timeline(passes, c, until=until) for c in {p.camera_id for p in passes}))


def by_id(published: list[Outgoing]) -> dict[str, set[tuple[int, int, int]]]:
    reads: dict[str, set[tuple[int, int, int]]] = {}
    for outgoing in published:
        previous = reads.setdefault(outgoing.sighting.sighting_id, set(outgoing.reads))
        assert previous == set(outgoing.reads), "one id published with two different sets of reads"
    return reads


def restart(events: list[PlateEvent], crash_at: int, replay_from) -> tuple[list[Outgoing], list[Outgoing]]:
    """Run to `crash_at` (a SIGKILL: nothing more is published or committed), then restart from the
    committed position, replaying from `replay_from(committed)`."""
    first = engine()
    before = feed(first, events, stop=crash_at)
    floor = committed(first)
    second = engine(floor=floor if floor else None)
    after = feed(second, events, start=replay_from(floor)) + finish(second)
    return before, after


def reference(events):
    target = engine()
    return by_id(feed(target, events) + finish(target))


def ideal_replay_start(events, floor: int) -> int:
    """Where a replay must start: the first read of any uninterrupted group reaching the floor."""
    firsts = [min(reads)[1] for reads in reference(events).values() if max(reads)[1] >= floor]
    return min([floor, *firsts])


@settings(max_examples=60, deadline=None)
@given(busy_partition(), st.floats(0, 1))
def test_a_crash_anywhere_loses_nothing_and_duplicates_share_their_id(events, where):
    crash_at = int(where * len(events))
    before, after = restart(events, crash_at, lambda floor: ideal_replay_start(events, floor))
    combined = by_id(before + after)  # also: one id, one set of reads
    assert combined == reference(events)  # every sighting, nothing extra, same ids and reads


@settings(max_examples=30, deadline=None)
@given(busy_partition(), st.floats(0, 1))
def test_a_full_replay_from_the_start_gives_the_same_sightings(events, where):
    """Replaying from offset 0 (a broker that cannot look offsets up by time) is as good."""
    before, after = restart(events, int(where * len(events)), lambda floor: 0)
    assert by_id(before + after) == reference(events)


def test_without_replaying_from_earlier_a_straddling_pass_would_get_a_second_id():
    """Why the replay starts before the committed position: cam-a's pass closes (published) while
    cam-b's, which began during it, is still open; the commit stops at cam-b's first read."""
    a = Pass("cam-a", "A123BC77", T0, frames=10)
    b = Pass("cam-b", "K456MH199", T0 + 1.0, frames=20)
    events = merge(timeline([a], "cam-a", until=T0 + 6), timeline([b], "cam-b", until=T0 + 6))
    crash_at = next(i for i, e in enumerate(events) if e.captured_at.timestamp() >= a.end + 1.8)
    before, after = restart(events, crash_at, lambda floor: floor)
    assert [o.sighting.text for o in before] == ["A123BC77"]
    texts = [o.sighting.text for o in after]
    assert texts.count("A123BC77") == 1  # its tail, under another id
    assert by_id(before + after).keys() != reference(events).keys()
    before, after = restart(events, crash_at, lambda floor: ideal_replay_start(events, floor))
    assert by_id(before + after) == reference(events)


def test_silence_before_a_crash_can_split_differently_but_loses_nothing():
    """Silence is wall-clock time: the replay does not see it. Every read still gets published."""
    vehicle = Pass("cam", "A123BC77", T0, frames=10)
    events = timeline([vehicle], "cam", until=vehicle.end + 2)
    first = engine()
    before = feed(first, events, stop=5, now=0.0)
    before += first.expire(now=100.0)  # the camera went quiet (a stalled worker) after 5 frames
    for outgoing in before:
        first.delivered(outgoing)
    first.mark_committed(first.committable())
    before += feed(first, events, start=5, stop=7, now=100.0)  # two more frames, then a crash
    second = engine(floor=committed(first))
    after = feed(second, events, start=0) + finish(second)
    seen = {position for outgoing in before + after for position in outgoing.reads}
    everything = {(PARTITION, o, 0) for o, e in enumerate(events) if e.plates}
    assert seen == everything
    assert defaultdict(int, {o.sighting.closed_by: 1 for o in before})[ClosedBy.SILENCE] == 1


# --- plates of the camera's format -----------------------------------------------------------


def _caption_and_plate() -> list[PlateEvent]:
    passes = [
        Pass("cam-1", "777", T0, frames=6, dx=0, dy=0, grow=1.0),  # a dashcam's caption
        Pass("cam-1", "A123BC77", T0 + 4, frames=6),
    ]
    return timeline(passes, "cam-1", until=T0 + 9)


def test_a_sighting_that_is_no_plate_of_the_format_is_dropped_counted_and_commits():
    dropped = []
    target = SightingsEngine(TOPIC, GroupingRules(), on_not_plate=dropped.append)
    target.assign(PARTITION, None)
    events = _caption_and_plate()
    published = feed(target, events) + finish(target)
    assert [o.sighting.text for o in published] == ["A123BC77"]
    assert [s.text for s in dropped] == ["777"] and not dropped[0].format_valid
    assert target.counts.not_plates == 1
    assert committed(target) == len(events)  # the dropped pass holds nothing back


def test_publish_non_plates_publishes_them_flagged():
    target = SightingsEngine(TOPIC, GroupingRules(), publish_non_plates=True)
    target.assign(PARTITION, None)
    published = feed(target, _caption_and_plate()) + finish(target)
    assert [(o.sighting.text, o.sighting.format_valid) for o in published] == [
        ("777", False),
        ("A123BC77", True),
    ]
    assert target.counts.not_plates == 0


def test_a_camera_s_own_plate_format_decides():
    import re

    formats = {"cam-1": re.compile(r"^\d{3}$")}
    target = SightingsEngine(TOPIC, GroupingRules(), plate_format_of=formats.get)
    target.assign(PARTITION, None)
    published = feed(target, _caption_and_plate()) + finish(target)
    assert [(o.sighting.text, o.sighting.format_valid) for o in published] == [("777", True)]


def test_a_camera_s_region_decides_and_its_sightings_say_which_format_fits():
    """A US camera: the US plate passes the gate (the Russian pattern would drop it) and says it is a
    US plate read by the global recognizer; the Russian plate is no US plate."""
    from stream_worker.contracts.plate_formats import region

    passes = [Pass("cam-1", "B840CK197", T0, frames=6), Pass("cam-1", "7ABC123", T0 + 4, frames=6)]
    events = [
        event.model_copy(
            update={"plates": [plate.model_copy(update={"recognizer": "global"}) for plate in event.plates]}
        )
        for event in timeline(passes, "cam-1", until=T0 + 9)
    ]
    target = SightingsEngine(TOPIC, GroupingRules(), region_of={"cam-1": region("us")}.get)
    target.assign(PARTITION, None)
    published = [o.sighting for o in feed(target, events) + finish(target)]
    assert [(s.text, s.format_valid, s.country, s.plate_format, s.recognizer) for s in published] == [
        ("7ABC123", True, "us", "0AAA000", "global")
    ]
    assert target.counts.not_plates == 1


def test_a_camera_without_a_region_publishes_sightings_without_the_region_fields():
    target = engine()
    published = feed(target, _caption_and_plate()) + finish(target)
    (sighting,) = [o.sighting for o in published]
    assert not {"country", "plate_format", "recognizer"} & set(orjson.loads(sighting.to_json()))


def test_a_pass_resumed_after_a_long_stall_is_published_again_with_its_id_and_every_read():
    events = timeline([Pass("cam-1", "A123BC77", T0, frames=20)], "cam-1", until=T0 + 4)
    target = engine()
    first = feed(target, events, stop=10, now=0.0) + [o for o in target.expire(now=60.0)]
    for outgoing in first:
        target.delivered(outgoing)
    target.mark_committed(target.committable())
    again = feed(target, events, start=10, now=61.0) + finish(target)
    assert [o.sighting.sighting_id for o in first] == [o.sighting.sighting_id for o in again]
    assert (first[0].sighting.reads, again[0].sighting.reads) == (10, 20)
    assert committed(target) == len(events)


def _unsure(events: list[PlateEvent], text: str, confidence: float) -> list[PlateEvent]:
    """`events` with every read of `text` made as unsure as the recognizers read a caption."""
    return [
        event.model_copy(
            update={
                "plates": [
                    plate.model_copy(
                        update={"confidence": confidence, "character_confidences": [confidence] * len(text)}
                    )
                    if plate.text == text
                    else plate
                    for plate in event.plates
                ]
            }
        )
        for event in events
    ]


def _caption_fitting_a_format_and_a_plate() -> list[PlateEvent]:
    """A dashcam's caption whose misread fits one of `auto`'s formats (a Dutch `AA0000`-like one),
    read unsure in every frame, then a plate read surely."""
    passes = [
        Pass("cam-1", "KJ9777", T0, frames=6, dx=0, dy=0, grow=1.0),
        Pass("cam-1", "A123BC77", T0 + 4, frames=6),
    ]
    return _unsure(timeline(passes, "cam-1", until=T0 + 9), "KJ9777", 0.15)


def test_an_unsure_sighting_of_a_camera_with_a_region_is_no_plate():
    from stream_worker.contracts.plate_formats import region

    auto = region("auto")
    events = _caption_fitting_a_format_and_a_plate()
    assert auto.fit("KJ9777") is not None  # the caption's text alone passes the region's formats
    dropped = []
    target = SightingsEngine(
        TOPIC,
        GroupingRules(),
        region_of={"cam-1": auto}.get,
        on_not_plate=dropped.append,
        min_region_confidence=0.3,
    )
    target.assign(PARTITION, None)
    published = [o.sighting for o in feed(target, events) + finish(target)]
    assert [s.text for s in published] == ["A123BC77"]
    assert [(s.text, s.format_valid) for s in dropped] == [("KJ9777", True)]
    assert target.counts.not_plates == 1
    assert committed(target) == len(events)


def test_the_confidence_rule_leaves_cameras_without_a_region_and_published_non_plates_alone():
    from stream_worker.contracts.plate_formats import region

    unsure_plate = _unsure(
        timeline([Pass("cam-1", "A123BC77", T0, frames=6)], "cam-1", until=T0 + 3), "A123BC77", 0.2
    )
    no_region = SightingsEngine(TOPIC, GroupingRules(), min_region_confidence=0.3)
    no_region.assign(PARTITION, None)
    assert [o.sighting.text for o in feed(no_region, unsure_plate) + finish(no_region)] == ["A123BC77"]
    flagged = SightingsEngine(
        TOPIC,
        GroupingRules(),
        region_of={"cam-1": region("auto")}.get,
        publish_non_plates=True,
        min_region_confidence=0.3,
    )
    flagged.assign(PARTITION, None)
    published = [o.sighting for o in feed(flagged, _caption_fitting_a_format_and_a_plate()) + finish(flagged)]
    assert [s.text for s in published] == ["KJ9777", "A123BC77"]
    assert published[0].confidence < 0.3
