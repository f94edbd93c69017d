"""The notify service in Compose and Kubernetes: it reads what the alerts and sightings services
write and the watch list, the topic script creates its compacted targets topic and its DLQ, its
settings are valid, its probes and metrics port are its own, its targets' secrets come from an
optional Secret (a file in Compose), and only Prometheus reaches its metrics."""

from __future__ import annotations

from pathlib import Path

from deploy.test_alerts_deploy import ALL_TOPICS
from deploy.test_compose import load_compose
from deploy.test_create_topics import calls_with, option, run_script
from deploy.test_kubernetes import _clients, by_kind, one, pod_templates, reachable

from stream_worker.notify.settings import ENV_PREFIX, NotifySettings, load_settings

PORT = 9113


def _valid(environment: dict[str, object], monkeypatch) -> NotifySettings:
    for key, value in environment.items():
        assert (
            key.startswith(ENV_PREFIX) and key.removeprefix(ENV_PREFIX).lower() in NotifySettings.model_fields
        ), key
        monkeypatch.setenv(key, str(value))
    return load_settings()


def test_compose_notify_reads_the_alerts_and_sightings_and_the_created_topics(monkeypatch) -> None:
    env = {
        "ALERTS_TOPIC": "hits",
        "SIGHTINGS_TOPIC": "seen",
        "WATCHLIST_TOPIC": "wanted",
        "NOTIFY_DLQ_TOPIC": "dead",
    }
    services = load_compose(env)["services"]
    settings = _valid(services["notify"]["environment"], monkeypatch)
    topics = services["topic-init"]["environment"]
    alerts = services["alerts"]["environment"]
    assert (
        settings.input_topic
        == alerts["STREAM_WORKER_ALERTS_OUTPUT_TOPIC"]
        == topics["ALERTS_TOPIC"]
        == "hits"
    )
    assert settings.sightings_topic == alerts["STREAM_WORKER_ALERTS_SIGHTINGS_TOPIC"] == "seen"
    assert settings.watchlist_topic == topics["WATCHLIST_TOPIC"] == "wanted"
    assert settings.targets_topic == topics["NOTIFY_TARGETS_TOPIC"]
    assert settings.dlq_topic == topics["NOTIFY_DLQ_TOPIC"] == "dead"
    groups = {alerts["STREAM_WORKER_ALERTS_GROUP_ID"], alerts["STREAM_WORKER_ALERTS_SIGHTINGS_GROUP_ID"]}
    assert not groups & {settings.group_id, settings.sightings_group_id}
    assert settings.allow_private_targets is False


def test_compose_notify_is_hardened_with_its_own_port_and_secrets_file() -> None:
    services = load_compose()["services"]
    notify = services["notify"]
    assert int(notify["environment"]["STREAM_WORKER_NOTIFY_METRICS_PORT"]) == PORT
    assert f"127.0.0.1:{PORT}/healthz" in " ".join(notify["healthcheck"]["test"])
    assert notify["entrypoint"] == ["stream-worker", "notify"]
    assert notify["image"] == services["worker"]["image"]
    assert notify["read_only"] is True and notify["cap_drop"] == ["ALL"]
    assert notify["env_file"][0]["required"] is False
    replicas = int(notify["deploy"]["replicas"])
    assert 1 <= replicas <= int(services["topic-init"]["environment"]["ALERTS_PARTITIONS"])


def test_topic_script_creates_the_compacted_targets_and_the_dlq(tmp_path: Path) -> None:
    code, calls, output = run_script(tmp_path, ALL_TOPICS)
    assert code == 0, output
    creates = {option(c, "--topic"): c for c in calls_with(calls, "--create")}
    assert option(creates["notify-targets"], "--partitions") == "1"
    assert option(creates["notify-targets"], "--config") == "cleanup.policy=compact"
    assert option(creates["notify.dlq"], "--partitions") == "1"


