"""Plates records as grouping sees them: the camera's time, its reads, and what is not a PlateEvent."""

from __future__ import annotations

import pytest
from plate_events import T0, plate, plate_event

from stream_worker.sightings.reads import InvalidEvent, parse_event


def test_a_plate_event_gives_its_camera_time_and_reads_with_their_positions():
    event = plate_event(
        "cam-7", T0 + 1.25, [plate("A123BC77", (1, 2, 41, 12)), plate("K456MH199", (5, 5, 50, 20))]
    )
    observation = parse_event(event.to_json(), partition=2, offset=40)
    assert (observation.camera_id, observation.time) == ("cam-7", T0 + 1.25)
    assert [r.position for r in observation.reads] == [(2, 40, 0), (2, 40, 1)]
    first = observation.reads[0]
    assert (first.text, first.box, first.width, first.centre) == ("A123BC77", (1, 2, 41, 12), 40, (21, 7))
    assert first.confidences == (0.95,) * 8
    assert first.corners == ((1, 2), (41, 2), (41, 12), (1, 12))
    assert first.frame_id == event.frame_id and first.event_id == event.event_id
    assert first.frame_source == event.source


def test_without_a_capture_time_the_processing_time_is_the_camera_s():
    event = plate_event("cam", None, [plate("A123BC77", (0, 0, 10, 5))])
    observation = parse_event(event.to_json(), 0, 0)
    assert observation.time == event.processed_at.timestamp()
    assert observation.reads[0].captured_at is None


def test_a_plate_s_picture_rides_with_its_read():
    pictured = plate("A123BC77", (0, 0, 10, 5)).model_copy(update={"image": "/9j/4AAQ"})
    event = plate_event("cam", T0, [pictured, plate("K456MH199", (5, 5, 50, 20))])
    first, second = parse_event(event.to_json(), 0, 0).reads
    assert (first.image, second.image) == ("/9j/4AAQ", None)


def test_revision_1_events_lend_each_character_the_plate_s_confidence():
    event = plate_event("cam", T0, [plate("A123BC77", (0, 0, 10, 5), confidence=0.6)])
    event.plates[0].character_confidences = None
    event.plates[0].corners = None
    [read] = parse_event(event.to_json(), 0, 0).reads
    assert read.confidences == (0.6,) * 8 and read.corners is None


def test_empty_texts_are_no_reads_and_empty_frames_still_tell_the_time():
    event = plate_event("cam", T0, [plate("", (0, 0, 10, 5))])
    observation = parse_event(event.to_json(), 0, 0)
    assert observation.reads == () and observation.time == T0


def test_a_frame_not_examined_says_so_and_others_are_examined():
    plain = plate_event("cam", T0, [])
    gated = plain.model_copy(update={"examined": False, "schema_revision": 4})
    assert parse_event(plain.to_json(), 0, 0).examined
    observation = parse_event(gated.to_json(), 0, 1)
    assert not observation.examined and observation.reads == () and observation.time == T0


@pytest.mark.parametrize("value", [None, b"", b"not json", b'{"camera_id": "cam"}', b"[1, 2]"])
def test_anything_else_is_an_invalid_event(value):
    with pytest.raises(InvalidEvent):
        parse_event(value, 0, 0)
