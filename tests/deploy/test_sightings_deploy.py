"""The sightings service in Compose and Kubernetes: it reads what the workers write, its settings
are valid, its probes and metrics port are its own, it is scaled on its own group's lag on the
plates topic and never beyond that topic's partitions, and only Prometheus reaches its metrics."""

from __future__ import annotations

from pathlib import Path

import yaml
from deploy.test_alerts_deploy import ALL_TOPICS
from deploy.test_compose import load_compose
from deploy.test_create_topics import calls_with, option, run_script
from deploy.test_kubernetes import _clients, by_kind, one, pod_templates, reachable

from stream_worker.sightings.settings import ENV_PREFIX, SightingsSettings, load_settings

DEPLOY_DIR = Path(__file__).resolve().parents[2] / "deploy"


def _valid(environment: dict[str, object], monkeypatch) -> SightingsSettings:
    for key, value in environment.items():
        assert (
            key.startswith(ENV_PREFIX)
            and key.removeprefix(ENV_PREFIX).lower() in SightingsSettings.model_fields
        )
        monkeypatch.setenv(key, str(value))
    return load_settings()


# --- Compose ---------------------------------------------------------------------------------


def test_compose_sightings_read_the_workers_output_and_write_the_created_topic(monkeypatch) -> None:
    services = load_compose({"OUTPUT_TOPIC": "plates-eu", "SIGHTINGS_TOPIC": "passes"})["services"]
    settings = _valid(services["sightings"]["environment"], monkeypatch)
    assert settings.bootstrap_servers == services["worker"]["environment"]["STREAM_WORKER_BOOTSTRAP_SERVERS"]
    assert (
        settings.input_topic == services["worker"]["environment"]["STREAM_WORKER_OUTPUT_TOPIC"] == "plates-eu"
    )
    assert settings.output_topic == services["topic-init"]["environment"]["SIGHTINGS_TOPIC"] == "passes"


def test_compose_sightings_health_and_metrics_use_its_own_port() -> None:
    compose = load_compose()
    sightings = compose["services"]["sightings"]
    port = int(sightings["environment"]["STREAM_WORKER_SIGHTINGS_METRICS_PORT"])
    assert port != int(compose["services"]["worker"]["environment"]["STREAM_WORKER_METRICS_PORT"])
    assert f"127.0.0.1:{port}/healthz" in " ".join(sightings["healthcheck"]["test"])
    assert sightings["entrypoint"] == ["stream-worker", "sightings"]
    assert sightings["image"] == compose["services"]["worker"]["image"]
    assert sightings["read_only"] is True and sightings["cap_drop"] == ["ALL"]
    assert sightings["depends_on"]["topic-init"]["condition"] == "service_completed_successfully"
    config = yaml.safe_load((DEPLOY_DIR / "prometheus" / "prometheus.yml").read_text())
    (dns,) = {job["job_name"]: job for job in config["scrape_configs"]}["sightings"]["dns_sd_configs"]
    assert dns["names"] == ["sightings"] and dns["port"] == port


def test_compose_sightings_never_outnumber_the_plates_partitions() -> None:
    for env in ({}, {"SIGHTINGS_REPLICAS": "4", "PLATES_PARTITIONS": "4"}):
        services = load_compose(env)["services"]
        replicas = int(services["sightings"]["deploy"]["replicas"])
        assert 1 <= replicas <= int(services["topic-init"]["environment"]["PLATES_PARTITIONS"])


def test_topic_script_creates_the_sightings_topic(tmp_path: Path) -> None:
    code, calls, output = run_script(
        tmp_path,
        {**ALL_TOPICS, "passes": 6},
        SIGHTINGS_TOPIC="passes",
        SIGHTINGS_PARTITIONS="6",
    )
    assert code == 0, output
    (create,) = [c for c in calls_with(calls, "--create") if option(c, "--topic") == "passes"]
    assert option(create, "--partitions") == "6"
    configs = {
        option(c, "--entity-name"): option(c, "--add-config") for c in calls_with(calls, "--entity-name")
    }
    assert configs["passes"].startswith("cleanup.policy=delete,retention.ms=604800000,")