def test_kubernetes_notify_settings_follow_the_other_services(rendered, monkeypatch) -> None:
    for build, objects in rendered.items():
        workers = one(objects, "ConfigMap", "stream-worker-settings")["data"]
        alerts = one(objects, "ConfigMap", "alerts-settings")["data"]
        sightings = one(objects, "ConfigMap", "sightings-settings")["data"]
        settings = _valid(one(objects, "ConfigMap", "notify-settings")["data"], monkeypatch)
        assert settings.bootstrap_servers == workers["STREAM_WORKER_BOOTSTRAP_SERVERS"], build
        assert settings.input_topic == alerts["STREAM_WORKER_ALERTS_OUTPUT_TOPIC"], build
        assert settings.watchlist_topic == alerts["STREAM_WORKER_ALERTS_WATCHLIST_TOPIC"], build
        assert settings.sightings_topic == sightings["STREAM_WORKER_SIGHTINGS_OUTPUT_TOPIC"], build
        job = one(objects, "Job", "stream-worker-topics")["spec"]["template"]["spec"]["containers"][0]
        env = {e["name"]: e for e in job["env"]}
        for name, topic in (
            ("NOTIFY_TARGETS_TOPIC", settings.targets_topic),
            ("NOTIFY_DLQ_TOPIC", settings.dlq_topic),
        ):
            ref = env[name]["valueFrom"]["configMapKeyRef"]
            assert one(objects, "ConfigMap", ref["name"])["data"][ref["key"]] == topic, f"{build}: {name}"


def test_kubernetes_notify_runs_its_command_with_its_probes_and_secrets(rendered) -> None:
    for build, objects in rendered.items():
        pod = one(objects, "Deployment", "notify")["spec"]["template"]
        container = pod["spec"]["containers"][0]
        assert container["command"] == ["stream-worker", "notify"], build
        assert {p["name"]: p["containerPort"] for p in container["ports"]} == {"metrics": PORT}, build
        assert int(pod["metadata"]["annotations"]["prometheus.io/port"]) == PORT, build
        assert container["readinessProbe"]["httpGet"]["path"] == "/readyz", build
        secret = {e["name"]: e for e in container["env"]}["STREAM_WORKER_NOTIFY_KAFKA_CONFIG"]
        assert secret["valueFrom"]["secretKeyRef"]["name"] == "stream-worker-kafka", build
        [target_secrets] = [source["secretRef"] for source in container["envFrom"] if "secretRef" in source]
        assert target_secrets == {"name": "stream-worker-notify", "optional": True}, build
        pdb = one(objects, "PodDisruptionBudget", "notify")
        assert pdb["spec"]["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items(), build


def test_only_prometheus_reaches_the_notify_metrics(rendered) -> None:
    for build, objects in rendered.items():
        template = pod_templates(objects)["notify"]
        clients = _clients(objects)
        admitted = {name for name, client in clients.items() if reachable(objects, template, PORT, client)}
        assert admitted == {"prometheus"}, f"{build}: {sorted(admitted)}"


def test_kubernetes_notify_scales_on_its_own_lags_within_the_alerts_partitions(rendered) -> None:
    for build, objects in rendered.items():
        partitions = int(one(objects, "ConfigMap", "stream-worker-topics")["data"]["ALERTS_PARTITIONS"])
        deployment = one(objects, "Deployment", "notify")
        scalers = [
            s for s in by_kind(objects, "ScaledObject") if s["spec"]["scaleTargetRef"]["name"] == "notify"
        ]
        if not scalers:
            assert 1 <= deployment["spec"]["replicas"] <= partitions, build
            continue
        (scaler,) = scalers
        assert "replicas" not in deployment["spec"], build  # the HPA owns the count
        assert 1 <= scaler["spec"]["minReplicaCount"] <= scaler["spec"]["maxReplicaCount"] <= partitions, (
            build
        )
        settings = one(objects, "ConfigMap", "notify-settings")["data"]
        alerts, sightings = (trigger["metadata"] for trigger in scaler["spec"]["triggers"])
        assert (
            (alerts["consumerGroup"], alerts["topic"])
            == (
                settings["STREAM_WORKER_NOTIFY_GROUP_ID"],
                settings["STREAM_WORKER_NOTIFY_INPUT_TOPIC"],
            )
            == ("stream-worker-notify", "alerts")
        ), build
        assert (
            (sightings["consumerGroup"], sightings["topic"])
            == (
                settings["STREAM_WORKER_NOTIFY_SIGHTINGS_GROUP_ID"],
                settings["STREAM_WORKER_NOTIFY_SIGHTINGS_TOPIC"],
            )
            == ("stream-worker-notify-sightings", "sightings")
        ), build
        assert (
            alerts["bootstrapServers"]
            == sightings["bootstrapServers"]
            == settings["STREAM_WORKER_NOTIFY_BOOTSTRAP_SERVERS"]
        ), build
    assert [
        s for s in by_kind(rendered["gpu"], "ScaledObject") if s["spec"]["scaleTargetRef"]["name"] == "notify"
    ]
