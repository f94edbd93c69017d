"""The console's writes to the real broker's compacted topics, through the API and the pages (no
browser): a CSV imported in the page, an entry removed by the API, a camera's settings set and
removed; each on its topic as the CLI would write it, and audited with who."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer
from fastapi.testclient import TestClient
from support import count_kafka_clients

from stream_worker.cameras.store import read_cameras
from stream_worker.watchlists.topic import read_watchlist

from .conftest import TOKENS, Console, make_console, signed_in

pytestmark = pytest.mark.integration


@pytest.fixture
def console(tmp_path: Path, users_file: Path, kafka_bootstrap: str, unique_name: str) -> Iterator[Console]:
    made = make_console(
        tmp_path,
        users_file,
        kafka_bootstrap,
        watchlist_topic=f"{unique_name}-wl",
        cameras_topic=f"{unique_name}-cam",
    )
    made.app.state.backend.timeout_s = 15.0
    yield made
    made.close()


def test_a_csv_imported_in_the_page_then_an_entry_removed_by_the_api(
    console: Console, kafka_bootstrap: str
) -> None:
    client, token = signed_in(console.app, "ada")
    csv = b"plate,list,label\nB840CK197,stolen,grey van\nA123BC77,vip,\n"
    answer = client.post(
        "/watchlist/import", data={"csrf_token": token}, files={"file": ("list.csv", csv, "text/csv")}
    )
    assert answer.status_code == 303
    assert "Imported 2 entries (0 allow entries" in client.get("/watchlist").text
    entries = read_watchlist(kafka_bootstrap, console.settings.watchlist_topic).values
    assert {plate: entry.list for plate, entry in entries.items()} == {
        "B840CK197": "stolen",
        "A123BC77": "vip",
    }
    api = TestClient(console.app, headers={"authorization": f"Bearer {TOKENS['ada']}"})
    assert [entry["plate"] for entry in api.get("/api/watchlist").json()] == ["B840CK197", "A123BC77"]
    assert api.delete("/api/watchlist/A123BC77").status_code == 200
    assert api.delete("/api/watchlist/A123BC77").status_code == 404
    assert set(read_watchlist(kafka_bootstrap, console.settings.watchlist_topic).values) == {"B840CK197"}
    audit = [(row["user"], row["action"]) for row in api.get("/api/audit").json()]
    assert audit == [("ada", "watchlist.remove"), ("ada", "watchlist.import")]


def test_removing_a_plate_never_listed_in_the_page_is_404_and_writes_nothing(
    console: Console, kafka_bootstrap: str
) -> None:
    client, token = signed_in(console.app, "ada")
    api = TestClient(console.app, headers={"authorization": f"Bearer {TOKENS['ada']}"})
    assert api.post("/api/watchlist", json={"plate": "B840CK197", "list": "stolen"}).status_code == 201
    records = read_watchlist(kafka_bootstrap, console.settings.watchlist_topic).records
    answer = client.post("/watchlist/remove", data={"csrf_token": token, "plate": "A123BC77"})
    assert answer.status_code == 404 and "not on the watch list" in answer.text
    assert "Removed" not in client.get("/watchlist").text
    assert (
        read_watchlist(kafka_bootstrap, console.settings.watchlist_topic).records == records
    )  # no tombstone
    assert [row["action"] for row in api.get("/api/audit").json()] == ["watchlist.add"]
    # A listed plate is removed.
    assert (
        client.post("/watchlist/remove", data={"csrf_token": token, "plate": "B840CK197"}).status_code == 303
    )
    assert read_watchlist(kafka_bootstrap, console.settings.watchlist_topic).values == {}


def test_allow_entries_are_shown_audited_and_taken_by_the_api(console: Console, kafka_bootstrap: str) -> None:
    client, token = signed_in(console.app, "ada")
    api = TestClient(console.app, headers={"authorization": f"Bearer {TOKENS['ada']}"})
    made = api.post("/api/watchlist", json={"plate": "A123BC77", "list": "residents", "kind": "allow"})
    assert made.status_code == 201 and made.json()["kind"] == "allow", made.text
    assert api.post("/api/watchlist", json={"plate": "A1", "list": "x", "kind": "maybe"}).status_code == 422

    def upload(csv: bytes) -> None:
        files = {"file": ("list.csv", csv, "text/csv")}
        assert client.post("/watchlist/import", data={"csrf_token": token}, files=files).status_code == 303

    upload(b"plate,list\nB840CK197,stolen\n")
    upload(b"plate,list,kind\nB840CK197,stolen,allow\n")  # a watched plate re-imported as allowed
    page = client.get("/watchlist").text
    assert "No longer watched (now allowed): B840CK197." in page  # the notice says so
    rows = dict(re.findall(r'data-plate="([A-Z0-9]+)" data-kind="(\w+)"', page))
    assert rows == {"A123BC77": "allow", "B840CK197": "allow"}
    assert page.count("allow (no alert)") == 2
    entries = read_watchlist(kafka_bootstrap, console.settings.watchlist_topic).values
    assert {plate: entry.effective_kind.value for plate, entry in entries.items()} == rows
    audit = api.get("/api/audit").json()  # newest first
    assert [row["detail"]["allowed"] for row in audit] == [["B840CK197"], [], ["A123BC77"]]
    # The page's own form takes a kind too.
    form = {"csrf_token": token, "plate": "C001AA77", "list": "visitors", "kind": "allow"}
    assert client.post("/watchlist/add", data=form).status_code == 303
    assert (
        read_watchlist(kafka_bootstrap, console.settings.watchlist_topic).values["C001AA77"].kind == "allow"
    )


def test_an_entrys_own_overstay_limit_set_in_the_form_and_by_the_api(
    console: Console, kafka_bootstrap: str
) -> None:
    client, token = signed_in(console.app, "ada")
    form = {"csrf_token": token, "plate": "C001AA77", "list": "deliveries"}
    for bad in ("-5", "soon", "1e9", "nan"):
        answer = client.post("/watchlist/add", data={**form, "overstay_s": bad})
        assert answer.status_code == 422 and "overstay_s" in answer.text, (bad, answer.text)
    assert client.post("/watchlist/add", data={**form, "overstay_s": "1800"}).status_code == 303
    assert (
        client.post("/watchlist/add", data={**form, "plate": "E002BB77", "overstay_s": "0"}).status_code
        == 303
    )
    assert (
        client.post("/watchlist/add", data={**form, "plate": "K003CC77", "overstay_s": ""}).status_code == 303
    )
    api = TestClient(console.app, headers={"authorization": f"Bearer {TOKENS['ada']}"})
    made = api.post("/api/watchlist", json={"plate": "M004DD77", "list": "deliveries", "overstay_s": 900})
    assert made.status_code == 201 and made.json()["overstay_s"] == 900, made.text
    refused = api.post("/api/watchlist", json={"plate": "M004DD77", "list": "x", "overstay_s": -1})
    assert refused.status_code == 422 and "overstay_s" in refused.text
    entries = read_watchlist(kafka_bootstrap, console.settings.watchlist_topic).values
    limits = {plate: entry.overstay_s for plate, entry in entries.items()}
    assert limits == {"C001AA77": 1800, "E002BB77": 0, "K003CC77": None, "M004DD77": 900}
    page = client.get("/watchlist").text
    row = r'data-plate="(\w+)"[^>]*>(?:(?!</tr>).)*?<td class="overstay-limit">([^<]*)</td>'
    shown = dict(re.findall(row, page, re.S))
    assert shown == {
        "C001AA77": "1800 s",
        "E002BB77": "never",
        "K003CC77": "list&#39;s or site&#39;s",
        "M004DD77": "900 s",
    }


def test_a_cameras_settings_set_and_removed(console: Console, kafka_bootstrap: str) -> None:
    api = TestClient(console.app, headers={"authorization": f"Bearer {TOKENS['ada']}"})
    settings = {
        "display_name": "Gate",
        "masks": [[[0, 0], [0.2, 0], [0.2, 0.2]]],
        "zones": [{"name": "lane-1", "polygon": [[0.5, 0.5], [1, 0.5], [1, 1]]}],
    }
    answer = api.put("/api/cameras/gate", json=settings)
    assert answer.status_code == 200, answer.text
    stored = read_cameras(kafka_bootstrap, console.settings.cameras_topic).values["gate"]
    assert stored.display_name == "Gate" and stored.zones[0].name == "lane-1"
    assert api.get("/api/cameras").json()[0]["camera_id"] == "gate"
    client, _ = signed_in(console.app, "vic")
    page = client.get("/cameras/gate").text
    assert "lane-1" in page and 'id="save"' not in page  # a viewer sees them, cannot save
    assert "Gate" in client.get("/cameras").text
    assert api.delete("/api/cameras/gate").status_code == 200
    assert "gate" not in read_cameras(kafka_bootstrap, console.settings.cameras_topic).values
    assert [row["action"] for row in api.get("/api/audit").json()] == ["camera.remove", "camera.set"]


def test_the_consoles_changes_go_through_one_producer(
    console: Console, kafka_bootstrap: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A producer per change cost each change about half a second (a connection, a handshake)."""
    made = count_kafka_clients(monkeypatch, "producer")
    api = TestClient(console.app, headers={"authorization": f"Bearer {TOKENS['ada']}"})
    for plate in ("A123BC77", "B840CK197", "C001AA77"):
        assert api.post("/api/watchlist", json={"plate": plate, "list": "stolen"}).status_code == 201
    assert api.put("/api/cameras/gate", json={"display_name": "Gate"}).status_code == 200
    assert api.delete("/api/watchlist/A123BC77").status_code == 200
    assert set(read_watchlist(kafka_bootstrap, console.settings.watchlist_topic).values) == {
        "B840CK197",
        "C001AA77",
    }
    assert "gate" in read_cameras(kafka_bootstrap, console.settings.cameras_topic).values
    assert len(made) == 1


