"""The alerts service in Compose and Kubernetes: it reads what the workers write and the compacted
watch list the topic script creates, its settings are valid, its probes and metrics port are its
own, it is scaled on its own group's lag on the plates topic and never beyond that topic's
partitions, only Prometheus reaches its metrics, and the dashboard shows it."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from deploy.test_compose import load_compose
from deploy.test_create_topics import calls_with, option, run_script
from deploy.test_kubernetes import _clients, by_kind, one, pod_templates, reachable

from stream_worker.alerts.settings import ENV_PREFIX, AlertsSettings, load_settings

DEPLOY_DIR = Path(__file__).resolve().parents[2] / "deploy"
ALL_TOPICS = {
    "frames": 6,
    "plates": 6,
    "frames.dlq": 1,
    "sightings": 6,
    "alerts": 6,
    "store.dlq": 1,
    "watchlist": 1,
    "cameras": 6,
    "camera-status": 3,
    "notify-targets": 1,
    "notify.dlq": 1,
    "notify.deliveries": 1,
    "notify-tests": 1,
}


def _valid(environment: dict[str, object], monkeypatch) -> AlertsSettings:
    for key, value in environment.items():
        assert (
            key.startswith(ENV_PREFIX) and key.removeprefix(ENV_PREFIX).lower() in AlertsSettings.model_fields
        ), key
        monkeypatch.setenv(key, str(value))
    return load_settings()


# --- Compose ---------------------------------------------------------------------------------


def test_compose_alerts_read_the_workers_output_and_write_the_created_topics(monkeypatch) -> None:
    env = {
        "OUTPUT_TOPIC": "plates-eu",
        "ALERTS_TOPIC": "hits",
        "WATCHLIST_TOPIC": "wanted",
        "SIGHTINGS_TOPIC": "seen",
    }
    services = load_compose(env)["services"]
    settings = _valid(services["alerts"]["environment"], monkeypatch)
    topics = services["topic-init"]["environment"]
    assert settings.bootstrap_servers == services["worker"]["environment"]["STREAM_WORKER_BOOTSTRAP_SERVERS"]
    assert (
        settings.input_topic == services["worker"]["environment"]["STREAM_WORKER_OUTPUT_TOPIC"] == "plates-eu"
    )
    assert settings.output_topic == topics["ALERTS_TOPIC"] == "hits"
    assert settings.watchlist_topic == topics["WATCHLIST_TOPIC"] == "wanted"
    sightings = services["sightings"]["environment"]
    assert settings.sightings_topic == sightings["STREAM_WORKER_SIGHTINGS_OUTPUT_TOPIC"] == "seen"
    assert settings.sightings_group_id not in (
        settings.group_id,
        sightings["STREAM_WORKER_SIGHTINGS_GROUP_ID"],
    )
    assert settings.group_id != services["sightings"]["environment"]["STREAM_WORKER_SIGHTINGS_GROUP_ID"]


def test_compose_alerts_health_and_metrics_use_its_own_port() -> None:
    compose = load_compose()
    services = compose["services"]
    alerts = services["alerts"]
    port = int(alerts["environment"]["STREAM_WORKER_ALERTS_METRICS_PORT"])
    assert port == 9110
    assert port != int(services["worker"]["environment"]["STREAM_WORKER_METRICS_PORT"])
    assert port != int(services["sightings"]["environment"]["STREAM_WORKER_SIGHTINGS_METRICS_PORT"])
    assert f"127.0.0.1:{port}/healthz" in " ".join(alerts["healthcheck"]["test"])
    assert alerts["entrypoint"] == ["stream-worker", "alerts"]
    assert alerts["image"] == services["worker"]["image"]
    assert alerts["read_only"] is True and alerts["cap_drop"] == ["ALL"]
    assert alerts["depends_on"]["topic-init"]["condition"] == "service_completed_successfully"
    config = yaml.safe_load((DEPLOY_DIR / "prometheus" / "prometheus.yml").read_text())
    (dns,) = {job["job_name"]: job for job in config["scrape_configs"]}["alerts"]["dns_sd_configs"]
    assert dns["names"] == ["alerts"] and dns["port"] == port


def test_compose_alerts_never_outnumber_the_plates_partitions() -> None:
    for env in ({}, {"ALERTS_REPLICAS": "4", "PLATES_PARTITIONS": "4"}):
        services = load_compose(env)["services"]
        replicas = int(services["alerts"]["deploy"]["replicas"])
        assert 1 <= replicas <= int(services["topic-init"]["environment"]["PLATES_PARTITIONS"])


def test_topic_script_creates_the_alerts_topic_and_the_compacted_watch_list(tmp_path: Path) -> None:
    code, calls, output = run_script(
        tmp_path,
        {**ALL_TOPICS, "hits": 6, "wanted": 1},
        ALERTS_TOPIC="hits",
        ALERTS_PARTITIONS="6",
        WATCHLIST_TOPIC="wanted",
    )
    assert code == 0, output
    creates = {option(c, "--topic"): c for c in calls_with(calls, "--create")}
    assert option(creates["hits"], "--partitions") == "6"
    assert "--config" not in creates["hits"]
    assert option(creates["wanted"], "--partitions") == "1"
    assert option(creates["wanted"], "--config") == "cleanup.policy=compact"
    configs = {
        option(c, "--entity-name"): option(c, "--add-config") for c in calls_with(calls, "--entity-name")
    }
    assert configs["hits"].startswith("cleanup.policy=delete,retention.ms=604800000,")
    # Re-applied on every run: a watch list created uncompacted (auto-created) becomes compacted.
    assert configs["wanted"].split(",")[0] == "cleanup.policy=compact"
    assert "retention.ms" not in configs["wanted"]


def test_topic_script_never_raises_the_watch_list_partitions(tmp_path: Path) -> None:
    """A plate's records must stay on one partition: more partitions would move keys."""
    code, calls, output = run_script(
        tmp_path, {**ALL_TOPICS, "plates": 3}, PLATES_PARTITIONS="12", ALERTS_PARTITIONS="12"
    )
    assert code == 0, output
    raised = {
        option(c, "--topic"): option(c, "--partitions")
        for c in calls_with(calls, "--alter", "--partitions")
        if "--create" not in c
    }
    assert raised == {"plates": "12", "alerts": "12"}


