"""The console's Notifications page and API, and the Cameras page's live state, on the real broker:
an admin's target (from the page's YAML, or the API's JSON) lands on the targets topic and is
audited; a viewer sees the targets with their secrets as ${NAME} references only (never the value
in notify's environment) and gets 403 on every write; a bad target is a 422 that names why and
writes nothing; "send a test" puts a NotifyTest on the tests topic; the delivery log shows the
notify service's NotifyDelivery records; each camera's state comes from the camera-status topic."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from confluent_kafka import Producer
from fastapi.testclient import TestClient

from stream_worker.cameras.status import CameraStatus
from stream_worker.cameras.store import write_settings
from stream_worker.contracts.cameras import CameraSettings, CameraSource
from stream_worker.contracts.notify import (
    DeliveryOutcome,
    NotifyDelivery,
    NotifyStatus,
    NotifyTest,
    decode_record,
)
from stream_worker.service.compacted import read_compacted, write_compacted

from .conftest import TOKENS, Console, make_console, signed_in, topics_of

pytestmark = pytest.mark.integration

SECRET_VALUE = "not in/the console at all"  # a space and a slash
GATE_YAML = """
type: webhook
url: https://hooks.example.com/gate
secret: ${GATE_SECRET}
rules:
  lists: [stolen]
