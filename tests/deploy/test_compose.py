"""deploy/compose.yaml and what it mounts (Prometheus, Grafana): valid against the compose-spec
JSON schema once interpolated as Compose does, and the invariants of the stack."""

from __future__ import annotations

import json
import re
from importlib.resources import files
from pathlib import Path

import jsonschema
import pytest
import yaml

DEPLOY_DIR = Path(__file__).resolve().parents[2] / "deploy"
COMPOSE_FILE = DEPLOY_DIR / "compose.yaml"
# ${NAME}, ${NAME:-default}, ${NAME-default}, ${NAME:?error}, ${NAME?error}
_VARIABLE = re.compile(r"\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?[-?])(?P<arg>[^}]*))?\}")


def interpolate(text: str, env: dict[str, str]) -> str:
    """Compose's variable substitution, enough for this file: `$$` is a literal `$`."""

    def substitute(match: re.Match[str]) -> str:
        name, op, arg = match["name"], match["op"], match["arg"]
        value = env.get(name)
        if op in (":-", ":?") and not value:
            value = None
        if value is not None:
            return value
        if op and op.endswith("?"):
            raise ValueError(f"{name}: {arg}")
        return arg if op else ""

    parts = text.split("$$")
    return "$".join(_VARIABLE.sub(substitute, part) for part in parts)


def load_compose(env: dict[str, str] | None = None) -> dict:
    return yaml.safe_load(interpolate(COMPOSE_FILE.read_text(), env or {}))


@pytest.fixture(scope="module")
def compose() -> dict:
    return load_compose()


@pytest.fixture(scope="module")
def compose_schema() -> dict:
    vendored = files("check_jsonschema.builtin_schemas.vendor").joinpath("compose-spec.json")
    return json.loads(vendored.read_text())


def test_every_variable_has_a_default() -> None:
    """`docker compose up` must work without an .env file; bare `$NAME` is not used either."""
    text = COMPOSE_FILE.read_text().replace("$$", "")
    without_defaults = [m[0] for m in _VARIABLE.finditer(text) if m["op"] != ":-"]
    assert not without_defaults, without_defaults
    assert not re.search(r"\$(?!\{)", text), "use ${NAME:-default}, not $NAME"


def test_compose_file_matches_the_compose_spec(compose: dict, compose_schema: dict) -> None:
    jsonschema.validate(compose, compose_schema, cls=jsonschema.Draft202012Validator)


def test_schema_check_rejects_a_misspelt_key(compose: dict, compose_schema: dict) -> None:
    broken = load_compose()
    broken["services"]["worker"]["deploy"]["replica"] = 3
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, compose_schema, cls=jsonschema.Draft202012Validator)


def test_images_are_pinned(compose: dict, assert_pinned) -> None:
    for name, service in compose["services"].items():
        assert "image" in service, f"{name}: every service names its image (built ones get a version tag)"
        assert_pinned(service["image"], f"service {name}")


def test_services_run_as_non_root(compose: dict) -> None:
    for name, service in compose["services"].items():
        user, _, group = str(service["user"]).partition(":")
        assert user.isdigit() and int(user) > 0, f"{name} runs as {service['user']!r}"
        assert group.isdigit(), f"{name}: numeric group expected"


def test_triton_gets_a_gpu_and_the_gpu_configs(compose: dict) -> None:
    triton = compose["services"]["triton"]
    (device,) = triton["deploy"]["resources"]["reservations"]["devices"]
    assert device["driver"] == "nvidia"
    assert "gpu" in device["capabilities"]
    assert int(device["count"]) >= 1
    assert "--model-config-name=gpu" in triton["command"]
    assert "--model-repository=/models" in triton["command"]
    assert triton["build"]["dockerfile"] == "deploy/docker/triton.Dockerfile"
    assert "weights" in triton["build"]["additional_contexts"], "checkpoints come as a named build context"
    assert triton["shm_size"], "the Python backend needs more than Docker's 64 MiB of /dev/shm"
    assert "/v2/health/ready" in " ".join(triton["healthcheck"]["test"])


