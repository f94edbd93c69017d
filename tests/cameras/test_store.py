"""The cameras' store on the real broker: a cameras topic that `cameras set` creates is partitioned
as the connector's replicas need it to share the cameras."""

from __future__ import annotations

import pytest

from stream_worker.cameras.store import DEFAULT_PARTITIONS, read_cameras, write_settings
from stream_worker.connector.settings import ConnectorSettings
from stream_worker.contracts.cameras import CameraSettings
from stream_worker.service.compacted import topic_partitions

pytestmark = pytest.mark.integration


def test_a_cameras_topic_created_by_a_write_has_the_connector_s_partitions(
    kafka_bootstrap: str, unique_name: str
) -> None:
    from confluent_kafka.admin import AdminClient

    topic = f"{unique_name}-cameras"
    write_settings(kafka_bootstrap, "gate-1", CameraSettings(min_plate_width=20), topic)
    partitions = topic_partitions(AdminClient({"bootstrap.servers": kafka_bootstrap}), topic, 30.0)
    assert partitions is not None and len(partitions) == DEFAULT_PARTITIONS == 6
    assert ConnectorSettings.model_fields["cameras_partitions"].default == DEFAULT_PARTITIONS
    assert read_cameras(kafka_bootstrap, topic).values["gate-1"].min_plate_width == 20