def test_the_camera_page_draws_over_the_cameras_latest_frame(console: Console, kafka_bootstrap: str) -> None:

    topic = console.settings.cameras_topic + "-frames"
    console.app.state.backend.extra["frames_topic"] = topic
    frames = [
        b"\xff\xd8 old frame of gate \xff\xd9",
        b"\xff\xd8 frame of yard \xff\xd9",
        b"\xff\xd8 new frame of gate \xff\xd9",
    ]
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    # Record times 1 s apart: the frames land on different partitions, where only the time orders
    # them (produced within one millisecond, the old and the new frame would tie).
    now_ms = int(time.time() * 1000)
    producer.produce(topic, frames[0], key=b"gate", timestamp=now_ms - 3000)
    producer.produce(topic, frames[1], key=b"yard", timestamp=now_ms - 2000)
    marker = {"static": b"1920x1080"}  # a static marker
    producer.produce(topic, b"", key=b"gate", headers=marker, timestamp=now_ms - 1000)
    producer.produce(topic, frames[2], key=b"x", headers={"camera_id": b"gate"}, timestamp=now_ms)
    assert producer.flush(10) == 0
    client, _ = signed_in(console.app, "vic")
    answer = client.get("/api/cameras/gate/frame")
    assert (answer.status_code, answer.content) == (200, frames[2])
    assert client.get("/api/cameras/yard/frame").content == frames[1]
    assert client.get("/api/cameras/porch/frame").status_code == 404
    assert "/api/cameras/gate/frame" in client.get("/cameras/gate").text