@pytest.mark.parametrize(
    "env",
    [{}, {"WORKER_REPLICAS": "12", "FRAMES_PARTITIONS": "12"}],
    ids=["defaults", "scaled"],
)
def test_workers_never_outnumber_partitions(env: dict[str, str]) -> None:
    compose = load_compose(env)
    replicas = int(compose["services"]["worker"]["deploy"]["replicas"])
    partitions = int(compose["services"]["topic-init"]["environment"]["FRAMES_PARTITIONS"])
    assert 1 <= replicas <= partitions


def test_workers_and_topic_init_agree_on_topics(compose: dict) -> None:
    worker = compose["services"]["worker"]["environment"]
    topics = compose["services"]["topic-init"]["environment"]
    assert worker["STREAM_WORKER_INPUT_TOPIC"] == topics["INPUT_TOPIC"]
    assert worker["STREAM_WORKER_OUTPUT_TOPIC"] == topics["OUTPUT_TOPIC"]
    assert worker["STREAM_WORKER_DLQ_TOPIC"] == topics["DLQ_TOPIC"]


def test_start_order(compose: dict) -> None:
    services = compose["services"]
    assert services["topic-init"]["depends_on"]["kafka"]["condition"] == "service_healthy"
    worker_needs = services["worker"]["depends_on"]
    assert worker_needs["topic-init"]["condition"] == "service_completed_successfully"
    assert worker_needs["triton"]["condition"] == "service_healthy"
    assert services["kafka"]["healthcheck"]["test"]


def test_topic_init_runs_the_checked_in_script(compose: dict) -> None:
    init = compose["services"]["topic-init"]
    mounts = {volume.split(":")[1]: volume.split(":")[0] for volume in init["volumes"]}
    script = init["entrypoint"][-1]
    assert (DEPLOY_DIR / mounts[script]).resolve() == DEPLOY_DIR / "kubernetes" / "base" / "create-topics.sh"


def test_worker_environment_is_valid_worker_settings(compose: dict, monkeypatch) -> None:
    from stream_worker.worker.settings import ENV_PREFIX, WorkerSettings, load_settings

    environment = compose["services"]["worker"]["environment"]
    for key, value in environment.items():
        assert key.removeprefix(ENV_PREFIX).lower() in WorkerSettings.model_fields, key
        monkeypatch.setenv(key, str(value))
    settings = load_settings()
    assert settings.bootstrap_servers == "kafka:9092"
    assert settings.triton_url == "triton:8001"


def test_worker_is_hardened(compose: dict) -> None:
    worker = compose["services"]["worker"]
    assert worker["read_only"] is True
    assert worker["cap_drop"] == ["ALL"]
    assert "no-new-privileges:true" in worker["security_opt"]


def test_host_ports_bind_to_loopback_only(compose: dict) -> None:
    for name, service in compose["services"].items():
        for port in service.get("ports", []):
            assert str(port).startswith("127.0.0.1:"), f"{name} publishes {port} beyond this host"


def test_prometheus_scrapes_triton_and_every_worker(compose: dict) -> None:
    config = yaml.safe_load((DEPLOY_DIR / "prometheus" / "prometheus.yml").read_text())
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    assert jobs["triton"]["static_configs"][0]["targets"] == ["triton:8002"]
    (dns,) = jobs["stream-worker"]["dns_sd_configs"]
    assert dns["names"] == ["worker"] and "worker" in compose["services"]
    assert dns["port"] == int(compose["services"]["worker"]["environment"]["STREAM_WORKER_METRICS_PORT"])
    mounted = [v.split(":")[0] for v in compose["services"]["prometheus"]["volumes"]]
    assert "./prometheus/prometheus.yml" in mounted


def _dashboard() -> dict:
    return json.loads((DEPLOY_DIR / "grafana" / "dashboards" / "stream-worker.json").read_text())