# --- Kubernetes ------------------------------------------------------------------------------


def test_kubernetes_alerts_settings_follow_the_workers(rendered, monkeypatch) -> None:
    for build, objects in rendered.items():
        workers = one(objects, "ConfigMap", "stream-worker-settings")["data"]
        settings = _valid(one(objects, "ConfigMap", "alerts-settings")["data"], monkeypatch)
        assert settings.bootstrap_servers == workers["STREAM_WORKER_BOOTSTRAP_SERVERS"], build
        assert settings.input_topic == workers["STREAM_WORKER_OUTPUT_TOPIC"], build
        sightings = one(objects, "ConfigMap", "sightings-settings")["data"]
        assert settings.group_id != sightings["STREAM_WORKER_SIGHTINGS_GROUP_ID"], build
        assert settings.sightings_topic == sightings["STREAM_WORKER_SIGHTINGS_OUTPUT_TOPIC"], build
        assert settings.sightings_group_id not in (
            settings.group_id,
            sightings["STREAM_WORKER_SIGHTINGS_GROUP_ID"],
        )
        job = one(objects, "Job", "stream-worker-topics")["spec"]["template"]["spec"]["containers"][0]
        env = {e["name"]: e for e in job["env"]}
        for name, topic in (
            ("ALERTS_TOPIC", settings.output_topic),
            ("WATCHLIST_TOPIC", settings.watchlist_topic),
        ):
            ref = env[name]["valueFrom"]["configMapKeyRef"]
            assert one(objects, "ConfigMap", ref["name"])["data"][ref["key"]] == topic, f"{build}: {name}"