# --- Kubernetes ------------------------------------------------------------------------------


def test_kubernetes_sightings_settings_follow_the_workers(rendered, monkeypatch) -> None:
    for build, objects in rendered.items():
        workers = one(objects, "ConfigMap", "stream-worker-settings")["data"]
        settings = _valid(one(objects, "ConfigMap", "sightings-settings")["data"], monkeypatch)
        assert settings.bootstrap_servers == workers["STREAM_WORKER_BOOTSTRAP_SERVERS"], build
        assert settings.input_topic == workers["STREAM_WORKER_OUTPUT_TOPIC"], build
        job = one(objects, "Job", "stream-worker-topics")["spec"]["template"]["spec"]["containers"][0]
        ref = {e["name"]: e for e in job["env"]}["SIGHTINGS_TOPIC"]["valueFrom"]["configMapKeyRef"]
        assert one(objects, "ConfigMap", ref["name"])["data"][ref["key"]] == settings.output_topic, build


def test_kubernetes_sightings_runs_its_command_with_its_probes_and_the_kafka_secret(rendered) -> None:
    for build, objects in rendered.items():
        pod = one(objects, "Deployment", "sightings")["spec"]["template"]
        container = pod["spec"]["containers"][0]
        port = int(
            one(objects, "ConfigMap", "sightings-settings")["data"]["STREAM_WORKER_SIGHTINGS_METRICS_PORT"]
        )
        assert container["command"] == ["stream-worker", "sightings"], build
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
        secret = {e["name"]: e for e in container["env"]}["STREAM_WORKER_SIGHTINGS_KAFKA_CONFIG"]
        assert secret["valueFrom"]["secretKeyRef"]["name"] == "stream-worker-kafka", build
        pdb = one(objects, "PodDisruptionBudget", "sightings")
        assert pdb["spec"]["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items(), build


def test_kubernetes_sightings_scale_on_their_own_lag_within_the_plates_partitions(rendered) -> None:
    for build, objects in rendered.items():
        partitions = int(one(objects, "ConfigMap", "stream-worker-topics")["data"]["PLATES_PARTITIONS"])
        deployment = one(objects, "Deployment", "sightings")
        scalers = [
            s for s in by_kind(objects, "ScaledObject") if s["spec"]["scaleTargetRef"]["name"] == "sightings"
        ]
        if not scalers:
            assert 1 <= deployment["spec"]["replicas"] <= partitions, build
            continue
        (scaler,) = scalers
        assert "replicas" not in deployment["spec"], build  # the HPA owns the count
        assert 1 <= scaler["spec"]["minReplicaCount"] <= scaler["spec"]["maxReplicaCount"] <= partitions, (
            build
        )
        settings = one(objects, "ConfigMap", "sightings-settings")["data"]
        trigger = scaler["spec"]["triggers"][0]
        assert trigger["type"] == "kafka"
        assert trigger["metadata"]["consumerGroup"] == settings["STREAM_WORKER_SIGHTINGS_GROUP_ID"], build
        assert trigger["metadata"]["topic"] == settings["STREAM_WORKER_SIGHTINGS_INPUT_TOPIC"] == "plates", (
            build
        )
        assert (
            trigger["metadata"]["bootstrapServers"] == settings["STREAM_WORKER_SIGHTINGS_BOOTSTRAP_SERVERS"]
        )
        assert trigger["metadata"]["allowIdleConsumers"] == "false"
    assert by_kind(rendered["gpu"], "ScaledObject"), "the gpu overlay scales with KEDA"


def test_only_prometheus_reaches_the_sightings_metrics(rendered) -> None:
    for build, objects in rendered.items():
        template = pod_templates(objects)["sightings"]
        clients = _clients(objects)
        admitted = {name for name, client in clients.items() if reachable(objects, template, 9109, client)}
        assert admitted == {"prometheus"}, f"{build}: {sorted(admitted)}"
