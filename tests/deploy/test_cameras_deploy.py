"""The cameras' settings topic in Compose and Kubernetes: the topic script creates it compacted
with CAMERAS_PARTITIONS partitions (the connector's replicas share the cameras by them), never
changed after; both deployments pass it the name the CLI uses by default, and the workers follow
the topic that is created."""

from __future__ import annotations

from pathlib import Path

from deploy.test_alerts_deploy import ALL_TOPICS
from deploy.test_compose import load_compose
from deploy.test_create_topics import calls_with, option, run_script
from deploy.test_kubernetes import one

from stream_worker.cameras.store import DEFAULT_TOPIC


def test_topic_script_creates_the_cameras_topic_compacted(tmp_path: Path) -> None:
    code, calls, output = run_script(
        tmp_path, {**ALL_TOPICS, "lanes": 4}, CAMERAS_TOPIC="lanes", CAMERAS_PARTITIONS="4"
    )
    assert code == 0, output
    creates = {option(c, "--topic"): c for c in calls_with(calls, "--create")}
    assert "cameras" not in creates, "the name comes from CAMERAS_TOPIC"
    assert option(creates["lanes"], "--partitions") == "4"
    assert option(creates["lanes"], "--config") == "cleanup.policy=compact"
    configs = {
        option(c, "--entity-name"): option(c, "--add-config") for c in calls_with(calls, "--entity-name")
    }
    # Re-applied on every run: a topic auto-created uncompacted becomes compacted.
    assert configs["lanes"].split(",")[0] == "cleanup.policy=compact"
    assert "retention.ms" not in configs["lanes"]


def test_topic_script_defaults_to_cameras_and_never_raises_it(tmp_path: Path) -> None:
    # An older deployment's cameras topic has one partition: it is warned about, never raised
    # (a camera's older record left on partition 0 could win over its newer one elsewhere).
    code, calls, output = run_script(tmp_path, {**ALL_TOPICS, "cameras": 1}, PLATES_PARTITIONS="12")
    assert code == 0, output
    (create,) = [c for c in calls_with(calls, "--create") if option(c, "--topic") == DEFAULT_TOPIC]
    assert option(create, "--partitions") == "6"
    raised = [
        option(c, "--topic") for c in calls_with(calls, "--alter", "--partitions") if "--create" not in c
    ]
    assert raised == ["plates"]
    assert "compacted topic cameras has 1 partitions, not the configured 6; left as it is" in output
    assert "topic cameras ready: 1 partitions" in output


def test_compose_creates_the_cameras_topic() -> None:
    assert load_compose()["services"]["topic-init"]["environment"]["CAMERAS_TOPIC"] == DEFAULT_TOPIC
    custom = load_compose({"CAMERAS_TOPIC": "lanes"})["services"]["topic-init"]["environment"]
    assert custom["CAMERAS_TOPIC"] == "lanes"


def test_kubernetes_topic_job_creates_the_topic_the_workers_follow(rendered) -> None:
    for build, objects in rendered.items():
        settings = one(objects, "ConfigMap", "stream-worker-settings")["data"]
        assert settings["STREAM_WORKER_CAMERAS_TOPIC"] == DEFAULT_TOPIC, build
        container = one(objects, "Job", "stream-worker-topics")["spec"]["template"]["spec"]["containers"][0]
        (env,) = [e for e in container["env"] if e["name"] == "CAMERAS_TOPIC"]
        assert env["valueFrom"]["configMapKeyRef"] == {
            "name": "stream-worker-settings",
            "key": "STREAM_WORKER_CAMERAS_TOPIC",
        }, build


def test_compose_workers_follow_the_topic_topic_init_creates() -> None:
    for environment in ({}, {"CAMERAS_TOPIC": "lanes"}):
        services = load_compose(environment)["services"]
        created = services["topic-init"]["environment"]["CAMERAS_TOPIC"]
        assert services["worker"]["environment"]["STREAM_WORKER_CAMERAS_TOPIC"] == created


def test_dashboard_shows_the_plates_camera_settings_drop() -> None:
    from deploy.test_compose import _dashboard

    exprs = [t["expr"] for p in _dashboard()["panels"] for t in p.get("targets", [])]
    assert "sum by (camera) (rate(stream_worker_plates_masked_total[5m]))" in exprs
    assert "sum by (camera) (rate(stream_worker_plates_too_narrow_total[5m]))" in exprs