def test_kubernetes_alerts_runs_its_command_with_its_probes_and_the_kafka_secret(rendered) -> None:
    for build, objects in rendered.items():
        pod = one(objects, "Deployment", "alerts")["spec"]["template"]
        container = pod["spec"]["containers"][0]
        port = int(one(objects, "ConfigMap", "alerts-settings")["data"]["STREAM_WORKER_ALERTS_METRICS_PORT"])
        assert port == 9110, build
        assert container["command"] == ["stream-worker", "alerts"], build
        assert (
            container["image"]
            == one(objects, "Deployment", "stream-worker")["spec"]["template"]["spec"]["containers"][0][
                "image"
            ]
        )
        assert {p["name"]: p["containerPort"] for p in container["ports"]} == {"metrics": port}, build
        assert int(pod["metadata"]["annotations"]["prometheus.io/port"]) == port, build
        assert container["livenessProbe"]["httpGet"]["path"] == "/healthz", build
        assert container["readinessProbe"]["httpGet"]["path"] == "/readyz", build
        secret = {e["name"]: e for e in container["env"]}["STREAM_WORKER_ALERTS_KAFKA_CONFIG"]
        assert secret["valueFrom"]["secretKeyRef"]["name"] == "stream-worker-kafka", build
        pdb = one(objects, "PodDisruptionBudget", "alerts")
        assert pdb["spec"]["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items(), build


def test_kubernetes_alerts_scale_on_their_own_lag_within_the_plates_partitions(rendered) -> None:
    for build, objects in rendered.items():
        partitions = int(one(objects, "ConfigMap", "stream-worker-topics")["data"]["PLATES_PARTITIONS"])
        deployment = one(objects, "Deployment", "alerts")
        assert deployment["spec"]["strategy"]["rollingUpdate"]["maxSurge"] == 0, build
        scalers = [
            s for s in by_kind(objects, "ScaledObject") if s["spec"]["scaleTargetRef"]["name"] == "alerts"
        ]
        if not scalers:
            assert 1 <= deployment["spec"]["replicas"] <= partitions, build
            continue
        (scaler,) = scalers
        assert "replicas" not in deployment["spec"], build  # the HPA owns the count
        assert 1 <= scaler["spec"]["minReplicaCount"] <= scaler["spec"]["maxReplicaCount"] <= partitions, (
            build
        )
        settings = one(objects, "ConfigMap", "alerts-settings")["data"]
        trigger = scaler["spec"]["triggers"][0]
        assert trigger["type"] == "kafka"
        assert trigger["metadata"]["consumerGroup"] == settings["STREAM_WORKER_ALERTS_GROUP_ID"], build
        assert trigger["metadata"]["consumerGroup"] == "stream-worker-alerts", build
        assert trigger["metadata"]["topic"] == settings["STREAM_WORKER_ALERTS_INPUT_TOPIC"] == "plates", build
        assert trigger["metadata"]["bootstrapServers"] == settings["STREAM_WORKER_ALERTS_BOOTSTRAP_SERVERS"]
        assert trigger["metadata"]["allowIdleConsumers"] == "false"
        sightings_trigger = scaler["spec"]["triggers"][1]
        assert sightings_trigger["type"] == "kafka"
        assert (
            sightings_trigger["metadata"]["consumerGroup"]
            == settings["STREAM_WORKER_ALERTS_SIGHTINGS_GROUP_ID"]
        )
        assert sightings_trigger["metadata"]["consumerGroup"] == "stream-worker-alerts-sightings", build
        assert sightings_trigger["metadata"]["topic"] == settings["STREAM_WORKER_ALERTS_SIGHTINGS_TOPIC"]
        assert sightings_trigger["metadata"]["topic"] == "sightings", build
        assert sightings_trigger["metadata"]["bootstrapServers"] == trigger["metadata"]["bootstrapServers"]
    assert [
        s for s in by_kind(rendered["gpu"], "ScaledObject") if s["spec"]["scaleTargetRef"]["name"] == "alerts"
    ], "the gpu overlay scales the alerts service with KEDA"


def test_only_prometheus_reaches_the_alerts_metrics(rendered) -> None:
    for build, objects in rendered.items():
        template = pod_templates(objects)["alerts"]
        clients = _clients(objects)
        admitted = {name for name, client in clients.items() if reachable(objects, template, 9110, client)}
        assert admitted == {"prometheus"}, f"{build}: {sorted(admitted)}"


# --- Grafana ---------------------------------------------------------------------------------


def test_dashboard_has_an_alerts_row() -> None:
    panels = json.loads((DEPLOY_DIR / "grafana" / "dashboards" / "stream-worker.json").read_text())["panels"]
    (row,) = [p for p in panels if p["type"] == "row" and p["title"] == "Alerts"]
    below = [p for p in panels if p["gridPos"]["y"] > row["gridPos"]["y"]]
    later_rows = [p["gridPos"]["y"] for p in below if p["type"] == "row"]
    mine = [p for p in below if not later_rows or p["gridPos"]["y"] < min(later_rows)]
    exprs = " ".join(t["expr"] for p in mine for t in p.get("targets", []))
    assert "sum by (list, kind, origin) (rate(stream_worker_alerts_out_total" in exprs
    assert "stream_worker_alerts_watchlist_size" in exprs
    assert "stream_worker_alerts_consumer_lag" in exprs
    latency = "sum by (le) (rate(stream_worker_alerts_match_latency_seconds_bucket"
    for quantile in ("0.5", "0.99"):
        assert f"histogram_quantile({quantile}, {latency}" in exprs
