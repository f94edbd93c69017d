"""A worker that stalls in the middle of a vehicle pass splits neither its alert nor its sighting:
the real local broker, the real Triton, `stream-worker run`, `sightings` and `alerts` as their own
processes. The sample van passes gate-1 in 8 frames 0.2 s apart (capture time); after its first 4
frames are read the worker is SIGSTOPped for 5 s, longer than the alerts' pass gap (3 s) of wall
clock, while the camera goes on publishing the pass's last 4 frames, then SIGCONT."""

from __future__ import annotations

import os
import signal
import time

import pytest
from pipeline_services import PARTITIONS, Frame, alerts, entry, produce_frames, start_pipeline
from service_processes import WAIT_S, TopicReader
from support import EXPECTED_PLATE

from stream_worker.contracts import PlateSighting
from stream_worker.watchlists.topic import write_changes

pytestmark = pytest.mark.integration

PASS_GAP_S = 3.0  # the alerts service's --pass-gap-s (its default)
SILENCE_S = 10.0  # the sightings service's --silence-s (its default)
FRAMES, STALL_AFTER, FRAME_INTERVAL_S = 8, 4, 0.2
STALL_S = 5.0


def wait_for(reader: TopicReader, count: int, services, what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while len(reader.records) < count:
        for service in services:
            assert service.is_running(), f"{service.command} exited:\n{service.log_tail()}"
        assert time.monotonic() < deadline, f"{len(reader.records)} {what}:\n" + "\n".join(
            f"--- {s.command}\n{s.log_tail()}" for s in services
        )
        reader.poll(0.2)


def test_a_worker_stalled_mid_pass_gives_one_alert_and_one_sighting(
    kafka_bootstrap, triton_url, pipeline_topics, start_service, car_jpeg
):
    topics = pipeline_topics
    write_changes(kafka_bootstrap, topics.watchlist, [entry(EXPECTED_PLATE, "stolen")])
    services = start_pipeline(start_service, triton_url, topics, SILENCE_S, PASS_GAP_S)
    worker = services[0]
    for service in services:
        service.wait_ready(WAIT_S)

    base_ms = int(time.time() * 1000) - 60_000
    van = [
        Frame("gate-1", f"gate-1/{k}", base_ms + int(k * FRAME_INTERVAL_S * 1000), car_jpeg)
        for k in range(FRAMES)
    ]
    plates = TopicReader(kafka_bootstrap, topics.plates, PARTITIONS)
    alerts_out = TopicReader(kafka_bootstrap, topics.alerts, PARTITIONS)
    sightings_out = TopicReader(kafka_bootstrap, topics.sightings, PARTITIONS)
    try:
        produce_frames(kafka_bootstrap, topics.frames, van[:STALL_AFTER])
        wait_for(plates, STALL_AFTER, services, "plate events before the stall")
        wait_for(alerts_out, 1, services, "alerts before the stall")
        os.kill(worker.pid, signal.SIGSTOP)
        try:
            produce_frames(kafka_bootstrap, topics.frames, van[STALL_AFTER:])  # the camera films on
            stalled_until = time.monotonic() + STALL_S
            while time.monotonic() < stalled_until:
                alerts_out.poll(0.2)
        finally:
            os.kill(worker.pid, signal.SIGCONT)
        wait_for(plates, FRAMES, services, "plate events")
        wait_for(sightings_out, 1, services, "sightings")
        # Any second alert (past the pass gap) and any second sighting (past the silence) come by
        # then; both read meanwhile.
        quiet_until = time.monotonic() + max(PASS_GAP_S, SILENCE_S) + 2.0
        while time.monotonic() < quiet_until:
            alerts_out.poll(0.2)
            sightings_out.poll(0.2)
    finally:
        plates.close()
        alerts_out.close()
        sightings_out.close()

    got = alerts(alerts_out)
    assert [(a.camera_id, a.plate, a.frame_id) for a in got] == [("gate-1", EXPECTED_PLATE, "gate-1/0")]
    sightings = [PlateSighting.model_validate_json(record.value) for record in sightings_out.records]
    # One pass, one sighting id. On a loaded host the resumed worker can take longer than the
    # sightings' silence_s to deliver the rest of the pass: the pass is then published again under
    # the same id with every read (an update a consumer keys by id), never as a second sighting.
    assert {(s.camera_id, s.sighting_id) for s in sightings} == {("gate-1", sightings[0].sighting_id)}
    assert sightings[-1].reads == FRAMES
    for service in reversed(services):
        assert service.stop() == 0, service.log_tail()
