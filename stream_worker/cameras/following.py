"""The cameras' settings as the worker sees them: read whole before the first frame, then followed
live on a thread of its own (service/compacted.py's `FollowerThread`), so a change applies within
a second without the worker's loop owning another consumer.

`settings_for` is safe from any thread and cheap (a dict lookup in a mapping replaced whole on a
change). A camera without settings gets None: the worker then does what it did before cameras had
settings. What the settings do to a frame's plates is the worker's `camera_rules.py`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from stream_worker.cameras.records import decode_record
from stream_worker.cameras.store import DEFAULT_TIMEOUT_S, DEFAULT_TOPIC
from stream_worker.contracts.cameras import CameraSettings
from stream_worker.service.compacted import CompactedFollower, FollowerThread
from stream_worker.service.settings import ServiceSettings


class CameraSettingsFollower:
    """Follows the `cameras` topic. `start()`, then `wait_until_caught_up(timeout_s)` before the
    first frame; `close()` on shutdown. `on_change(camera_ids)` runs on the follower's thread."""

    def __init__(
        self,
        bootstrap_servers: str,
        topic: str = DEFAULT_TOPIC,
        config: Mapping[str, object] | None = None,
        on_skipped: Callable[[], None] = lambda: None,
        on_change: Callable[[set[str]], None] = lambda camera_ids: None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        poll_s: float = 0.5,
    ) -> None:
        self.topic = topic
        self._on_change = on_change

        def make() -> CompactedFollower[str, CameraSettings]:
            return CompactedFollower(
                bootstrap_servers,
                topic,
                decode_record,
                config,
                on_skipped=on_skipped,
                timeout_s=timeout_s,
                name="camera settings",
            )

        self._thread: FollowerThread[str, CameraSettings] = FollowerThread(
            make, poll_s=poll_s, on_change=self._changed, name="camera-settings"
        )

    def start(self) -> CameraSettingsFollower:
        self._thread.start()
        return self

    def wait_until_caught_up(self, timeout_s: float | None = None) -> bool:
        """True once the topic has been read to its end; False when `timeout_s` passed first."""
        return self._thread.wait_until_caught_up(timeout_s)

    @property
    def caught_up(self) -> bool:
        return self._thread.caught_up

    @property
    def settings(self) -> Mapping[str, CameraSettings]:
        """Every camera with settings (a mapping never changed after it is returned)."""
        return self._thread.values

    def settings_for(self, camera_id: str) -> CameraSettings | None:
        """The camera's settings; None when it has none (the defaults)."""
        return self._thread.get(camera_id)

    def close(self) -> None:
        self._thread.close()

    def _changed(self, camera_ids: set[str]) -> None:
        self._on_change(camera_ids)


def follow_camera_settings(
    settings: ServiceSettings, topic: str, on_skipped: Callable[[], None]
) -> CameraSettingsFollower:
    """A started follower of `topic` on a service's broker and Kafka settings: the settings load
    while the rest of the service connects."""
    return CameraSettingsFollower(
        settings.bootstrap_servers, topic, settings.kafka_config, on_skipped=on_skipped
    ).start()