"""


@pytest.fixture
def console(
    tmp_path: Path, users_file: Path, kafka_bootstrap: str, unique_name: str, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Console]:
    monkeypatch.setenv("GATE_SECRET", SECRET_VALUE)  # were the console to resolve it, it would show
    made = make_console(tmp_path, users_file, kafka_bootstrap, **topics_of(unique_name))
    made.app.state.backend.timeout_s = 15.0
    yield made
    made.close()


def _api(console: Console, name: str) -> TestClient:
    return TestClient(console.app, headers={"authorization": f"Bearer {TOKENS[name]}"})


def _targets(console: Console, kafka_bootstrap: str) -> dict:
    return dict(read_compacted(kafka_bootstrap, console.settings.notify_targets_topic, decode_record).values)


def test_an_admins_target_lands_on_the_topic_and_a_viewer_sees_it_without_secrets(
    console: Console, kafka_bootstrap: str
) -> None:
    admin, token = signed_in(console.app, "ada")
    answer = admin.post(
        "/notifications/targets", data={"csrf_token": token, "name": "gate", "target": GATE_YAML}
    )
    assert answer.status_code == 303, answer.text
    stored = _targets(console, kafka_bootstrap)["gate"]
    assert stored.url == "https://hooks.example.com/gate" and stored.secret == "${GATE_SECRET}"
    assert stored.rules.lists == ("stolen",)
    assert "Saved the target gate." in admin.get("/notifications").text
    edit = admin.get("/notifications", params={"edit": "gate"}).text
    assert 'id="target-text"' in edit and "hooks.example.com/gate" in edit.split('id="target-text"')[1]

    viewer, viewer_token = signed_in(console.app, "vic")
    page = viewer.get("/notifications").text
    assert "hooks.example.com/gate" in page and "${GATE_SECRET}" in page
    assert SECRET_VALUE not in page and "not in/the" not in page
    assert 'id="set-target"' not in page and "Send a test" not in page  # no admin forms
    listed = _api(console, "vic").get("/api/notify/targets")
    assert listed.status_code == 200 and SECRET_VALUE not in listed.text
    assert listed.json()[0]["target"]["secret"] == "${GATE_SECRET}"

    # every write a viewer tries: 403, nothing written
    form = {"csrf_token": viewer_token}
    assert (
        viewer.post("/notifications/targets", data={**form, "name": "x", "target": GATE_YAML}).status_code
        == 403
    )
    assert viewer.post("/notifications/targets/gate/remove", data=form).status_code == 403
    assert viewer.post("/notifications/targets/gate/test", data=form).status_code == 403
    viewer_api = _api(console, "vic")
    assert (
        viewer_api.put(
            "/api/notify/targets/x", json={"type": "webhook", "url": "https://a.example"}
        ).status_code
        == 403
    )
    assert viewer_api.delete("/api/notify/targets/gate").status_code == 403
    assert viewer_api.post("/api/notify/targets/gate/test").status_code == 403
    assert set(_targets(console, kafka_bootstrap)) == {"gate"}

    # an edit through the API replaces it; a removal through the page tombstones it
    api = _api(console, "ada")
    changed = api.put(
        "/api/notify/targets/gate", json={"type": "webhook", "url": "https://hooks.example.com/v2"}
    )
    assert changed.status_code == 200, changed.text
    assert _targets(console, kafka_bootstrap)["gate"].url == "https://hooks.example.com/v2"
    assert admin.post("/notifications/targets/gate/remove", data={"csrf_token": token}).status_code == 303
    assert _targets(console, kafka_bootstrap) == {}
    assert api.delete("/api/notify/targets/gate").status_code == 404
    actions = [row["action"] for row in api.get("/api/audit").json()]
    assert actions == ["notify.target.remove", "notify.target.set", "notify.target.set"]


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("type: webhook\nurl: https://a.example\nsecret: in clear\n", "must be a ${NAME} reference"),
        ("type: webhook\nurl: ftp://a.example\n", "must start with http:// or https://"),
        ("type: pigeon\n", "type"),
        ("[not, a, mapping]", "must be a mapping"),
        ("type: webhook\n  url: [unclosed", "is not valid JSON or YAML"),
    ],
)
def test_a_bad_target_is_a_422_that_says_why_and_writes_nothing(
    console: Console, kafka_bootstrap: str, text: str, reason: str
) -> None:
    admin, token = signed_in(console.app, "ada")
    answer = admin.post("/notifications/targets", data={"csrf_token": token, "name": "gate", "target": text})
    assert answer.status_code == 422 and reason in answer.text, answer.text
    assert "in clear" not in answer.text  # the refused secret is not echoed
    bad_name = admin.post(
        "/notifications/targets", data={"csrf_token": token, "name": "Gate/1", "target": GATE_YAML}
    )
    assert bad_name.status_code == 422
    assert _targets(console, kafka_bootstrap) == {}


def test_send_a_test_puts_a_request_on_the_tests_topic_and_the_log_shows_deliveries(
    console: Console, kafka_bootstrap: str
) -> None:
    api = _api(console, "ada")
    assert api.post("/api/notify/targets/gate/test").status_code == 404  # no such target
    assert (
        api.put("/api/notify/targets/gate", json={"type": "webhook", "url": "https://a.example"}).status_code
        == 200
    )
    sent = api.post("/api/notify/targets/gate/test")
    assert sent.status_code == 202, sent.text
    tests = read_compacted(
        kafka_bootstrap,
        console.settings.notify_tests_topic,
        lambda key, value: ((key or b"").decode(), NotifyTest.model_validate_json(value or b"")),
    ).values
    assert tests["gate"].test_id == sent.json()["test_id"]
    assert api.get("/api/audit").json()[0]["action"] == "notify.target.test"

    now = datetime.now(UTC)
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    for seconds, outcome, status in [
        (2, DeliveryOutcome.RETRIED, 503),
        (1, DeliveryOutcome.FAILED, 500),
        (0, DeliveryOutcome.SENT, 200),
    ]:
        record = NotifyDelivery(
            target="gate",
            event_id=f"alert-{outcome.value}",
            kind="alert",
            outcome=outcome,
            attempts=3,
            status=status,
            error="HTTP 500" if outcome is DeliveryOutcome.FAILED else None,
            at=now - timedelta(seconds=seconds),
        )
        producer.produce(console.settings.notify_deliveries_topic, record.to_json(), b"gate")
    producer.produce(console.settings.notify_deliveries_topic, b"not a delivery", b"gate")
    assert producer.flush(15) == 0
    log: list = []
    deadline = time.monotonic() + 15  # the console follows the log: it shows them within seconds
    while len(log) < 3 and time.monotonic() < deadline:
        time.sleep(0.2)
        log = _api(console, "vic").get("/api/notify/deliveries").json()
    assert [(d["outcome"], d["status"]) for d in log] == [("sent", 200), ("failed", 500), ("retried", 503)]
    viewer, _ = signed_in(console.app, "vic")
    page = viewer.get("/notifications").text
    assert "alert-failed" in page and "HTTP 500" in page


def test_the_cameras_page_shows_each_cameras_live_state(console: Console, kafka_bootstrap: str) -> None:
    now = time.time()

    def status(camera_id: str, state: str, error: str | None, updated_at: float) -> tuple[bytes, bytes]:
        record = CameraStatus(
            camera_id=camera_id, state=state, state_since=now - 60, last_error=error, source="rtsp://${CAM_USER}@cam/1",
            replica="r1", updated_at=updated_at, decoded_fps=12.5, published_fps=2.0, frames_decoded=750,
            frames_published=120, frames_static=0, frames_dropped=0, delivery_errors=0, reconnects=3,
            motion_share=None, last_frame_at=now - 1,
        )  # fmt: skip
        return camera_id.encode(), record.to_json()

    write_compacted(
        kafka_bootstrap,
        console.settings.camera_status_topic,
        [
            status("gate", "streaming", None, now),
            status("yard", "unauthorized", "401 Unauthorized from the camera", now),
            status("dock", "streaming", None, now - 3600),  # its replica stopped reporting
        ],
    )
    viewer, _ = signed_in(console.app, "vic")
    page = viewer.get("/cameras").text
    for expected in ("unauthorized", "401 Unauthorized from the camera", "12.5", "(stale)"):
        assert expected in page, expected
    states = {s["camera_id"]: s for s in _api(console, "vic").get("/api/camera-status").json()}
    assert states["yard"]["state"] == "unauthorized" and states["gate"]["decoded_fps"] == 12.5
    assert (states["gate"]["stale"], states["dock"]["stale"]) == (False, True)


def test_a_camera_that_sheds_shows_it_and_its_page_shows_its_state_source_and_frames(
    console: Console, kafka_bootstrap: str
) -> None:
    now = time.time()
    record = CameraStatus(
        camera_id="dash", state="streaming", state_since=now - 60, last_error=None, source="rtsp://${U}:${P}@cam/2",
        replica="r1", updated_at=now, decoded_fps=25.0, published_fps=4.0, frames_decoded=1500,
        frames_published=240, frames_static=0, frames_dropped=0, delivery_errors=0, reconnects=0,
        motion_share=None, last_frame_at=now - 2, offered_fps=10.0, frames_offered=600, frames_shed=360,
        delay_s=2.3, max_delay_s=5.0,
    )  # fmt: skip
    write_compacted(kafka_bootstrap, console.settings.camera_status_topic, [(b"dash", record.to_json())])
    settings = CameraSettings(source=CameraSource(url="rtsp://${U}:${P}@cam/2", fps=10), region="eu")
    write_settings(kafka_bootstrap, "dash", settings, console.settings.cameras_topic)
    viewer, _ = signed_in(console.app, "vic")
    listing = viewer.get("/cameras").text
    assert "4 of 10" in listing and '<td class="shed">360</td>' in listing
    page = viewer.get("/cameras/dash").text
    for expected in (
        "streaming",
        "eu",
        "rtsp://***@cam/2",
        "1500 / 240",
        "(4 of 10 fps)",
        "360",
        "2.3 s behind",
    ):
        assert expected in page, expected
    assert "${U}" not in page.split('id="camera-status"')[1].split("</dl>")[0]
    assert "s ago" in page
    state = {s["camera_id"]: s for s in _api(console, "vic").get("/api/camera-status").json()}["dash"]
    assert (state["offered_fps"], state["frames_shed"], state["delay_s"]) == (10.0, 360, 2.3)


def test_a_secret_url_is_stored_only_as_a_reference_and_a_viewer_sees_no_secret_path(
    console: Console, kafka_bootstrap: str
) -> None:
    """A chat webhook's URL is its credential: in clear it is refused (nothing echoed, nothing
    written); marked secret (url: ${NAME}, the URL whole in notify's secrets) it is stored and shown
    as that reference only, to viewers in the API and the page."""
    api = _api(console, "ada")
    slack = "https://hooks.slack.com/services/T000/B000/XsEcReTpAtH"
    refused = api.put("/api/notify/targets/chat", json={"type": "webhook", "url": slack, "format": "slack"})
    assert refused.status_code == 422 and "url: ${NAME}" in refused.text, refused.text
    assert "XsEcReTpAtH" not in refused.text
    admin, token = signed_in(console.app, "ada")
    teams = "type: webhook\nurl: https://func.example.net/api/notify?code=XsEcReTpAtH\n"
    answer = admin.post("/notifications/targets", data={"csrf_token": token, "name": "chat", "target": teams})
    assert answer.status_code == 422 and "XsEcReTpAtH" not in answer.text
    assert _targets(console, kafka_bootstrap) == {}

    saved = api.put(
        "/api/notify/targets/chat", json={"type": "webhook", "url": "${SLACK_WEBHOOK_URL}", "format": "slack"}
    )
    assert saved.status_code == 200, saved.text
    viewer, _ = signed_in(console.app, "vic")
    [shown] = _api(console, "vic").get("/api/notify/targets").json()
    assert shown["target"]["url"] == "${SLACK_WEBHOOK_URL}"
    assert "${SLACK_WEBHOOK_URL}" in viewer.get("/notifications").text


def test_the_console_warns_of_a_missing_secret_and_shows_dead_letters(
    console: Console, kafka_bootstrap: str
) -> None:
    """From notify's status record (the names of its target secrets, its dead letters per target,
    as the service writes it): a target naming a secret notify lacks is flagged in the API, on the
    page and when saved; each target's dead-letter count is shown."""
    api = _api(console, "ada")
    assert (
        api.put("/api/notify/targets/gate", json={"type": "webhook", "url": "https://a.example"}).json()[
            "missing_secrets"
        ]
        is None
    )  # notify has not said yet
    status = NotifyStatus(secrets=("GATE_SECRET",), dead_letters={"chat": 7}, at=datetime.now(UTC))
    write_compacted(kafka_bootstrap, console.settings.notify_status_topic, [(b"notify", status.to_json())])
    deadline = time.monotonic() + 30  # the console follows notify-status: the record shows within seconds
    while api.get("/api/notify/targets").json()[0]["missing_secrets"] is None:
        assert time.monotonic() < deadline, "notify's status record never reached the console"
        time.sleep(0.5)
    saved = api.put(
        "/api/notify/targets/chat", json={"type": "webhook", "url": "${CHAT_URL}", "secret": "${GATE_SECRET}"}
    )
    assert saved.status_code == 200 and saved.json()["missing_secrets"] == ["CHAT_URL"], saved.text
    listed = {
        t["name"]: (t["missing_secrets"], t["dead_letters"])
        for t in _api(console, "vic").get("/api/notify/targets").json()
    }
    assert listed == {"chat": (["CHAT_URL"], 7), "gate": ([], 0)}
    admin, token = signed_in(console.app, "ada")
    page = admin.post(
        "/notifications/targets",
        data={"csrf_token": token, "name": "mail", "target": GATE_YAML.replace("GATE_SECRET", "MAIL_SECRET")},
        follow_redirects=True,
    ).text
    assert "Notify has no secret MAIL_SECRET" in page
    shown = admin.get("/notifications").text
    assert "missing where notify runs: CHAT_URL" in shown
    assert '<td class="dead-letters">7</td>' in shown
