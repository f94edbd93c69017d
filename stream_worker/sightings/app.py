"""The composition root of `stream-worker sightings`: consume plates -> group -> vote -> publish
sightings -> commit, all on one thread.

Guarantees and how they are kept:
- At-least-once: a plates offset is committed only below the first read still held by an open
  pass or by a sighting the broker has not acknowledged (engine.py, service/offsets.py), and
  counts as committed only once the broker accepted that partition's commit (service/commits.py).
  A crash (SIGKILL included) re-reads from the commit, starting a little earlier (consumer.py),
  and rebuilds the passes.
- Recognisable duplicates: a sighting's id is the camera and the position of its pass's first
  read, so a pass published again after a restart carries the same id.
- Per-camera order: a camera's events are in one plates partition, its sightings are keyed by
  the camera and published in the order their passes closed; the idempotent producer keeps it.
- Rebalance and SIGTERM/SIGINT: sightings already closed are flushed and committed; open passes
  are dropped uncommitted (never published half done): whoever reads the partition next rebuilds
  them from the commit. A stop drains within `shutdown_timeout_s` and exits 0; a revocation's
  flush is cut short by a stop (service/deadlines.py).
"""

from __future__ import annotations

import functools
import logging
import re
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from confluent_kafka import KafkaError

from stream_worker.cameras.following import follow_camera_settings
from stream_worker.cameras.regions import CameraRegions
from stream_worker.contracts import PlateSighting
from stream_worker.contracts.plate_formats import Region
from stream_worker.service import kafka
from stream_worker.service.commits import Committer
from stream_worker.service.lifecycle import LoopService, serve
from stream_worker.service.publisher import OutputRecord, Publisher
from stream_worker.service.records import Decoder, PlateRecord
from stream_worker.sightings.consumer import Assigned, PlatesConsumer
from stream_worker.sightings.engine import Outgoing, SightingsEngine
from stream_worker.sightings.metrics import SightingsMetrics
from stream_worker.sightings.reads import InvalidEvent, Observation, parse_event
from stream_worker.sightings.settings import SightingsSettings, load_settings

log = logging.getLogger("stream_worker.sightings")

CONSUME_CHUNK = 500
POLL_S = 0.1


