"""Alerts end to end: the real local broker, the real Triton, `stream-worker
run`, `stream-worker sightings` and `stream-worker alerts` as their own processes. The sample van
(read as B840OK197) passes camera gate-1 twice while its true text B840CK197 is on a watch list: one
fuzzy alert per pass, within 2 s of the pass's first PlateEvent; the cat on gate-2 raises none."""

from __future__ import annotations

import time

import pytest
from pipeline_services import MISREAD, PARTITIONS, Frame, alerts, entry, produce_frames, start_pipeline
from service_processes import WAIT_S, TopicReader
from support import EXPECTED_PLATE

from stream_worker.contracts import PlateEvent, PlateSighting
from stream_worker.contracts.alerts import MatchKind
from stream_worker.watchlists.topic import write_changes

pytestmark = pytest.mark.integration

PASS_GAP_S = 4.0  # the alerts service's --pass-gap-s
PASS_STARTS_S = (0.0, 30.0)  # capture time of each van pass's first frame, far more than the gap apart
FRAMES_PER_PASS = 3
FRAME_INTERVAL_S = 0.2
ALERT_BOUND_S = 2.0
SILENCE_S = 5.0  # the sightings service closes the last van pass after this (wall clock)


def test_watched_van_alerts_once_per_pass_within_two_seconds_and_the_cat_never(
    kafka_bootstrap, triton_url, pipeline_topics, start_service, car_jpeg, cat_jpeg
):
    topics = pipeline_topics
    assert EXPECTED_PLATE == "B840CK197"
    write_changes(kafka_bootstrap, topics.watchlist, [entry(EXPECTED_PLATE, "stolen")])
    services = start_pipeline(start_service, triton_url, topics, SILENCE_S, PASS_GAP_S)
    worker, sightings_service, alerts_service = services
    for service in services:
        service.wait_ready(WAIT_S)
    assert alerts_service.metric("stream_worker_alerts_watchlist_size") == 1

    base_ms = int(time.time() * 1000) - 60_000
    van = [
        Frame("gate-1", f"gate-1/{n}", base_ms + int((start + k * FRAME_INTERVAL_S) * 1000), car_jpeg)
        for n, (start, k) in enumerate((s, k) for s in PASS_STARTS_S for k in range(FRAMES_PER_PASS))
    ]
    cat = [Frame("gate-2", f"gate-2/{k}", base_ms + k * 1000, cat_jpeg) for k in range(3)]
    produce_frames(kafka_bootstrap, topics.frames, van + cat)

    plates = TopicReader(kafka_bootstrap, topics.plates, PARTITIONS)
    alerts_out = TopicReader(kafka_bootstrap, topics.alerts, PARTITIONS)
    sightings_out = TopicReader(kafka_bootstrap, topics.sightings, PARTITIONS)
    try:
        deadline = time.monotonic() + WAIT_S
        while len(plates.records) < len(van) + len(cat) or len(alerts_out.records) < len(PASS_STARTS_S):
            for service in services:
                assert service.is_running(), f"{service.command} exited:\n{service.log_tail()}"
            assert time.monotonic() < deadline, (
                f"{len(plates.records)} events, {len(alerts_out.records)} alerts:\n"
                + "\n".join(f"--- {s.command}\n{s.log_tail()}" for s in services)
            )
            plates.poll(0.2)
            alerts_out.poll(0.2)
        alerts_out.poll(PASS_GAP_S + 2.0)  # the passes have ended (gap, silence): nothing else comes
        plates.poll(0.5)
        # The sightings service runs alongside: one sighting per van pass once its gap has passed.
        while len(sightings_out.records) < len(PASS_STARTS_S):
            assert sightings_service.is_running(), sightings_service.log_tail()
            assert time.monotonic() < deadline, sightings_service.log_tail()
            sightings_out.poll(0.3)
    finally:
        plates.close()
        alerts_out.close()
        sightings_out.close()

    events, positions = {}, {}
    for record in plates.records:
        event = PlateEvent.model_validate_json(record.value)
        if event.frame_id not in events:  # the first copy of an at-least-once duplicate
            events[event.frame_id] = event
            positions[event.frame_id] = (record.partition, record.offset)
    assert set(events) == {f.frame_id for f in van + cat}
    assert all(not events[f.frame_id].plates for f in cat)

    got = alerts(alerts_out)
    assert all(alert.camera_id == "gate-1" for alert in got)  # the cat camera raises none
    by_id = {alert.alert_id: alert for alert in got}
    first_frames = [f"gate-1/{n * FRAMES_PER_PASS}" for n in range(len(PASS_STARTS_S))]
    assert sorted(alert.frame_id for alert in by_id.values()) == first_frames  # one alert per pass
    for alert in by_id.values():
        first = events[alert.frame_id]
        assert (alert.plate, alert.list) == (EXPECTED_PLATE, "stolen")
        assert (alert.match_kind, alert.distance, alert.candidate) == (MatchKind.FUZZY, 0.5, MISREAD)
        assert alert.event_id == first.event_id
        assert alert.captured_at == first.captured_at
        assert alert.box == first.plates[0].box
        assert alert.source.topic == topics.plates
        assert (alert.source.partition, alert.source.offset) == positions[alert.frame_id]
        assert (alert.frame_source.topic, alert.frame_source.partition) == (topics.frames, 0)
        assert alert.frame_source == first.source
        latency = (alert.alerted_at - first.processed_at).total_seconds()
        assert alert.origin == "read" and alert.sighting_id is None and alert.candidate_rank is None
        print(f"\n{alert.frame_id}: alerted {latency:.3f} s after its first read: {alert.to_json().decode()}")
        assert 0 <= latency <= ALERT_BOUND_S, latency

    passes = [PlateSighting.model_validate_json(record.value) for record in sightings_out.records]
    assert [(s.camera_id, s.reads) for s in passes] == [("gate-1", FRAMES_PER_PASS)] * len(PASS_STARTS_S)

    for service in (alerts_service, sightings_service, worker):
        assert service.stop() == 0, service.log_tail()
