"""`stream-worker alerts` on the operators' corrections, against the real local broker: a correction
written to the compacted corrections topic (as the console writes it) raises the corrected text's
alert once, and neither a restart that reads the corrections again from their beginning (a new
group) nor the operator saving the same correction again raises it twice."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest
from pipeline_services import alerts, entry
from service_processes import WAIT_S, ServiceProcess, TopicReader

from stream_worker.contracts import AlertOrigin
from stream_worker.contracts.corrections import Correction, CorrectionKind, encode_correction
from stream_worker.launchers.broker import create_topics
from stream_worker.service.compacted import ensure_compacted_topic, write_compacted
from stream_worker.watchlists.topic import write_changes
from tests.alerts.test_sightings import sighting

pytestmark = pytest.mark.integration

PARTITIONS = 3


def corrected(old: str, new: str, camera: str = "gate-1") -> Correction:
    seen = sighting((old, 0.9), camera=camera)
    return Correction(
        sighting_id=seen.sighting_id,
        camera_id=camera,
        kind=CorrectionKind.CORRECT,
        old_text=old,
        new_text=new,
        corrected_by="ada",
        corrected_at=datetime.now(UTC),
        best_read=seen.best_read,
        source=seen.source,
    )


def wait_metric(service: ServiceProcess, sample: str, value: float) -> None:
    deadline = time.monotonic() + 30
    while service.metric(sample) != value:
        assert time.monotonic() < deadline, f"{sample} != {value}:\n{service.log_tail()}"
        time.sleep(0.2)


def test_a_correction_onto_the_watch_list_alerts_once_across_restarts(
    kafka_bootstrap: str, start_service, unique_name: str
) -> None:
    plates, alerts_topic, watchlist, sightings_topic, corrections = (
        f"{unique_name}-{kind}" for kind in ("plates", "alerts", "watchlist", "sightings", "corrections")
    )
    create_topics(kafka_bootstrap, [plates, alerts_topic, sightings_topic], PARTITIONS)
    ensure_compacted_topic(kafka_bootstrap, corrections)
    write_changes(kafka_bootstrap, watchlist, [entry("B840CK197")])
    reader = TopicReader(kafka_bootstrap, alerts_topic, PARTITIONS)

    def start(run: int) -> ServiceProcess:
        service = start_service(
            "alerts", "alerts started",
            "--input-topic", plates,
            "--output-topic", alerts_topic,
            "--watchlist-topic", watchlist,
            "--sightings-topic", sightings_topic,
            "--sightings-group-id", f"{unique_name}-sightings-group",
            "--corrections-topic", corrections,
            # A new group each run: the whole compacted topic is read again from its beginning.
            "--corrections-group-id", f"{unique_name}-corrections-{run}",
        )  # fmt: skip
        service.wait_ready(WAIT_S)
        return service

    onto_the_list = corrected("X123YZ77", "B840CK197")
    off_the_list = corrected("B840CK197", "X123YZ77", camera="gate-2")  # the store marks its alert
    try:
        service = start(0)
        write_compacted(
            kafka_bootstrap, corrections, [encode_correction(onto_the_list), encode_correction(off_the_list)]
        )
        wait_metric(service, "stream_worker_alerts_corrections_in_total", 2)
        deadline = time.monotonic() + 30
        while not reader.records:
            assert time.monotonic() < deadline, service.log_tail()
            reader.poll(0.2)
        assert service.stop() == 0

        service = start(1)  # reads both corrections again, then the operator saves the first again
        wait_metric(service, "stream_worker_alerts_corrections_in_total", 2)
        write_compacted(kafka_bootstrap, corrections, [encode_correction(onto_the_list)])
        wait_metric(service, "stream_worker_alerts_corrections_in_total", 3)
        assert service.metric("stream_worker_alerts_corrections_already_alerted_total") == 2
        reader.poll(3.0)  # nothing else comes
        assert service.stop() == 0
    finally:
        reader.close()

    (alert,) = alerts(reader)
    assert (alert.origin, alert.sighting_id, alert.camera_id) == (
        AlertOrigin.CORRECTION,
        onto_the_list.sighting_id,
        "gate-1",
    )
    assert (alert.plate, alert.corrected_from, alert.candidate) == ("B840CK197", "X123YZ77", "B840CK197")
