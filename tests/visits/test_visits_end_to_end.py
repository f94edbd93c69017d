"""Visits end to end, from held-in pictures: two cameras of a site, `gate-1` its entry and `gate-2`
its exit, see the sample van (samples/car.jpg) and the gate truck's clip (videos/, every frame), the
van for 2 minutes, the truck for 15, in capture time. The frames go through `stream-worker run` on
the real Triton, `sightings`, `visits` and `notify`, each its own process, to a local webhook.

Visits with their dwell times (the entry and the exit are the same frames, so each pass's first read
is as far apart as the frames were captured); the truck, past the site's 10-minute limit, raises one
overstay, delivered once to the webhook asking for the site's overstays (signed, kind overstay, the
visit event's own JSON); the visits stage SIGKILLed with both visits open and started again loses
and duplicates nothing.
"""

from __future__ import annotations

import signal
import time
from collections import Counter

import pytest
from pipeline_services import Frame, produce_frames
from service_processes import WAIT_S, TopicReader, wait_until
from stream_servers import clip_plate, videos_dir
from support import serve_http

from stream_worker.cameras.store import write_settings
from stream_worker.contracts import PlateVisit
from stream_worker.contracts.cameras import CameraSettings
from stream_worker.contracts.notify import parse_target
from stream_worker.launchers.broker import create_topics
from stream_worker.media import REENCODED_JPEG_QUALITY, video_jpegs
from stream_worker.notify.secrets import ENV_PREFIX as SECRET_ENV_PREFIX
from stream_worker.notify.targets import write_target
from stream_worker.plates.matching import plate_distance
from tests.notify.receivers import SECRET, Hook

pytestmark = pytest.mark.integration

PARTITIONS = 3
ENTRY, EXIT = "gate-1", "gate-2"  # partitions 0 and 1 of the frames topic (pipeline_services)
TRUCK = videos_dir() / "gate-truck-Y663YO750.mp4"  # 4 fps
TRUCK_FRAME_MS = 250
VAN_FRAMES, VAN_FRAME_MS = 3, 200
VAN_STAY_S, TRUCK_STAY_S = 120, 900
TRUCK_ARRIVES_S = 30  # after the van, past the sightings' gap: another pass
LIMIT_S = 600
SECRET_ENV = "VISITS_E2E_SECRET"


def van_frames(camera: str, start_ms: int, van: bytes) -> list[Frame]:
    return [Frame(camera, f"{camera}/van-{k}", start_ms + k * VAN_FRAME_MS, van) for k in range(VAN_FRAMES)]


def truck_frames(camera: str, start_ms: int, truck: list[bytes]) -> list[Frame]:
    return [
        Frame(camera, f"{camera}/truck-{k}", start_ms + k * TRUCK_FRAME_MS, jpeg)
        for k, jpeg in enumerate(truck)
    ]


def visit_events(reader: TopicReader, poll_s: float = 0.3) -> list[PlateVisit]:
    reader.poll(poll_s)
    return [PlateVisit.model_validate_json(record.value) for record in reader.records]


