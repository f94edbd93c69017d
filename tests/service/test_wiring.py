"""Both services build their consumer side from service/ (consumer, commits, deadlines): built
against nothing (no broker, no Triton; nothing connects until it runs), they export their commit
failures and offset gaps at 0 for their input topic and commit through one Committer."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from stream_worker.service.commits import Committer
from stream_worker.service.consumer import GroupConsumer
from stream_worker.service.lifecycle import LoopService
from stream_worker.sightings.app import SightingsService
from stream_worker.sightings.settings import load_settings as sightings_settings
from stream_worker.worker.app import Worker
from stream_worker.worker.settings import load_settings as worker_settings

NOWHERE = ["--bootstrap-servers=127.0.0.1:1", "--metrics-port=0", "--shutdown-timeout-s=10"]


def worker() -> LoopService:
    return Worker(worker_settings([*NOWHERE, "--triton-url=127.0.0.1:1", "--input-topic=frames"]))


def sightings() -> LoopService:
    return SightingsService(sightings_settings([*NOWHERE, "--input-topic=frames"]))


@pytest.mark.parametrize(
    ("build", "prefix"), [(worker, "stream_worker"), (sightings, "stream_worker_sightings")]
)
def test_a_service_s_consumer_side_comes_from_service(build: Callable[[], LoopService], prefix: str) -> None:
    service = build()
    try:
        assert isinstance(service.consumer, GroupConsumer) and service.consumer.topic == "frames"
        assert isinstance(service.committer, Committer)  # type: ignore[attr-defined]
        assert service.deadlines.close_reserve_s == 2.0  # a fifth of 10 s
        sample = service.metrics.registry.get_sample_value  # type: ignore[attr-defined]
        assert sample(f"{prefix}_commit_failures_total", {"topic": "frames"}) == 0
        assert sample(f"{prefix}_consumer_offset_gaps_total", {"topic": "frames", "outcome": "healed"}) == 0
        assert service.committer.commit() == {}  # type: ignore[attr-defined]  # nothing owned yet
    finally:
        service.consumer.close()
        service.http.stop()
        if isinstance(service, Worker):
            service.pool.close()