def test_the_camera_page_sets_the_region_and_the_api_refuses_an_unknown_one(
    console: Console, kafka_bootstrap: str
) -> None:
    """The page's region field replaces the JSON's; `ru`, the default, is stored as none."""
    client, token = signed_in(console.app, "ada")
    page = client.get("/cameras/gate").text
    assert '<option value="ru" selected>' in page and '<option value="us">' in page
    form = {"csrf_token": token, "settings": '{"display_name": "Gate"}', "region": "us"}
    assert client.post("/cameras/gate", data=form, follow_redirects=False).status_code == 303
    stored = read_cameras(kafka_bootstrap, console.settings.cameras_topic).values["gate"]
    assert (stored.display_name, stored.region) == ("Gate", "us")
    assert '<option value="us" selected>' in client.get("/cameras/gate").text
    back = {"csrf_token": token, "settings": '{"display_name": "Gate", "region": "us"}', "region": "ru"}
    assert client.post("/cameras/gate", data=back, follow_redirects=False).status_code == 303
    assert read_cameras(kafka_bootstrap, console.settings.cameras_topic).values["gate"].region is None
    api = TestClient(console.app, headers={"authorization": f"Bearer {TOKENS['ada']}"})
    refused = api.put("/api/cameras/gate", json={"region": "xx"})
    assert refused.status_code == 422 and "unknown region" in refused.text


