"""An admin reviews a read on its sighting's page, on the real broker: the correction is published
on the compacted corrections topic (and the page answers once the console has it back), stored
beside the sighting, shown (who, when, old -> new), found by search under the new text, audited;
a viewer cannot, a bad text is a 422 that writes nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from store_records import plate_sighting

from stream_worker.contracts import corrections as correction_records
from stream_worker.contracts.corrections import CorrectionKind
from stream_worker.service.compacted import read_compacted

from .conftest import TOKENS, Console, make_console, signed_in, topics_of

pytestmark = pytest.mark.integration


@pytest.fixture
def console(tmp_path: Path, users_file: Path, kafka_bootstrap: str, unique_name: str) -> Iterator[Console]:
    made = make_console(tmp_path, users_file, kafka_bootstrap, **topics_of(unique_name))
    made.app.state.backend.timeout_s = 15.0
    yield made
    made.close()


def _published(console: Console, kafka_bootstrap: str) -> dict:
    topic = console.settings.corrections_topic
    return dict(read_compacted(kafka_bootstrap, topic, correction_records.decode_record).values)


def test_an_admin_corrects_a_read_on_its_page(console: Console, kafka_bootstrap: str) -> None:
    misread = plate_sighting("misread", "B840CK197", camera_id="gate-1")
    console.write([misread])
    page = f"/sightings/{misread.sighting_id}"
    client, token = signed_in(console.app, "ada")
    assert "Nobody has reviewed this read yet." in client.get(page).text
    assert misread.sighting_id not in client.get("/search", params={"text": "X777XX77"}).text

    answer = client.post(
        f"{page}/review",
        data={"csrf_token": token, "kind": "correct", "text": "x 777 xx 77", "country": "RU"},
    )
    assert answer.status_code == 303, answer.text
    shown = client.get(page).text
    assert "Corrected B840CK197 to X777XX77." in shown  # the notice
    assert 'B840CK197</span> → <span class="text new">X777XX77</span>' in shown and "by ada at" in shown

    (published,) = _published(console, kafka_bootstrap).values()
    assert (published.sighting_id, published.kind, published.old_text, published.new_text) == (
        misread.sighting_id,
        CorrectionKind.CORRECT,
        "B840CK197",
        "X777XX77",
    )
    assert (published.country, published.corrected_by) == ("ru", "ada")

    found = client.get("/search", params={"text": "X777XX77"}).text
    assert misread.sighting_id in found and "X777XX77" in found
    api = TestClient(console.app, headers={"authorization": f"Bearer {TOKENS['ada']}"})
    hits = api.get("/api/sightings", params={"text": "X777XX77", "fuzzy": "false"}).json()["items"]
    assert [(hit["sighting_id"], hit["corrected_text"]) for hit in hits] == [
        (misread.sighting_id, "X777XX77")
    ]
    audit = api.get("/api/audit").json()
    assert [(row["user"], row["action"]) for row in audit] == [("ada", "sighting.correct")]
    assert audit[0]["detail"]["new_text"] == "X777XX77"

    # Confirming replaces the correction (compaction keeps the last): the read was right after all.
    answer = client.post(f"{page}/review", data={"csrf_token": token, "kind": "confirm"})
    assert answer.status_code == 303, answer.text
    assert 'Read <span class="text">B840CK197</span> confirmed' in client.get(page).text
    (published,) = _published(console, kafka_bootstrap).values()
    assert published.kind is CorrectionKind.CONFIRM and published.new_text == "B840CK197"
    assert misread.sighting_id not in client.get("/search", params={"text": "X777XX77"}).text


def test_a_viewer_or_a_bad_text_writes_nothing(console: Console, kafka_bootstrap: str) -> None:
    misread = plate_sighting("misread", "B840CK197", camera_id="gate-1")
    console.write([misread])
    page = f"/sightings/{misread.sighting_id}"
    viewer, token = signed_in(console.app, "vic")
    assert 'id="correct-form"' not in viewer.get(page).text
    answer = viewer.post(f"{page}/review", data={"csrf_token": token, "kind": "correct", "text": "X777XX77"})
    assert answer.status_code == 403
    admin, token = signed_in(console.app, "ada")
    for bad in ("", "X", "X777XX77X777", "<b>1</b>"):
        answer = admin.post(f"{page}/review", data={"csrf_token": token, "kind": "correct", "text": bad})
        assert answer.status_code == 422, (bad, answer.text)
    unchanged = admin.post(
        f"{page}/review", data={"csrf_token": token, "kind": "correct", "text": "B840CK197"}
    )
    assert unchanged.status_code == 422 and "changes the text" in unchanged.text
    no_token = admin.post(f"{page}/review", data={"kind": "correct", "text": "X777XX77"})
    assert no_token.status_code == 403
    missing = admin.post(
        "/sightings/00000000-0000-0000-0000-000000000000/review",
        data={"csrf_token": token, "kind": "confirm"},
    )
    assert missing.status_code == 404
    assert _published(console, kafka_bootstrap) == {}
    assert "Nobody has reviewed this read yet." in admin.get(page).text


def test_the_api_corrects_a_read_for_an_admin_token_only(console: Console, kafka_bootstrap: str) -> None:
    misread = plate_sighting("misread", "B840CK197", camera_id="gate-1")
    console.write([misread])
    url = f"/api/sightings/{misread.sighting_id}/correction"
    viewer = TestClient(console.app, headers={"authorization": f"Bearer {TOKENS['vic']}"})
    assert viewer.post(url, json={"kind": "correct", "text": "X777XX77"}).status_code == 403
    admin = TestClient(console.app, headers={"authorization": f"Bearer {TOKENS['ada']}"})
    refused = admin.post(url, json={"kind": "correct"})
    assert refused.status_code == 422 and "new_text" in refused.text
    answer = admin.post(url, json={"kind": "correct", "text": "x777xx77", "region": "ru"})
    assert answer.status_code == 200, answer.text
    assert {k: answer.json()[k] for k in ("old_text", "text", "region", "corrected_by")} == {
        "old_text": "B840CK197",
        "text": "X777XX77",
        "region": "ru",
        "corrected_by": "ada",
    }
    (published,) = _published(console, kafka_bootstrap).values()
    assert published.new_text == "X777XX77"
    hits = admin.get("/api/sightings", params={"text": "X777XX77"}).json()["items"]
    assert [hit["sighting_id"] for hit in hits] == [misread.sighting_id]
