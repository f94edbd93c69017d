"""The camera connector in Compose and Kubernetes: it publishes what the workers read and follows the
cameras topic they follow, its settings are valid connector settings, the topic script creates its
topics (the cameras topic with the partitions its replicas share, the status topic), its probes
and metrics port are its own, its replicas never outnumber the cameras partitions, only Prometheus
reaches its metrics, its egress component lets it reach Kafka and cameras only, and camera
credentials come only from the environment (a Secret, a git-ignored env file)."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
import yaml
from deploy.test_alerts_deploy import ALL_TOPICS
from deploy.test_compose import load_compose
from deploy.test_create_topics import calls_with, option, run_script
from deploy.test_kubernetes import (
    KAFKA_SECRET,
    _clients,
    _probe_port,
    by_kind,
    one,
    pod_templates,
    reachable,
    validate_object,
)

from stream_worker.connector.settings import ENV_PREFIX, ConnectorSettings, load_settings

DEPLOY_DIR = Path(__file__).resolve().parents[2] / "deploy"
KUSTOMIZE_DIR = DEPLOY_DIR / "kubernetes"
CAMERAS_SECRET = "stream-worker-cameras"
EXAMPLE_SECRET = KUSTOMIZE_DIR / "examples" / "camera-credentials.example.yaml"
EXAMPLE_ENV = DEPLOY_DIR / "cameras.example.env"
_ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]*$")


def _valid(environment: dict[str, object], monkeypatch) -> ConnectorSettings:
    for key, value in environment.items():
        assert key.startswith(ENV_PREFIX), key
        assert key.removeprefix(ENV_PREFIX).lower() in ConnectorSettings.model_fields, key
        monkeypatch.setenv(key, str(value))
    return load_settings([])


def test_settings_check_rejects_a_misspelt_key(monkeypatch) -> None:
    with pytest.raises(AssertionError):
        _valid({"STREAM_WORKER_CONNECT_STALL_TIMEOUT": "5"}, monkeypatch)


# --- Compose ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "env",
    [{}, {"INPUT_TOPIC": "frames-eu", "CAMERAS_TOPIC": "lanes", "CAMERAS_PARTITIONS": "12"}],
    ids=["defaults", "custom"],
)
def test_compose_connector_feeds_the_workers_and_follows_the_created_topics(env, monkeypatch) -> None:
    services = load_compose(env)["services"]
    settings = _valid(services["connector"]["environment"], monkeypatch)
    worker = services["worker"]["environment"]
    topics = services["topic-init"]["environment"]
    assert settings.bootstrap_servers == worker["STREAM_WORKER_BOOTSTRAP_SERVERS"]
    assert settings.frames_topic == worker["STREAM_WORKER_INPUT_TOPIC"] == topics["INPUT_TOPIC"]
    assert settings.cameras_topic == worker["STREAM_WORKER_CAMERAS_TOPIC"] == topics["CAMERAS_TOPIC"]
    assert settings.cameras_partitions == int(topics["CAMERAS_PARTITIONS"])
    assert settings.status_topic == topics["CAMERA_STATUS_TOPIC"]
    sightings = services["sightings"]["environment"]
    assert sightings["STREAM_WORKER_SIGHTINGS_CAMERAS_TOPIC"] == settings.cameras_topic
    if env:
        assert (settings.frames_topic, settings.cameras_topic, settings.cameras_partitions) == (
            "frames-eu",
            "lanes",
            12,
        )


def test_compose_connector_health_and_metrics_use_its_own_port() -> None:
    compose = load_compose()
    services = compose["services"]
    connector = services["connector"]
    port = int(connector["environment"]["STREAM_WORKER_CONNECT_METRICS_PORT"])
    others = {
        int(services["worker"]["environment"]["STREAM_WORKER_METRICS_PORT"]),
        int(services["sightings"]["environment"]["STREAM_WORKER_SIGHTINGS_METRICS_PORT"]),
        int(services["alerts"]["environment"]["STREAM_WORKER_ALERTS_METRICS_PORT"]),
    }
    assert port == ConnectorSettings.model_fields["metrics_port"].default and port not in others
    assert f"127.0.0.1:{port}/healthz" in " ".join(connector["healthcheck"]["test"])
    assert connector["entrypoint"] == ["stream-worker", "connect"]
    assert connector["image"] == services["worker"]["image"]
    assert connector["read_only"] is True and connector["cap_drop"] == ["ALL"]
    assert "no-new-privileges:true" in connector["security_opt"]
    assert connector["depends_on"]["topic-init"]["condition"] == "service_completed_successfully"
    config = yaml.safe_load((DEPLOY_DIR / "prometheus" / "prometheus.yml").read_text())
    (dns,) = {job["job_name"]: job for job in config["scrape_configs"]}["connector"]["dns_sd_configs"]
    assert dns["names"] == ["connector"] and dns["port"] == port


@pytest.mark.parametrize("env", [{}, {"CONNECTOR_REPLICAS": "4", "CAMERAS_PARTITIONS": "4"}])
def test_compose_connectors_never_outnumber_the_cameras_partitions(env) -> None:
    services = load_compose(env)["services"]
    replicas = int(services["connector"]["deploy"]["replicas"])
    assert 1 <= replicas <= int(services["topic-init"]["environment"]["CAMERAS_PARTITIONS"])


def test_compose_camera_credentials_come_from_an_ignored_env_file() -> None:
    connector = load_compose()["services"]["connector"]
    # Only the connector's own settings are written in the file; credentials never are.
    assert all(key.startswith(ENV_PREFIX) for key in connector["environment"])
    # One name for every replica would be wrong: each takes its container's host name.
    assert f"{ENV_PREFIX}REPLICA_ID" not in connector["environment"]
    (env_file,) = connector["env_file"]
    assert env_file["required"] is False, "the stack starts without camera credentials"
    assert env_file["path"] == "./cameras.env"
    assert load_compose({"CAMERAS_ENV_FILE": "/etc/cams.env"})["services"]["connector"]["env_file"][0][
        "path"
    ] == ("/etc/cams.env")
    ignored = (DEPLOY_DIR / ".gitignore").read_text().split()
    assert "/cameras.env" in ignored and "/.env" in ignored
    result = subprocess.run(
        ["git", "check-ignore", "-q", str(DEPLOY_DIR / "cameras.env")], cwd=DEPLOY_DIR, check=False
    )
    assert result.returncode == 0, "git would track deploy/cameras.env"


def test_example_env_file_holds_placeholders_only() -> None:
    lines = [
        line for line in EXAMPLE_ENV.read_text().splitlines() if line.strip() and not line.startswith("#")
    ]
    assert lines
    for line in lines:
        name, _, value = line.partition("=")
        assert _ENV_NAME.match(name) and not name.startswith("STREAM_WORKER_"), line
        assert re.fullmatch(r"<[^<>]+>", value), f"{line}: not a placeholder"


# --- topics ----------------------------------------------------------------------------------


def test_topic_script_creates_the_connector_topics_compacted(tmp_path: Path) -> None:
    code, calls, output = run_script(
        tmp_path,
        {**ALL_TOPICS, "lanes": 12, "lane-status": 2},
        CAMERAS_TOPIC="lanes",
        CAMERAS_PARTITIONS="12",
        CAMERA_STATUS_TOPIC="lane-status",
        CAMERA_STATUS_PARTITIONS="2",
    )
    assert code == 0, output
    creates = {option(c, "--topic"): c for c in calls_with(calls, "--create")}
    assert option(creates["lanes"], "--partitions") == "12"
    assert option(creates["lane-status"], "--partitions") == "2"
    assert "camera-status" not in creates, "the name comes from CAMERA_STATUS_TOPIC"
    configs = {
        option(c, "--entity-name"): option(c, "--add-config") for c in calls_with(calls, "--entity-name")
    }
    assert option(creates["lanes"], "--config") == "cleanup.policy=compact"
    assert configs["lanes"].split(",")[0] == "cleanup.policy=compact"
    assert "retention.ms" not in configs["lanes"]
    # The status, rewritten every few seconds, is compacted and its old records deleted too.
    assert option(creates["lane-status"], "--config") == "cleanup.policy=compact,delete"
    assert configs["lane-status"].startswith("cleanup.policy=[compact,delete],retention.ms=3600000,")
    assert not calls_with(calls, "--alter", "--partitions"), "nothing to raise"


def test_topic_script_defaults_match_the_connector(tmp_path: Path) -> None:
    code, calls, output = run_script(tmp_path, ALL_TOPICS)
    assert code == 0, output
    creates = {option(c, "--topic"): c for c in calls_with(calls, "--create")}
    defaults = ConnectorSettings.model_fields
    assert int(option(creates[defaults["cameras_topic"].default], "--partitions")) == (
        defaults["cameras_partitions"].default
    )
    assert defaults["status_topic"].default in creates


def test_topic_script_never_changes_a_compacted_topics_partitions(tmp_path: Path) -> None:
    # Run again on topics that exist with other counts (an older deployment, a hand-made topic):
    # the cameras and status topics are left as they are, with a warning; frames are raised.
    code, calls, output = run_script(
        tmp_path, {**ALL_TOPICS, "frames": 3, "cameras": 1, "camera-status": 8}, FRAMES_PARTITIONS="6"
    )
    assert code == 0, output
    raised = [option(c, "--topic") for c in calls_with(calls, "--alter", "--partitions")]
    assert raised == ["frames"]
    assert "compacted topic cameras has 1 partitions, not the configured 6" in output
    assert "compacted topic camera-status has 8 partitions, not the configured 3" in output


# --- Kubernetes ------------------------------------------------------------------------------


def test_kubernetes_connector_settings_follow_the_workers_and_topics(rendered, monkeypatch) -> None:
    for build, objects in rendered.items():
        workers = one(objects, "ConfigMap", "stream-worker-settings")["data"]
        topics = one(objects, "ConfigMap", "stream-worker-topics")["data"]
        settings = _valid(one(objects, "ConfigMap", "connector-settings")["data"], monkeypatch)
        assert settings.bootstrap_servers == workers["STREAM_WORKER_BOOTSTRAP_SERVERS"], build
        assert settings.frames_topic == workers["STREAM_WORKER_INPUT_TOPIC"], build
        assert settings.cameras_topic == workers["STREAM_WORKER_CAMERAS_TOPIC"], build
        assert settings.cameras_partitions == int(topics["CAMERAS_PARTITIONS"]), build
        sightings = one(objects, "ConfigMap", "sightings-settings")["data"]
        assert sightings["STREAM_WORKER_SIGHTINGS_CAMERAS_TOPIC"] == settings.cameras_topic, build
        job = one(objects, "Job", "stream-worker-topics")["spec"]["template"]["spec"]["containers"][0]
        ref = {e["name"]: e for e in job["env"]}["CAMERA_STATUS_TOPIC"]["valueFrom"]["configMapKeyRef"]
        assert one(objects, "ConfigMap", ref["name"])["data"][ref["key"]] == settings.status_topic, build
        assert "CAMERAS_PARTITIONS" in topics and "CAMERA_STATUS_PARTITIONS" in topics, build


def test_kubernetes_connector_runs_its_command_with_its_probes(rendered) -> None:
    for build, objects in rendered.items():
        deployment = one(objects, "Deployment", "connector")
        pod = deployment["spec"]["template"]
        container = pod["spec"]["containers"][0]
        port = int(
            one(objects, "ConfigMap", "connector-settings")["data"]["STREAM_WORKER_CONNECT_METRICS_PORT"]
        )
        worker = one(objects, "Deployment", "stream-worker")["spec"]["template"]["spec"]["containers"][0]
        assert container["command"] == ["stream-worker", "connect"], build
        assert container["image"] == worker["image"], build
        assert {p["name"]: p["containerPort"] for p in container["ports"]} == {"metrics": port}, build
        assert int(pod["metadata"]["annotations"]["prometheus.io/port"]) == port, build
        assert pod["metadata"]["annotations"]["prometheus.io/scrape"] == "true", build
        assert container["startupProbe"]["httpGet"]["path"] == "/healthz", build
        assert container["livenessProbe"]["httpGet"]["path"] == "/healthz", build
        assert container["readinessProbe"]["httpGet"]["path"] == "/readyz", build
        for kind in ("startupProbe", "livenessProbe", "readinessProbe"):
            assert _probe_port(container[kind], container) == port, f"{build} {kind}"
        env = {e["name"]: e for e in container["env"]}
        assert env[f"{ENV_PREFIX}KAFKA_CONFIG"]["valueFrom"]["secretKeyRef"]["name"] == KAFKA_SECRET, build
        assert env[f"{ENV_PREFIX}REPLICA_ID"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"
        pdb = one(objects, "PodDisruptionBudget", "connector")
        assert pdb["spec"]["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items(), build
        assert pdb["spec"]["maxUnavailable"] == 1, build


def test_kubernetes_connectors_share_the_cameras_partitions(rendered) -> None:
    for build, objects in rendered.items():
        partitions = int(one(objects, "ConfigMap", "stream-worker-topics")["data"]["CAMERAS_PARTITIONS"])
        spec = one(objects, "Deployment", "connector")["spec"]
        assert 2 <= spec["replicas"] <= partitions, f"{build}: a replica to take over, within the partitions"
        # No surge: the group never has more members than replicas during a rollout.
        assert spec["strategy"]["rollingUpdate"]["maxSurge"] == 0, build


def test_kubernetes_camera_credentials_come_only_from_the_secret(rendered) -> None:
    for build, objects in rendered.items():
        container = one(objects, "Deployment", "connector")["spec"]["template"]["spec"]["containers"][0]
        secrets = [s["secretRef"] for s in container["envFrom"] if "secretRef" in s]
        assert secrets == [{"name": CAMERAS_SECRET, "optional": True}], build
        # The settings come first: a Secret's key cannot be mistaken for a setting it overrides
        # unless it is named like one, which the example warns against.
        assert "configMapRef" in container["envFrom"][0], build
        for item in container["env"]:
            assert "value" not in item, f"{build}: {item['name']} is written in the manifest"
        data = one(objects, "ConfigMap", "connector-settings")["data"]
        assert not [k for k in data if re.search("PASSWORD|USER|SECRET|TOKEN", k)], build
        assert not by_kind(objects, "Secret"), build


def test_example_camera_secret_is_only_an_example(rendered) -> None:
    (secret,) = yaml.safe_load_all(EXAMPLE_SECRET.read_text())
    validate_object(secret)
    assert secret["kind"] == "Secret" and secret["metadata"]["name"] == CAMERAS_SECRET
    assert "data" not in secret
    for key, value in secret["stringData"].items():
        assert _ENV_NAME.match(key) and not key.startswith("STREAM_WORKER_"), key
        assert re.fullmatch(r"<[^<>]+>", value), f"{key}: not a placeholder"
    for objects in rendered.values():
        assert not [s for s in by_kind(objects, "Secret") if s["metadata"]["name"] == CAMERAS_SECRET]


def test_only_prometheus_reaches_the_connector_metrics(rendered) -> None:
    for build, objects in rendered.items():
        templates = pod_templates(objects)
        template = templates["connector"]
        port = int(
            one(objects, "ConfigMap", "connector-settings")["data"]["STREAM_WORKER_CONNECT_METRICS_PORT"]
        )
        clients = _clients(objects)
        ours = clients["worker"][0]
        clients["connector"] = (ours, templates["connector"]["metadata"]["labels"])
        for probe in (port, 8080, 554):
            admitted = {
                name for name, client in clients.items() if reachable(objects, template, probe, client)
            }
            expected = {"prometheus"} if probe == port else set()
            assert admitted == expected, f"{build}: {probe} admits {sorted(admitted)}"


# --- the optional egress component ----------------------------------------------------------


def _egress_allows(policies: list[dict], port: int, protocol: str = "TCP") -> bool:
    for spec in policies:
        for rule in spec.get("egress", []):
            for item in rule.get("ports", []):
                low = item["port"]
                if item.get("protocol", "TCP") == protocol and low <= port <= item.get("endPort", low):
                    return True
    return False


@pytest.fixture(scope="module")
def with_egress(kubectl: str, tmp_path_factory) -> list[dict]:
    folder = tmp_path_factory.mktemp("connector-egress")
    overlay = {
        "resources": [os.path.relpath(KUSTOMIZE_DIR / "overlays" / "gpu", folder)],
        "components": [os.path.relpath(KUSTOMIZE_DIR / "components" / "connector-egress", folder)],
    }
    (folder / "kustomization.yaml").write_text(yaml.safe_dump(overlay))
    result = subprocess.run(
        [kubectl, "kustomize", str(folder)], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


def test_egress_component_lets_the_connector_reach_kafka_dns_and_cameras_only(with_egress) -> None:
    for obj in with_egress:
        validate_object(obj)
    templates = pod_templates(with_egress)
    policies = [
        p["spec"]
        for p in by_kind(with_egress, "NetworkPolicy")
        if "Egress" in p["spec"]["policyTypes"]
        and all(
            templates["connector"]["metadata"]["labels"].get(k) == v
            for k, v in p["spec"]["podSelector"]["matchLabels"].items()
        )
    ]
    assert policies, "the component isolates the connector for egress"
    bootstrap = one(with_egress, "ConfigMap", "connector-settings")["data"][f"{ENV_PREFIX}BOOTSTRAP_SERVERS"]
    kafka_port = int(bootstrap.split(",")[0].rsplit(":", 1)[1])
    for port in (kafka_port, 9093, 554, 8554, 322, 80, 8080, 443, 53):
        assert _egress_allows(policies, port), port
    assert _egress_allows(policies, 53, "UDP")
    for port in (22, 3306, 6443, 8001):  # ssh, a database, the API server, Triton
        assert not _egress_allows(policies, port), port
    # Only the connector is limited: the other pods keep reaching Kafka wherever it runs.
    others = [p for p in by_kind(with_egress, "NetworkPolicy") if "Egress" in p["spec"]["policyTypes"]]
    assert all(
        p["spec"]["podSelector"] == {"matchLabels": {"app.kubernetes.io/name": "connector"}} for p in others
    )


# --- the dashboard's Cameras row -------------------------------------------------------------


def _cameras_row() -> list[dict]:
    """The panels from the "Cameras" row to the next row."""
    from deploy.test_compose import _dashboard

    panels = sorted(_dashboard()["panels"], key=lambda p: (p["gridPos"]["y"], p["gridPos"]["x"]))
    rows = [i for i, p in enumerate(panels) if p["type"] == "row"]
    (start,) = [i for i in rows if panels[i]["title"] == "Cameras"]
    end = next((i for i in rows if i > start), len(panels))
    return panels[start + 1 : end]


def _exported_labels() -> dict[str, set[str]]:
    """Sample name -> its label names, with one camera of each kind seen by every service."""
    import time

    from stream_worker.connector.metrics import CameraFigures, ConnectorMetrics, totals_of
    from stream_worker.connector.reader import CameraStats
    from stream_worker.connector.states import CameraState
    from stream_worker.sightings.metrics import SightingsMetrics
    from stream_worker.worker.metrics import Metrics

    stats = CameraStats(
        state=CameraState.STREAMING, decoded=10, motion=2, static=3, last_frame_mono=time.monotonic()
    )
    connector = ConnectorMetrics(lambda: [CameraFigures("cam-1", totals_of(stats, 1), stats, True)])
    sightings = SightingsMetrics()
    sightings.not_plates.labels("cam-1").inc()
    worker = Metrics()
    worker.frames_not_examined.labels("cam-1").inc()
    labels: dict[str, set[str]] = {}
    for registry in (connector.registry, sightings.registry, worker.registry):
        for family in registry.collect():
            for sample in family.samples:
                labels.setdefault(sample.name, set()).update(sample.labels)
    return labels


def test_dashboard_cameras_row_shows_the_connector_and_the_not_plates() -> None:
    exprs = [t["expr"] for panel in _cameras_row() for t in panel["targets"]]
    used = {name for expr in exprs for name in re.findall(r"\bstream_worker_[a-z_]+", expr)}
    camera = "stream_worker_connector_camera_"
    wanted = {
        f"{camera}connected",
        f"{camera}frames_decoded_total",
        f"{camera}frames_published_total",
        f"{camera}frames_static_total",
        f"{camera}frames_dropped_total",
        f"{camera}reconnects_total",
        f"{camera}seconds_since_last_frame",
        f"{camera}motion_share",
        "stream_worker_sightings_not_plates_total",
    }
    assert wanted <= used, f"missing from the Cameras row: {sorted(wanted - used)}"


def test_dashboard_cameras_row_groups_by_labels_the_metrics_have() -> None:
    """`sum by (camera)` over a metric labelled camera_id would draw one nameless line."""
    exported = _exported_labels()
    for panel in _cameras_row():
        for target in panel["targets"]:
            expr = target["expr"]
            names = set(re.findall(r"\bstream_worker_[a-z_]+", expr))
            assert names <= exported.keys(), f"{panel['title']}: {sorted(names - exported.keys())}"
            for group in re.findall(r"by \(([^)]*)\)", expr):
                for label in (item.strip() for item in group.split(",")):
                    if label == "instance":  # added by Prometheus to every target
                        continue
                    assert all(label in exported[name] for name in names), f"{panel['title']}: {expr}"
            for legend_label in re.findall(r"\{\{(\w+)\}\}", target.get("legendFormat", "")):
                assert legend_label in expr, f"{panel['title']}: legend {legend_label} not grouped by"


def test_the_documented_egress_overlay_adds_a_camera_port_and_network(kubectl: str, tmp_path: Path) -> None:
    readme = (DEPLOY_DIR / "README.md").read_text()
    section = readme.split("**Connector egress.**", 1)[1]
    overlay = yaml.safe_load(section.split("```yaml\n", 1)[1].split("```", 1)[0])
    # As written, the overlay sits in a folder beside deploy/; kustomize wants relative paths.
    beside_deploy = DEPLOY_DIR.parent / "my-overlay"
    for key in ("resources", "components"):
        overlay[key] = [os.path.relpath(beside_deploy / item, tmp_path) for item in overlay[key]]
    (tmp_path / "kustomization.yaml").write_text(yaml.safe_dump(overlay))
    result = subprocess.run(
        [kubectl, "kustomize", str(tmp_path)], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    (policy,) = [
        p for p in yaml.safe_load_all(result.stdout) if p and p["metadata"]["name"] == "connector-egress"
    ]
    validate_object(policy)
    cameras = policy["spec"]["egress"][2]
    assert {"port": 10554, "protocol": "TCP"} in cameras["ports"] and {
        "port": 554,
        "protocol": "TCP",
    } in cameras["ports"]
    assert cameras["to"] == [{"ipBlock": {"cidr": "10.20.0.0/16"}}]
    assert _egress_allows([policy["spec"]], 9092), "Kafka is still reachable"