def test_the_camera_page_sets_and_clears_the_detector_scales(console: Console, kafka_bootstrap: str) -> None:
    """Dash cameras: the page's scales field replaces the JSON's, is shown back, bad
    scales are a 422 that says why and writes nothing; empty clears them; each save audited."""
    topic = console.settings.cameras_topic
    client, token = signed_in(console.app, "ada")
    assert 'name="detector_scales" id="detector-scales" value=""' in client.get("/cameras/dash").text
    form = {
        "csrf_token": token,
        "settings": '{"display_name": "Dash", "detector_scales": [2.0]}',
        "region": "eu",
        "detector_scales": "1.0, 0.5,3",
    }
    assert client.post("/cameras/dash", data=form, follow_redirects=False).status_code == 303
    stored = read_cameras(kafka_bootstrap, topic).values["dash"]
    assert (stored.display_name, stored.region, stored.detector_scales) == ("Dash", "eu", (1.0, 0.5, 3.0))
    assert 'id="detector-scales" value="1.0,0.5,3.0"' in client.get("/cameras/dash").text

    for bad, words in (
        ("1.0,9", "detector_scales[1]: Input should be less than or equal to 4"),
        ("x", "'x'"),
    ):
        refused = client.post("/cameras/dash", data={**form, "detector_scales": bad}, follow_redirects=False)
        assert refused.status_code == 422 and words in refused.text, refused.text
    no_csrf = {key: value for key, value in form.items() if key != "csrf_token"}
    assert client.post("/cameras/dash", data={**no_csrf, "detector_scales": "2.0"}).status_code == 403
    viewer, viewer_token = signed_in(console.app, "vic")
    assert 'name="detector_scales"' not in viewer.get("/cameras/dash").text  # admins only
    as_viewer = {**form, "csrf_token": viewer_token, "detector_scales": "2.0"}
    assert viewer.post("/cameras/dash", data=as_viewer, follow_redirects=False).status_code == 403
    assert read_cameras(kafka_bootstrap, topic).values["dash"] == stored  # nothing written

    cleared = {**form, "settings": stored.to_json().decode(), "detector_scales": ""}
    assert client.post("/cameras/dash", data=cleared, follow_redirects=False).status_code == 303
    assert read_cameras(kafka_bootstrap, topic).values["dash"].detector_scales is None
    assert 'id="detector-scales" value=""' in client.get("/cameras/dash").text
    api = TestClient(console.app, headers={"authorization": f"Bearer {TOKENS['ada']}"})
    audit = [(row["user"], row["action"]) for row in api.get("/api/audit").json()]
    assert audit == [("ada", "camera.set"), ("ada", "camera.set")]
