"""A closed group as the PlateSighting published for it."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import orjson
from plate_events import T0, read

from stream_worker.contracts import ClosedBy, Direction, PlateSighting
from stream_worker.sightings.grouping import Group
from stream_worker.sightings.sighting import build_sighting, sighting_id

CLOSED_AT = datetime(2025, 1, 31, 12, 0, 5, tzinfo=UTC)


def group_of(*reads) -> Group:
    group = Group((1, "gate-1"), reads[0])
    for r in reads[1:]:
        group.add(r)
    return group


def test_the_sighting_carries_the_vote_the_reads_the_times_and_the_best_read():
    reads = [
        read("A123BC77", T0 + 0.2 * k, box=(100 + 5 * k, 100, 200 + 10 * k, 130), offset=10 + k, partition=1)
        for k in range(5)
    ]
    reads[1] = read("A128BC77", T0 + 0.2, box=(105, 100, 210, 130), offset=11, partition=1, confidence=0.99)
    reads[3] = read("A123BC77", T0 + 0.6, box=(115, 100, 230, 130), offset=13, partition=1, confidence=0.97)
    sighting = build_sighting(group_of(*reversed(reads)), ClosedBy.GAP, "plates", CLOSED_AT)
    assert PlateSighting.model_validate_json(sighting.to_json()) == sighting
    assert (sighting.camera_id, sighting.text, sighting.format_valid, sighting.reads) == (
        "gate-1",
        "A123BC77",
        True,
        5,
    )
    assert [c.text for c in sighting.candidates][:2] == ["A123BC77", "A128BC77"]
    assert sighting.first_seen == datetime.fromtimestamp(T0, UTC)
    assert sighting.last_seen == datetime.fromtimestamp(T0 + 0.8, UTC)
    assert sighting.direction is Direction.APPROACHING  # the box doubles in width
    # The surest read of the voted text, not the surest read overall (offset 11 reads A128BC77).
    assert (sighting.best_read.frame_id, sighting.best_read.confidence) == ("f13", 0.97)
    assert sighting.best_read.source.offset == 13
    assert (sighting.source.partition, sighting.source.first_offset, sighting.source.last_offset) == (
        1,
        10,
        14,
    )
    assert (sighting.closed_by, sighting.closed_at) == (ClosedBy.GAP, CLOSED_AT)
    assert sighting.sighting_id == sighting_id("gate-1", "plates", reads[0])


def test_the_id_depends_on_the_camera_and_the_first_read_s_position_only():
    first = read("A123BC77", T0, offset=10, partition=1)
    same_place = read("K456MH199", T0 + 99, offset=10, partition=1)
    assert sighting_id("gate-1", "plates", first) == sighting_id("gate-1", "plates", same_place)
    assert sighting_id("gate-1", "plates", first) != sighting_id("gate-2", "plates", first)
    assert sighting_id("gate-1", "plates", first) != sighting_id(
        "gate-1", "plates", read("A", T0, offset=11, partition=1)
    )
    assert sighting_id("gate-1", "plates", first) != sighting_id(
        "gate-1", "plates", read("A", T0, offset=10, index=1, partition=1)
    )
    # Fixed forever: consumers deduplicate on it across versions.
    assert sighting_id("gate-1", "plates", first) == "613af048-3d57-50c0-a2c6-e9d5e9131ecb"


def test_a_single_read_has_no_direction():
    sighting = build_sighting(group_of(read("A123BC77", T0)), ClosedBy.SILENCE, "plates", CLOSED_AT)
    assert sighting.direction is None and sighting.reads == 1


def test_the_best_read_carries_its_picture_and_leaves_it_out_without_one():
    """The picture is the best read's own, not another read's; without one the JSON has no key."""
    reads = [read("A123BC77", T0 + 0.2 * k, offset=10 + k, confidence=0.9) for k in range(3)]
    reads[1] = replace(reads[1], confidence=0.97, image="QkVTVA==")
    reads[2] = replace(reads[2], image="T1RIRVI=")
    sighting = build_sighting(group_of(*reads), ClosedBy.GAP, "plates", CLOSED_AT)
    assert (sighting.best_read.frame_id, sighting.best_read.image) == ("f11", "QkVTVA==")
    assert orjson.loads(sighting.to_json())["best_read"]["image"] == "QkVTVA=="
    plain = build_sighting(
        group_of(*[replace(r, image=None) for r in reads]), ClosedBy.GAP, "plates", CLOSED_AT
    )
    assert plain.best_read.image is None
    assert "image" not in orjson.loads(plain.to_json())["best_read"]
    assert b'"image"' not in plain.to_json()