def test_grafana_is_optional_and_provisioned(compose: dict) -> None:
    grafana = compose["services"]["grafana"]
    assert grafana["profiles"] == ["grafana"]
    mounts = dict(volume.split(":")[:2] for volume in grafana["volumes"])
    provider = yaml.safe_load(
        (DEPLOY_DIR / "grafana" / "provisioning" / "dashboards" / "stream-worker.yaml").read_text()
    )
    assert mounts["./grafana/dashboards"] == provider["providers"][0]["options"]["path"]
    datasource = yaml.safe_load(
        (DEPLOY_DIR / "grafana" / "provisioning" / "datasources" / "prometheus.yaml").read_text()
    )["datasources"][0]
    assert datasource["url"] == "http://prometheus:9090"
    uids = {
        target["datasource"]["uid"] for panel in _dashboard()["panels"] for target in panel.get("targets", [])
    }
    assert uids == {datasource["uid"]}


def test_dashboard_queries_name_real_service_metrics() -> None:
    """Every stream_worker_* series the dashboard reads is one the worker, the sightings service, the
    alerts service, the camera connector or the notify service exports, and it shows all five."""
    from stream_worker.alerts.metrics import AlertsMetrics
    from stream_worker.connector.metrics import ConnectorMetrics
    from stream_worker.notify.metrics import NotifyMetrics
    from stream_worker.sightings.metrics import SightingsMetrics
    from stream_worker.worker.metrics import Metrics

    registries = (
        Metrics().registry,
        SightingsMetrics().registry,
        AlertsMetrics().registry,
        ConnectorMetrics(lambda: []).registry,  # no camera yet: the per-camera families are empty
        NotifyMetrics().registry,
    )
    families = [family for registry in registries for family in registry.collect()]
    exported = {sample.name for family in families for sample in family.samples} | {
        family.name for family in families
    }
    # Histogram buckets, and labelled families without samples yet, still have their names.
    exported |= {f"{name}_bucket" for name in exported} | {f"{name}_total" for name in exported}
    used = {
        name
        for panel in _dashboard()["panels"]
        for target in panel.get("targets", [])
        for name in re.findall(r"\bstream_worker_[a-z_]+", target["expr"])
    }
    assert used <= exported, f"not exported: {sorted(used - exported)}"
    services = (
        "stream_worker_sightings_",
        "stream_worker_alerts_",
        "stream_worker_connector_",
        "stream_worker_notify_",
    )
    assert any(name.startswith("stream_worker_sightings_") for name in used), "no sightings panel"
    assert any(name.startswith("stream_worker_alerts_") for name in used), "no alerts panel"
    assert any(name.startswith("stream_worker_connector_") for name in used), "no connector panel"
    assert any(name.startswith("stream_worker_notify_") for name in used), "no notify panel"
    assert any(not name.startswith(services) for name in used), "no worker panel"


def test_dashboard_panels_have_distinct_ids_and_do_not_overlap() -> None:
    panels = _dashboard()["panels"]
    assert len({panel["id"] for panel in panels}) == len(panels)
    cells: set[tuple[int, int]] = set()
    for panel in panels:
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24, panel["title"]
        mine = {
            (x, y)
            for x in range(grid["x"], grid["x"] + grid["w"])
            for y in range(grid["y"], grid["y"] + grid["h"])
        }
        assert not mine & cells, f"{panel['title']} overlaps another panel"
        cells |= mine


def test_largest_accepted_frame_fits_the_topics(compose: dict) -> None:
    """A frame the worker accepts must also fit the DLQ (whole frame plus headers) and the broker."""
    from stream_worker.worker.settings import load_settings

    largest_record = load_settings().max_frame_bytes + 64 * 1024
    topic_limit = int(compose["services"]["topic-init"]["environment"]["MAX_MESSAGE_BYTES"])
    broker_limit = int(compose["services"]["kafka"]["environment"]["KAFKA_MESSAGE_MAX_BYTES"])
    assert largest_record <= topic_limit <= broker_limit
