"""The history store and its PostgreSQL in Compose and Kubernetes: the database's password only
from a file or Secret of the user's own, named by reference in the store's database URL; the store
reads the topics the sightings and alerts services write; PostgreSQL is reached by the store alone,
the store's metrics by Prometheus alone, its console on loopback (Compose) or through its Service."""

from __future__ import annotations

from pathlib import Path

import yaml
from deploy.test_compose import load_compose
from deploy.test_kubernetes import _clients, one, pod_templates, reachable

from stream_worker.store.settings import ENV_PREFIX, StoreSettings, load_settings

DEPLOY_DIR = Path(__file__).resolve().parents[2] / "deploy"
PASSWORD_REFERENCE = "${POSTGRES_PASSWORD}"
POSTGRES_SECRET = "stream-worker-postgres"


def _valid(environment: dict[str, object], monkeypatch) -> StoreSettings:
    """The environment is the store's own settings, accepted as they are."""
    for key, value in environment.items():
        assert (
            key.startswith(ENV_PREFIX) and key.removeprefix(ENV_PREFIX).lower() in StoreSettings.model_fields
        )
        monkeypatch.setenv(key, str(value))
    return load_settings()


# --- Compose ---------------------------------------------------------------------------------


def test_compose_store_environment_is_valid_store_settings_and_fills_in_the_password(monkeypatch) -> None:
    environment = load_compose()["services"]["store"]["environment"]
    settings = _valid(environment, monkeypatch)
    monkeypatch.setenv("POSTGRES_PASSWORD", "from-the-env-file")
    resolved = settings.resolved_database_url()
    assert resolved == "postgresql+psycopg://stream_worker:from-the-env-file@postgres:5432/stream_worker"
    assert settings.console and settings.metrics_port == 9112 and settings.users_file is None


def test_compose_postgres_is_the_official_image_with_a_volume_a_healthcheck_and_no_password() -> None:
    compose = load_compose()
    postgres = compose["services"]["postgres"]
    assert postgres["image"].startswith("postgres:")
    assert "POSTGRES_PASSWORD" not in postgres["environment"], "the password comes from the env file"
    (env_file,) = postgres["env_file"]
    assert env_file["path"] == "./postgres.env" and env_file["required"] is True  # no default password
    volume, target = postgres["volumes"][0].split(":")
    assert volume in compose["volumes"] and postgres["environment"]["PGDATA"].startswith(target + "/")
    assert "pg_isready" in postgres["healthcheck"]["test"]
    assert "ports" not in postgres, "only the containers of the stack reach the database"