class SightingsService(LoopService):
    log = log
    started_message = "sightings started"
    started_settings = ("input_topic", "output_topic", "group_id")

    def __init__(self, settings: SightingsSettings) -> None:
        self.settings = settings
        self.metrics = SightingsMetrics()
        super().__init__(settings, self.metrics)
        self._replayed_reported = 0
        self.decode: Decoder[Observation] = Decoder(
            "PlateEvent",
            settings.input_topic,
            lambda record: parse_event(record.value, record.partition, record.offset),
            self.metrics.events_in,
            self.metrics.invalid_events,
            log,
            errors=(InvalidEvent,),
        )
        # The plate formats load while the rest connects; no record is read before they are (`_turn`).
        self.cameras = follow_camera_settings(
            settings, settings.cameras_topic, self.metrics.camera_settings_skipped.inc
        )
        self.closers.append(self.cameras.close)
        self.regions = CameraRegions(self.metrics.unknown_region.inc)
        self.engine = SightingsEngine(
            settings.input_topic,
            settings.grouping_rules(),
            settings.voting_rules(),
            settings.min_reads,
            plate_format_of=self._plate_format_of,
            region_of=self._region_of,
            publish_non_plates=settings.publish_non_plates,
            on_not_plate=self._not_plate,
            min_region_confidence=settings.min_region_confidence,
        )
        self.publisher = Publisher(kafka.producer_config(settings))
        self.consumer = PlatesConsumer(
            settings, self.metrics, self._on_assign, self._on_revoke, self._on_lost
        )
        self.committer = Committer(self.consumer, self.engine, self.metrics)

    # --- lifecycle -------------------------------------------------------------------------

    def _turn(self) -> None:
        if not self.cameras.caught_up:  # a pass must never close without its camera's plate format
            self.cameras.wait_until_caught_up(POLL_S)
            return
        for record in self.consumer.consume(CONSUME_CHUNK, POLL_S):
            self._accept(record)
        self._pump()

    def _finish(self) -> dict[str, int]:
        undelivered = self.publisher.flush(self.deadlines.drain_left())
        self.publisher.poll(0)
        self.committer.commit()
        return {
            "open_passes_left_uncommitted": len(self.engine.open_groups()),
            "undelivered_sightings": undelivered,
        }

    # --- the pipeline ----------------------------------------------------------------------

    def _accept(self, record: PlateRecord) -> None:
        if record.partition not in self.engine.assigned():
            return  # fetched before a revocation: its next owner reads it
        observation = self.decode(record)
        if observation is not None:
            self.metrics.reads_in.inc(len(observation.reads))
        for outgoing in self.engine.add(record.partition, record.offset, observation, time.monotonic()):
            self._publish(outgoing)

    def _pump(self) -> None:
        for outgoing in self.engine.expire(time.monotonic()):
            self._publish(outgoing)
        self.publisher.poll(0)
        self.committer.commit()
        if (replayed := self.engine.counts.replayed) > self._replayed_reported:
            self.metrics.replayed_groups.inc(replayed - self._replayed_reported)
            self._replayed_reported = replayed
        self.metrics.open_groups.set(len(self.engine.open_groups()))
        self.metrics.held.set(self.engine.held())
        self.loop_clock.tick()
        self._log_status()

    def _publish(self, outgoing: Outgoing) -> None:
        sighting = outgoing.sighting
        record = OutputRecord(self.settings.output_topic, sighting.camera_id.encode(), sighting.to_json())
        self.publisher.publish(record, lambda error: self._delivered(outgoing, error))

    def _delivered(self, outgoing: Outgoing, error: KafkaError | None) -> None:
        sighting = outgoing.sighting
        if error is None:
            self.engine.delivered(outgoing)
            self.metrics.sightings_out.labels(sighting.closed_by.value).inc()
            self.metrics.reads_per_sighting.observe(sighting.reads)
            self.metrics.delay.observe(max(0.0, (datetime.now(UTC) - sighting.last_seen).total_seconds()))
            return
        refused = self._refused(error, "a sighting", sighting_id=sighting.sighting_id)
        if refused and outgoing.partition in self.engine.assigned():
            self._publish(outgoing)

    def _plate_format_of(self, camera_id: str) -> re.Pattern[str] | None:
        settings = self.cameras.settings_for(camera_id)
        if settings is None or settings.plate_format is None:
            return None
        return _compiled(settings.plate_format)

    def _region_of(self, camera_id: str) -> Region | None:
        return self.regions.of(camera_id, self.cameras.settings_for(camera_id))

    def _not_plate(self, sighting: PlateSighting) -> None:
        self.metrics.not_plates.labels(sighting.camera_id).inc()
        log.debug(
            "dropped a sighting whose text is not a plate of its camera's format",
            extra={"sighting_id": sighting.sighting_id, "camera": sighting.camera_id, "text": sighting.text},
        )

    # --- rebalance -------------------------------------------------------------------------

    def _on_assign(self, assigned: list[Assigned]) -> None:
        for item in assigned:
            self.engine.assign(item.partition, item.floor)
        log.info(
            "partitions assigned",
            extra={
                "partitions": [f"{self.settings.input_topic}:{a.partition}" for a in assigned],
                "replays": {
                    str(a.partition): [a.replay_from, a.floor] for a in assigned if a.replay_from is not None
                },
            },
        )

    def _on_revoke(self, partitions: list[int]) -> None:
        self._flush_and_commit(self.publisher, self.committer)
        dropped = sum(self.engine.revoke(p) for p in partitions)
        log.info("partitions revoked", extra={"partitions": partitions, "open_passes_dropped": dropped})

    def _on_lost(self, partitions: list[int]) -> None:
        for partition in partitions:
            self.engine.revoke(partition)
        log.warning("partitions lost", extra={"partitions": partitions})

    # --- observability ---------------------------------------------------------------------

    def _status(self) -> dict[str, Any]:
        sample = self.metrics.registry.get_sample_value
        return {
            "events_in": sample("stream_worker_sightings_events_in_total"),
            "open_passes": len(self.engine.open_groups()),
            "held": self.engine.held(),
            "unacked_sightings": len(self.publisher),
            "assigned": self.engine.assigned(),
        }

    def _readiness(self) -> tuple[bool, str]:
        if not self.cameras.caught_up:
            return False, f"reading the camera settings ({self.settings.cameras_topic})"
        assigned = self.engine.assigned()
        if not assigned:
            return False, "no partitions assigned"
        return True, f"{len(assigned)} partitions assigned"


@functools.lru_cache(maxsize=256)
def _compiled(plate_format: str) -> re.Pattern[str]:
    return re.compile(plate_format)  # checked by the settings contract


def main(cli_args: Sequence[str]) -> int:
    """`stream-worker sightings`: 0 after a clean stop, 1 after a fatal Kafka error, 2 for bad settings."""
    return serve(lambda: load_settings(cli_args), SightingsService)
