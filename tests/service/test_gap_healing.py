"""Offset gaps on the real local broker: the worker and the sightings service get every record.

`scripts/broker_fetch_skip.py` holds the write of the batch at offset 3 back, as a preempted Tansu
thread does: a consumer waiting at the end of the partition is handed offset 4 first and, left to
itself, never asks for 3 (tests/launchers/test_broker_fetch_skip.py keeps that reproduction
current). Both services must notice the gap, read offset 3 once it is stored, and count it healed.
"""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path

import pytest
from plate_events import T0, plate, plate_event
from service_processes import WAIT_S, ServiceProcess, TopicReader, committed_offsets

from stream_worker.launchers.broker import create_topics
from tests.conftest import samples_dir

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "broker_fetch_skip.py"
RECORDS = 8
HOLD_S = 1.0  # within the healer's bound (3 tries over 2 s)


def _skip_script():
    spec = importlib.util.spec_from_file_location("broker_fetch_skip", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _wait_for_metric(service: ServiceProcess, sample: str, value: float) -> None:
    deadline = time.monotonic() + WAIT_S
    while service.metric(sample) < value:
        assert service.is_running(), service.log_tail()
        assert time.monotonic() < deadline, (
            f"{sample} stayed at {service.metric(sample)}:\n{service.log_tail()}"
        )
        time.sleep(0.2)


def _gap_counts(service: ServiceProcess, prefix: str, topic: str) -> dict[str, float]:
    return {
        outcome: service.metric(f'{prefix}_consumer_offset_gaps_total{{outcome="{outcome}",topic="{topic}"}}')
        for outcome in ("healed", "accepted")
    }


def _start(command: str, args: list[str], log: Path, started: str) -> ServiceProcess:
    service = ServiceProcess(args, log, command=command, started=started).start()
    service.wait_for_log(lambda line: line.get("msg") == "partitions assigned", "assignment")
    return service


@pytest.mark.integration
def test_the_worker_reads_the_record_the_local_broker_skipped(
    tmp_path: Path, triton_url: str, unique_name: str
) -> None:
    skip = _skip_script()
    frames, plates, dlq = (f"{unique_name}-{name}" for name in ("frames", "plates", "dlq"))
    with skip.held_back_broker(HOLD_S) as bootstrap:
        create_topics(bootstrap, [frames, plates, dlq], 1)
        args = ["--bootstrap-servers", bootstrap, "--triton-url", triton_url,
                "--group-id", f"{unique_name}-g", "--input-topic", frames, "--output-topic", plates,
                "--dlq-topic", dlq, "--metrics-port", "0", "--session-timeout-ms", "6000"]  # fmt: skip
        worker = _start("run", args, tmp_path / "worker.log", "worker started")
        try:
            jpeg = (samples_dir() / "cat.jpeg").read_bytes()
            produced = skip.produce_as_two_cameras(bootstrap, frames, [jpeg] * RECORDS)
            assert sorted(produced.values()) == list(range(RECORDS))
            _wait_for_metric(worker, "stream_worker_frames_in_total", RECORDS)
            gaps = _gap_counts(worker, "stream_worker", frames)
            reader = TopicReader(bootstrap, plates, 1)
            deadline = time.monotonic() + WAIT_S
            while len({r.event["source"]["offset"] for r in reader.records}) < RECORDS:
                assert time.monotonic() < deadline, f"events of {len(reader.records)} frames"
                reader.poll(0.5)
            reader.close()
            assert worker.stop() == 0
        finally:
            if worker.is_running():
                worker.stop()
        print(f"gaps: {gaps}; frames in: {RECORDS}")
        assert {r.event["source"]["offset"] for r in reader.records} == set(range(RECORDS))
        assert gaps == {"healed": 1.0, "accepted": 0.0}
        assert committed_offsets(bootstrap, f"{unique_name}-g", frames, 1) == {0: RECORDS}


@pytest.mark.integration
def test_the_sightings_service_groups_the_event_the_local_broker_skipped(
    tmp_path: Path, unique_name: str
) -> None:
    skip = _skip_script()
    plates, sightings = f"{unique_name}-plates", f"{unique_name}-sightings"
    with skip.held_back_broker(HOLD_S) as bootstrap:
        create_topics(bootstrap, [plates, sightings], 1)
        args = ["--bootstrap-servers", bootstrap, "--group-id", f"{unique_name}-g", "--input-topic", plates,
                "--output-topic", sightings, "--metrics-port", "0", "--session-timeout-ms", "6000",
                "--silence-s", "2"]  # fmt: skip
        service = _start("sightings", args, tmp_path / "sightings.log", "sightings started")
        try:
            events = [
                plate_event(
                    "gate", T0 + i * 0.1, [plate("A123BC77", (100 + 5 * i, 100, 200 + 5 * i, 130))], i
                )
                for i in range(RECORDS)
            ]
            skip.produce_as_two_cameras(bootstrap, plates, [e.model_dump_json().encode() for e in events])
            _wait_for_metric(service, "stream_worker_sightings_events_in_total", RECORDS)
            gaps = _gap_counts(service, "stream_worker_sightings", plates)
            reader = TopicReader(bootstrap, sightings, 1)
            deadline = time.monotonic() + WAIT_S
            while not reader.records:
                assert time.monotonic() < deadline, "no sighting"
                reader.poll(0.5)
            reader.close()
        finally:
            service.stop()
        print(f"gaps: {gaps}; sighting: {reader.records[0].event}")
        assert gaps == {"healed": 1.0, "accepted": 0.0}
        (sighting,) = [record.event for record in reader.records]
        assert sighting["reads"] == RECORDS and sighting["text"] == "A123BC77"