def test_compose_store_url_names_the_password_by_reference_and_the_postgres_service() -> None:
    compose = load_compose({"POSTGRES_USER": "history", "POSTGRES_DB": "plates"})
    services = compose["services"]
    store, postgres = services["store"], services["postgres"]
    url = store["environment"]["STREAM_WORKER_STORE_DATABASE_URL"]
    assert url == f"postgresql+psycopg://history:{PASSWORD_REFERENCE}@postgres:5432/plates"
    assert postgres["environment"]["POSTGRES_USER"] == "history"
    assert postgres["environment"]["POSTGRES_DB"] == "plates"
    assert store["env_file"] == postgres["env_file"], "the store fills the reference from the same file"
    assert store["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert store["depends_on"]["topic-init"]["condition"] == "service_completed_successfully"
    assert "/postgres.env" in (DEPLOY_DIR / ".gitignore").read_text().splitlines()
    example = (DEPLOY_DIR / "postgres.example.env").read_text().splitlines()
    assert [line for line in example if not line.startswith("#")] == ["POSTGRES_PASSWORD=<password>"]


def test_compose_store_reads_what_the_services_write_and_publishes_its_console_on_loopback() -> None:
    compose = load_compose({"SIGHTINGS_TOPIC": "passes", "ALERTS_TOPIC": "hits", "CONSOLE_PORT": "9443"})
    services = compose["services"]
    store = services["store"]
    environment = store["environment"]
    assert store["entrypoint"] == ["stream-worker", "store"]
    assert store["image"] == services["worker"]["image"]
    assert environment["STREAM_WORKER_STORE_BOOTSTRAP_SERVERS"] == "kafka:9092"
    assert (
        environment["STREAM_WORKER_STORE_SIGHTINGS_TOPIC"]
        == services["sightings"]["environment"]["STREAM_WORKER_SIGHTINGS_OUTPUT_TOPIC"]
        == "passes"
    )
    assert (
        environment["STREAM_WORKER_STORE_ALERTS_TOPIC"]
        == services["alerts"]["environment"]["STREAM_WORKER_ALERTS_OUTPUT_TOPIC"]
        == "hits"
    )
    console = int(environment["STREAM_WORKER_STORE_CONSOLE_PORT"])
    assert store["ports"] == [f"127.0.0.1:9443:{console}"]
    assert environment["STREAM_WORKER_STORE_CONSOLE_HOST"] == "0.0.0.0"  # inside its container
    metrics = int(environment["STREAM_WORKER_STORE_METRICS_PORT"])
    assert f"127.0.0.1:{metrics}/healthz" in " ".join(store["healthcheck"]["test"])
    assert store["read_only"] is True and store["cap_drop"] == ["ALL"]
    data_volume, data_dir = store["volumes"][0].split(":")
    assert data_volume in compose["volumes"] and environment["STREAM_WORKER_STORE_DATA_DIR"] == data_dir
    config = yaml.safe_load((DEPLOY_DIR / "prometheus" / "prometheus.yml").read_text())
    (dns,) = {job["job_name"]: job for job in config["scrape_configs"]}["store"]["dns_sd_configs"]
    assert dns["names"] == ["store"] and dns["port"] == metrics
    other_ports = {
        int(value) for service in services.values() for key, value in service.get("environment", {}).items()
        if key.endswith("_METRICS_PORT") and service is not store
    }  # fmt: skip
    assert metrics not in other_ports


# --- Kubernetes ------------------------------------------------------------------------------


def _env(container: dict) -> dict[str, dict]:
    return {item["name"]: item for item in container.get("env", [])}


def test_kubernetes_postgres_takes_its_password_from_the_secret_and_keeps_its_data(rendered) -> None:
    for build, objects in rendered.items():
        statefulset = one(objects, "StatefulSet", "postgres")
        (container,) = statefulset["spec"]["template"]["spec"]["containers"]
        assert container["image"].startswith("postgres:"), build
        ref = _env(container)["POSTGRES_PASSWORD"]["valueFrom"]["secretKeyRef"]
        assert (ref["name"], ref["key"]) == (POSTGRES_SECRET, "password"), build
        (claim,) = statefulset["spec"]["volumeClaimTemplates"]
        mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
        assert _env(container)["PGDATA"]["value"].startswith(mounts[claim["metadata"]["name"]] + "/"), build
        service = one(objects, "Service", "postgres")
        assert statefulset["spec"]["serviceName"] == service["metadata"]["name"], build


def test_kubernetes_store_reads_the_services_topics_and_the_password_by_reference(
    rendered, monkeypatch
) -> None:
    for build, objects in rendered.items():
        settings = one(objects, "ConfigMap", "store-settings")["data"]
        store = _valid(settings, monkeypatch)
        assert store.secure_cookies, f"{build}: behind TLS"
        workers = one(objects, "ConfigMap", "stream-worker-settings")["data"]
        sightings = one(objects, "ConfigMap", "sightings-settings")["data"]
        alerts = one(objects, "ConfigMap", "alerts-settings")["data"]
        assert settings["STREAM_WORKER_STORE_BOOTSTRAP_SERVERS"] == workers["STREAM_WORKER_BOOTSTRAP_SERVERS"]
        assert (
            settings["STREAM_WORKER_STORE_SIGHTINGS_TOPIC"]
            == sightings["STREAM_WORKER_SIGHTINGS_OUTPUT_TOPIC"]
        )
        assert settings["STREAM_WORKER_STORE_ALERTS_TOPIC"] == alerts["STREAM_WORKER_ALERTS_OUTPUT_TOPIC"]
        url = settings["STREAM_WORKER_STORE_DATABASE_URL"]
        postgres = one(objects, "StatefulSet", "postgres")["spec"]["template"]["spec"]["containers"][0]
        user, database = (_env(postgres)[name]["value"] for name in ("POSTGRES_USER", "POSTGRES_DB"))
        assert url == f"postgresql+psycopg://{user}:{PASSWORD_REFERENCE}@postgres:5432/{database}", build
        pod = one(objects, "Deployment", "store")["spec"]["template"]
        (container,) = pod["spec"]["containers"]
        assert container["command"] == ["stream-worker", "store"], build
        env = _env(container)
        ref = env["POSTGRES_PASSWORD"]["valueFrom"]["secretKeyRef"]
        assert (ref["name"], ref["key"]) == (POSTGRES_SECRET, "password"), build
        kafka = env["STREAM_WORKER_STORE_KAFKA_CONFIG"]["valueFrom"]["secretKeyRef"]
        assert kafka["name"] == "stream-worker-kafka", build
        ports = {p["name"]: p["containerPort"] for p in container["ports"]}
        assert ports == {
            "console": int(settings["STREAM_WORKER_STORE_CONSOLE_PORT"]),
            "metrics": int(settings["STREAM_WORKER_STORE_METRICS_PORT"]),
        }, build
        assert int(pod["metadata"]["annotations"]["prometheus.io/port"]) == ports["metrics"], build
        assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "metrics"}, build
        secrets = {v["name"]: v["secret"]["secretName"] for v in pod["spec"]["volumes"] if "secret" in v}
        assert secrets["console-users"] == "stream-worker-console-users", build
        mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
        assert store.users_file is not None and str(store.users_file.parent) == mounts["console-users"], build
        assert str(store.data_dir) == mounts["data"], build
        # One session key for every replica: a Secret, not the pod's own data folder.
        assert secrets["console-session"] == "stream-worker-console-session", build
        assert store.session_key_file is not None, build
        assert str(store.session_key_file.parent) == mounts["console-session"], build
        assert not str(store.session_key_file).startswith(mounts["data"]), build
        service = one(objects, "Service", "store")
        assert [p["targetPort"] for p in service["spec"]["ports"]] == ["console"], build


