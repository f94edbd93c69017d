"""The worker's producer settings (room for dead-lettered frames).

Publishing itself is the shared `Publisher` (stream_worker/service/publisher.py): idempotent,
acks=all, one delivery callback per record; idempotence keeps the order of a partition's records
across the producer's own retries, which per-camera ordering relies on.
"""

from __future__ import annotations

from stream_worker.service import kafka
from stream_worker.worker.settings import WorkerSettings

_HEADROOM_BYTES = 64 * 1024  # key, headers and batch overhead around a dead-lettered frame


def producer_config(settings: WorkerSettings) -> dict[str, object]:
    # Room for a dead-lettered frame of up to --max-frame-bytes (the broker may still refuse it).
    return kafka.producer_config(
        settings, **{"message.max.bytes": max(1_000_000, settings.max_frame_bytes + _HEADROOM_BYTES)}
    )