def test_two_gates_visits_dwell_one_overstay_on_a_webhook_and_a_sigkill_of_visits(
    kafka_bootstrap,
    triton_url,
    pipeline_topics,
    start_service,
    car_jpeg,
    unique_name,
    monkeypatch,
):
    topics = pipeline_topics
    monkeypatch.setenv(SECRET_ENV_PREFIX + SECRET_ENV, SECRET)
    truck = list(video_jpegs(TRUCK, REENCODED_JPEG_QUALITY, "the visits test"))
    visits_topic, cameras_topic, targets_topic = (
        f"{unique_name}-{kind}" for kind in ("visits", "cameras", "targets")
    )
    create_topics(kafka_bootstrap, [visits_topic], PARTITIONS)
    for camera, role in ((ENTRY, "entry"), (EXIT, "exit")):
        settings = CameraSettings.model_validate({"site": {"name": "depot", "role": role}})
        write_settings(kafka_bootstrap, camera, settings, cameras_topic)
    hook = Hook()
    reader = TopicReader(kafka_bootstrap, visits_topic, PARTITIONS)

    def start_visits():
        return start_service(
            "visits", "visits started",
            "--input-topic", topics.sightings,
            "--output-topic", visits_topic,
            "--cameras-topic", cameras_topic,
            "--watchlist-topic", topics.watchlist,
            "--overstay-s", str(LIMIT_S),
            "--overstay-grace-s", "10800",  # the capture times are 2 h old: only the exits decide
        )  # fmt: skip

    try:
        with serve_http(hook.handler()) as port:
            url = f"http://127.0.0.1:{port}/hook"
            rules = {"overstays": "only", "sites": ["depot"]}
            target = {"type": "webhook", "url": url, "secret": f"${{{SECRET_ENV}}}", "rules": rules}
            write_target(kafka_bootstrap, "ops", parse_target(target), targets_topic)
            worker = start_service(
                "run", "worker started",
                "--triton-url", triton_url,
                "--input-topic", topics.frames,
                "--output-topic", topics.plates,
                "--dlq-topic", topics.dlq,
                "--triton-timeout-s", "300",
                "--retry-max-backoff-s", "1",
            )  # fmt: skip
            sightings = start_service(
                "sightings", "sightings started",
                "--input-topic", topics.plates,
                "--output-topic", topics.sightings,
                "--silence-s", "10",  # above the CPU worker's stalls: one sighting per pass
            )  # fmt: skip
            notify = start_service(
                "notify", "notify started",
                "--input-topic", topics.alerts,
                "--sightings-topic", topics.sightings,
                "--sightings-group-id", f"{unique_name}-notify-sightings",
                "--visits-topic", visits_topic,
                "--visits-group-id", f"{unique_name}-notify-visits",
                "--watchlist-topic", topics.watchlist,
                "--targets-topic", targets_topic,
                "--dlq-topic", f"{unique_name}-notify-dlq",
                "--deliveries-topic", f"{unique_name}-notify-deliveries",
                "--tests-topic", f"{unique_name}-notify-tests",
                "--allow-private-targets",
            )  # fmt: skip
            visits = start_visits()
            services = [worker, sightings, notify, visits]
            for service in services:
                service.wait_ready(WAIT_S)

            # Both vehicles enter; the visits stage is killed with both visits open.
            van_in = int(time.time() * 1000) - 2 * 3_600_000
            truck_in = van_in + TRUCK_ARRIVES_S * 1000
            entries = van_frames(ENTRY, van_in, car_jpeg) + truck_frames(ENTRY, truck_in, truck)
            produce_frames(kafka_bootstrap, topics.frames, entries)
            wait_until(
                lambda: Counter(e.event.value for e in visit_events(reader))["opened"] >= 2,
                "both entries opened",
                services,
                timeout_s=WAIT_S,
            )
            visits.stop(signal.SIGKILL)
            before = len(visit_events(reader))

            # Both leave, the van 2 minutes after it came, the truck 15: read while visits is down.
            exits = van_frames(EXIT, van_in + VAN_STAY_S * 1000, car_jpeg) + truck_frames(
                EXIT, truck_in + TRUCK_STAY_S * 1000, truck
            )
            produce_frames(kafka_bootstrap, topics.frames, exits)
            again = start_visits()
            services[-1] = again
            history = again.wait_for_log(lambda line: line.get("msg") == "visits history read", "the history")
            assert history["open"] >= 2, history

            def closed() -> int:
                return Counter(e.event.value for e in visit_events(reader))["closed"]

            wait_until(lambda: closed() >= 2, "both visits closed", services, timeout_s=WAIT_S)
            wait_until(lambda: hook.acknowledged, "the overstay not delivered", services)
            reader.poll(3.0)  # and nothing more
            time.sleep(2)
            for service in (again, notify):
                assert service.stop() == 0, service.log_tail()
    finally:
        reader.close()

    got = visit_events(reader, 0)  # what it read before it closed
    assert Counter(event.event_id for event in got).most_common(1)[0][1] == 1, "an event published twice"
    by_plate: dict[str, list[PlateVisit]] = {}
    for event in got:
        by_plate.setdefault(event.plate, []).append(event)
    van_plate = min(by_plate, key=lambda plate: plate_distance(plate, "B840CK197", 9))
    truck_plate = min(by_plate, key=lambda plate: plate_distance(plate, clip_plate(TRUCK), 9))
    print(f"\nvisits: {sorted(by_plate)}; {before} events before the kill, {len(got)} in all")
    assert plate_distance(van_plate, "B840CK197", 9) <= 1.0  # read as B840OK197: O for C
    assert truck_plate == clip_plate(TRUCK)
    van = {event.event.value: event for event in by_plate[van_plate]}
    truck_events = {event.event.value: event for event in by_plate[truck_plate]}
    assert [e.event.value for e in by_plate[van_plate]] == ["opened", "closed"]
    assert [e.event.value for e in by_plate[truck_plate]] == ["opened", "overstay", "closed"]
    assert (van["closed"].dwell_s, van["closed"].exit_camera_id) == (VAN_STAY_S, EXIT)
    assert (truck_events["closed"].dwell_s, truck_events["closed"].exit_camera_id) == (TRUCK_STAY_S, EXIT)
    overstay = truck_events["overstay"]
    assert (overstay.overstay_s, overstay.dwell_s) == (LIMIT_S, LIMIT_S)

    # The overstay, once, signed, as the visit event's own JSON; nothing else reached the webhook.
    assert hook.received == [overstay.event_id] and hook.acknowledged == [overstay.event_id]
    assert hook.kinds == ["overstay"] and hook.bad_signatures == 0
    assert PlateVisit.model_validate(hook.bodies[overstay.event_id]) == overstay
    assert SECRET not in notify.log_path.read_text()