def test_only_the_store_reaches_postgres_and_only_prometheus_the_store_metrics(rendered) -> None:
    for build, objects in rendered.items():
        templates = pod_templates(objects)
        clients = {
            **_clients(objects),
            "store": (_clients(objects)["worker"][0], templates["store"]["metadata"]["labels"]),
        }
        admitted = {
            name
            for name, client in clients.items()
            if reachable(objects, templates["postgres"], 5432, client)
        }
        assert admitted == {"store"}, build
        admitted = {
            name for name, client in clients.items() if reachable(objects, templates["store"], 9112, client)
        }
        assert admitted == {"prometheus"}, build
        console = {
            name for name, client in clients.items() if reachable(objects, templates["store"], 8080, client)
        }
        assert console == set(clients), f"{build}: the console signs people in itself"


def test_the_console_users_example_fills_the_file_the_store_reads(rendered) -> None:
    example = yaml.safe_load(
        (DEPLOY_DIR / "kubernetes" / "examples" / "console-users.example.yaml").read_text()
    )
    assert example["metadata"]["name"] == "stream-worker-console-users"
    (key,) = example["stringData"]
    users = yaml.safe_load(example["stringData"][key])["users"]
    assert {user["role"] for user in users} == {"admin", "viewer"}
    assert all(user["password_hash"].startswith("<") for user in users)  # placeholders only
    for build, objects in rendered.items():
        users_file = one(objects, "ConfigMap", "store-settings")["data"]["STREAM_WORKER_STORE_USERS_FILE"]
        assert users_file.rsplit("/", 1)[1] == key, build


def test_the_console_session_example_fills_the_key_file_the_store_reads(rendered) -> None:
    example = yaml.safe_load(
        (DEPLOY_DIR / "kubernetes" / "examples" / "console-session.example.yaml").read_text()
    )
    assert example["metadata"]["name"] == "stream-worker-console-session"
    ((key, value),) = example["stringData"].items()
    assert value.startswith("<")  # a placeholder only
    for build, objects in rendered.items():
        key_file = one(objects, "ConfigMap", "store-settings")["data"]["STREAM_WORKER_STORE_SESSION_KEY_FILE"]
        assert key_file.rsplit("/", 1)[1] == key, build
