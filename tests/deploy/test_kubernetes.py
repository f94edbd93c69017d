"""The Kubernetes manifests: schema-valid as written and as rendered, and the invariants that keep
them safe to apply (pinned images, restricted pods, probes, GPU for Triton, workers capped at the
partition count, Kafka credentials only from a Secret)."""

from __future__ import annotations

import copy
import os
import subprocess
from pathlib import Path

import kubernetes_validate
import pytest
import yaml
from cloudcoil.models.keda.v1alpha1 import ScaledObject, TriggerAuthentication

KUSTOMIZE_DIR = Path(__file__).resolve().parents[2] / "deploy" / "kubernetes"
KUBERNETES_VERSION = "1.30"  # oldest minor the manifests promise to work on
NAMESPACE = "stream-worker"
KAFKA_SECRET = "stream-worker-kafka"
KEDA_MODELS = {"ScaledObject": ScaledObject, "TriggerAuthentication": TriggerAuthentication}
POD_OWNERS = {"Deployment", "Job", "StatefulSet", "DaemonSet"}


def validate_object(obj: dict) -> None:
    """Strict schema check: Kubernetes' own OpenAPI-derived schemas, or KEDA's CRD models."""
    if model := KEDA_MODELS.get(obj["kind"]):
        parsed = model.model_validate(obj).model_dump(by_alias=True, exclude_none=True, mode="json")
        # The models ignore unknown fields: a round trip that loses one reveals a typo.
        assert parsed == obj, f"{obj['kind']} {obj['metadata']['name']}: fields unknown to KEDA's CRD"
        return
    kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)


def raw_manifests() -> list[Path]:
    return sorted(
        path
        for path in KUSTOMIZE_DIR.rglob("*.yaml")
        if path.name != "kustomization.yaml" and "overlays" not in path.parts  # overlays hold patches
    )


def by_kind(objects: list[dict], kind: str) -> list[dict]:
    return [obj for obj in objects if obj["kind"] == kind]


def one(objects: list[dict], kind: str, name: str) -> dict:
    found = [obj for obj in objects if obj["kind"] == kind and obj["metadata"]["name"].startswith(name)]
    assert len(found) == 1, f"expected one {kind} {name}, found {len(found)}"
    return found[0]


def pod_specs(objects: list[dict]) -> list[tuple[str, dict]]:
    return [
        (f"{obj['kind']}/{obj['metadata']['name']}", obj["spec"]["template"]["spec"])
        for obj in objects
        if obj["kind"] in POD_OWNERS
    ]


def containers(pod: dict) -> list[dict]:
    return pod.get("initContainers", []) + pod["containers"]


def frames_partitions(objects: list[dict]) -> int:
    return int(one(objects, "ConfigMap", "stream-worker-topics")["data"]["FRAMES_PARTITIONS"])


@pytest.mark.parametrize("path", raw_manifests(), ids=lambda path: str(path.relative_to(KUSTOMIZE_DIR)))
def test_raw_manifest_matches_its_schema(path: Path) -> None:
    documents = [doc for doc in yaml.safe_load_all(path.read_text()) if doc]
    assert documents, f"{path} holds no object"
    for obj in documents:
        validate_object(obj)


def test_validators_reject_a_misspelt_field(rendered: dict[str, list[dict]]) -> None:
    worker = copy.deepcopy(one(rendered["gpu"], "Deployment", "stream-worker"))
    worker["spec"]["template"]["spec"]["containers"][0]["readinesProbe"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        validate_object(worker)
    scaler = copy.deepcopy(one(rendered["gpu"], "ScaledObject", "stream-worker"))
    scaler["spec"]["maxReplicas"] = 3
    with pytest.raises(AssertionError, match="unknown to KEDA"):
        validate_object(scaler)


def test_rendered_objects_match_their_schemas(rendered: dict[str, list[dict]]) -> None:
    for build, objects in rendered.items():
        for obj in objects:
            try:
                validate_object(obj)
            except Exception as error:
                pytest.fail(f"{build}: {obj['kind']}/{obj['metadata']['name']}: {error}")


def test_everything_lands_in_one_namespace(rendered: dict[str, list[dict]]) -> None:
    for build, objects in rendered.items():
        assert one(objects, "Namespace", NAMESPACE)
        strays = [
            f"{obj['kind']}/{obj['metadata']['name']}"
            for obj in objects
            if obj["kind"] != "Namespace" and obj["metadata"].get("namespace") != NAMESPACE
        ]
        assert not strays, f"{build}: outside namespace {NAMESPACE}: {strays}"


def test_images_are_pinned(rendered: dict[str, list[dict]], assert_pinned) -> None:
    for build, objects in rendered.items():
        for owner, pod in pod_specs(objects):
            for container in containers(pod):
                assert_pinned(container["image"], f"{build} {owner} {container['name']}")


def test_pods_meet_the_restricted_profile(rendered: dict[str, list[dict]]) -> None:
    namespace = one(rendered["base"], "Namespace", NAMESPACE)
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    for build, objects in rendered.items():
        for owner, pod in pod_specs(objects):
            where = f"{build} {owner}"
            assert pod["automountServiceAccountToken"] is False, where
            security = pod["securityContext"]
            assert security["runAsNonRoot"] is True, where
            assert security["runAsUser"] > 0 and security["runAsGroup"] > 0, where
            assert security["seccompProfile"]["type"] == "RuntimeDefault", where
            for container in containers(pod):
                context = container["securityContext"]
                assert context["allowPrivilegeEscalation"] is False, f"{where} {container['name']}"
                assert context["readOnlyRootFilesystem"] is True, f"{where} {container['name']}"
                assert context["capabilities"]["drop"] == ["ALL"], f"{where} {container['name']}"
                assert "add" not in context["capabilities"], f"{where} {container['name']}"


def test_containers_have_requests_and_limits(rendered: dict[str, list[dict]]) -> None:
    for build, objects in rendered.items():
        for owner, pod in pod_specs(objects):
            for container in containers(pod):
                resources = container["resources"]
                where = f"{build} {owner} {container['name']}"
                assert {"cpu", "memory"} <= resources["requests"].keys(), where
                assert {"cpu", "memory"} <= resources["limits"].keys(), where


def _probe_port(probe: dict, container: dict) -> int:
    port = probe["httpGet"]["port"]
    if isinstance(port, int):
        return port
    named = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert port in named, f"probe port {port!r} is not a port of {container['name']}"
    return named[port]


def test_triton_probes_follow_the_kserve_health_api(rendered: dict[str, list[dict]]) -> None:
    for build, objects in rendered.items():
        triton = one(objects, "Deployment", "triton")["spec"]["template"]["spec"]["containers"][0]
        assert triton["startupProbe"]["httpGet"]["path"] == "/v2/health/ready", build
        assert triton["readinessProbe"]["httpGet"]["path"] == "/v2/health/ready", build
        assert triton["livenessProbe"]["httpGet"]["path"] == "/v2/health/live", build
        for kind in ("startupProbe", "readinessProbe", "livenessProbe"):
            assert _probe_port(triton[kind], triton) == 8000, f"{build} {kind}: Triton's HTTP port"
        # Model loading plus TensorRT engine builds: minutes, not the default 30 s.
        startup = triton["startupProbe"]
        assert startup["periodSeconds"] * startup["failureThreshold"] >= 300, build


def test_worker_probes_use_its_health_endpoints(rendered: dict[str, list[dict]]) -> None:
    for build, objects in rendered.items():
        worker = one(objects, "Deployment", "stream-worker")["spec"]["template"]["spec"]["containers"][0]
        settings = one(objects, "ConfigMap", "stream-worker-settings")["data"]
        metrics_port = int(settings["STREAM_WORKER_METRICS_PORT"])
        assert worker["livenessProbe"]["httpGet"]["path"] == "/healthz", build
        assert worker["startupProbe"]["httpGet"]["path"] == "/healthz", build
        assert worker["readinessProbe"]["httpGet"]["path"] == "/readyz", build
        for kind in ("startupProbe", "readinessProbe", "livenessProbe"):
            assert _probe_port(worker[kind], worker) == metrics_port, f"{build} {kind}"


def test_only_the_gpu_overlay_puts_triton_on_a_gpu(rendered: dict[str, list[dict]]) -> None:
    base = one(rendered["base"], "Deployment", "triton")["spec"]["template"]["spec"]["containers"][0]
    assert "nvidia.com/gpu" not in base["resources"]["limits"]
    assert not any(arg.startswith("--model-config-name") for arg in base["args"])

    gpu_pod = one(rendered["gpu"], "Deployment", "triton")["spec"]["template"]["spec"]
    gpu = gpu_pod["containers"][0]
    assert int(gpu["resources"]["limits"]["nvidia.com/gpu"]) >= 1
    assert gpu["resources"]["requests"]["nvidia.com/gpu"] == gpu["resources"]["limits"]["nvidia.com/gpu"]
    assert "--model-config-name=gpu" in gpu["args"]
    assert "--model-repository=/models" in gpu["args"]
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in gpu_pod["tolerations"]


def test_triton_has_writable_shared_memory_and_tmp(rendered: dict[str, list[dict]]) -> None:
    """Read-only root: the Python backend needs /dev/shm, TensorRT's engine cache /tmp."""
    pod = one(rendered["gpu"], "Deployment", "triton")["spec"]["template"]["spec"]
    mounts = {m["mountPath"]: m["name"] for m in pod["containers"][0]["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes[mounts["/dev/shm"]]["emptyDir"]["medium"] == "Memory"
    assert "emptyDir" in volumes[mounts["/tmp"]]


def test_workers_never_outnumber_partitions(rendered: dict[str, list[dict]]) -> None:
    for build, objects in rendered.items():
        partitions = frames_partitions(objects)
        worker = one(objects, "Deployment", "stream-worker")
        scalers = [
            s
            for s in by_kind(objects, "ScaledObject")
            if s["spec"]["scaleTargetRef"]["name"] == "stream-worker"
        ]
        if scalers:
            (scaler,) = scalers
            spec = scaler["spec"]
            assert spec["scaleTargetRef"]["name"] == worker["metadata"]["name"], build
            assert 1 <= spec["minReplicaCount"] <= spec["maxReplicaCount"] <= partitions, build
            assert spec["triggers"][0]["metadata"]["allowIdleConsumers"] == "false", build
            # The HPA owns the count; a fixed one would be reset by every apply.
            assert "replicas" not in worker["spec"], build
        else:
            assert 1 <= worker["spec"]["replicas"] <= partitions, build
        # No surge during rollouts: the group never exceeds its replica count.
        assert worker["spec"]["strategy"]["rollingUpdate"]["maxSurge"] == 0, build


def test_keda_scales_on_the_workers_own_group_and_topic(rendered: dict[str, list[dict]]) -> None:
    objects = rendered["gpu"]
    settings = one(objects, "ConfigMap", "stream-worker-settings")["data"]
    (trigger,) = one(objects, "ScaledObject", "stream-worker")["spec"]["triggers"]
    assert trigger["type"] == "kafka"
    assert trigger["metadata"]["bootstrapServers"] == settings["STREAM_WORKER_BOOTSTRAP_SERVERS"]
    assert trigger["metadata"]["consumerGroup"] == settings["STREAM_WORKER_GROUP_ID"]
    assert trigger["metadata"]["topic"] == settings["STREAM_WORKER_INPUT_TOPIC"]
    auth = one(objects, "TriggerAuthentication", trigger["authenticationRef"]["name"])
    refs = auth["spec"]["secretTargetRef"]
    assert {ref["name"] for ref in refs} == {KAFKA_SECRET}
    assert {ref["parameter"] for ref in refs} >= {"sasl", "username", "password", "tls"}


def test_pdb_selects_the_workers(rendered: dict[str, list[dict]]) -> None:
    for build, objects in rendered.items():
        pdb = one(objects, "PodDisruptionBudget", "stream-worker")
        labels = one(objects, "Deployment", "stream-worker")["spec"]["template"]["metadata"]["labels"]
        assert pdb["spec"]["selector"]["matchLabels"].items() <= labels.items(), build
        assert pdb["spec"]["maxUnavailable"] == 1, build


def test_kafka_credentials_come_only_from_the_secret(rendered: dict[str, list[dict]]) -> None:
    for build, objects in rendered.items():
        assert not by_kind(objects, "Secret"), f"{build}: the Secret must be created outside the repo"
        for config_map in by_kind(objects, "ConfigMap"):
            for key in config_map.get("data", {}):
                assert "KAFKA_CONFIG" not in key and "PASSWORD" not in key.upper(), f"{build}: {key}"
        worker = one(objects, "Deployment", "stream-worker")["spec"]["template"]["spec"]["containers"][0]
        env = {item["name"]: item for item in worker["env"]}
        ref = env["STREAM_WORKER_KAFKA_CONFIG"]["valueFrom"]["secretKeyRef"]
        assert ref["name"] == KAFKA_SECRET, build


def test_settings_are_valid_worker_settings(rendered: dict[str, list[dict]], monkeypatch) -> None:
    """Every key of the ConfigMap is a real worker setting with a value the worker accepts."""
    from stream_worker.worker.settings import ENV_PREFIX, WorkerSettings, load_settings

    for build, objects in rendered.items():
        data = one(objects, "ConfigMap", "stream-worker-settings")["data"]
        for key, value in data.items():
            assert key.startswith(ENV_PREFIX), f"{build}: {key}"
            assert key.removeprefix(ENV_PREFIX).lower() in WorkerSettings.model_fields, f"{build}: {key}"
            monkeypatch.setenv(key, value)
        settings = load_settings()
        assert settings.triton_url.endswith(":8001"), "the workers speak gRPC to Triton's port 8001"


def test_references_resolve(rendered: dict[str, list[dict]]) -> None:
    """ConfigMaps, keys, ports and selectors named by the pods and Services exist in the build."""
    for build, objects in rendered.items():
        config_maps = {cm["metadata"]["name"]: cm.get("data", {}) for cm in by_kind(objects, "ConfigMap")}
        for owner, pod in pod_specs(objects):
            for volume in pod.get("volumes", []):
                if "configMap" in volume:
                    assert volume["configMap"]["name"] in config_maps, f"{build} {owner} {volume['name']}"
            for container in containers(pod):
                for source in container.get("envFrom", []):
                    if "configMapRef" in source:
                        assert source["configMapRef"]["name"] in config_maps, f"{build} {owner}"
                for item in container.get("env", []):
                    ref = item.get("valueFrom", {}).get("configMapKeyRef")
                    where = f"{build} {owner} {item['name']}"
                    assert not ref or ref["key"] in config_maps.get(ref["name"], {}), where
        templates = [
            obj["spec"]["template"] for obj in objects if obj["kind"] in ("Deployment", "StatefulSet")
        ]
        for service in by_kind(objects, "Service"):
            selector = service["spec"]["selector"].items()
            matches = [t for t in templates if selector <= t["metadata"]["labels"].items()]
            assert matches, f"{build}: Service {service['metadata']['name']} selects no pod"
            port_names = {p["name"] for t in matches for c in t["spec"]["containers"] for p in c["ports"]}
            for port in service["spec"]["ports"]:
                assert port["targetPort"] in port_names, f"{build}: {service['metadata']['name']} {port}"


def test_scrape_annotations_point_at_metrics_ports(rendered: dict[str, list[dict]]) -> None:
    for build, objects in rendered.items():
        for name, port in (("triton", 8002), ("stream-worker", 9108), ("sightings", 9109), ("alerts", 9110)):
            template = one(objects, "Deployment", name)["spec"]["template"]
            annotations = template["metadata"]["annotations"]
            assert annotations["prometheus.io/scrape"] == "true", f"{build} {name}"
            assert int(annotations["prometheus.io/port"]) == port, f"{build} {name}"
            ports = {p["containerPort"] for c in template["spec"]["containers"] for p in c["ports"]}
            assert port in ports, f"{build} {name}"


def test_topic_job_runs_the_checked_in_script(rendered: dict[str, list[dict]]) -> None:
    script = (KUSTOMIZE_DIR / "base" / "create-topics.sh").read_text()
    for build, objects in rendered.items():
        job = one(objects, "Job", "stream-worker-topics")["spec"]["template"]["spec"]
        volume = next(v for v in job["volumes"] if "configMap" in v)
        config_map = one(objects, "ConfigMap", volume["configMap"]["name"])
        assert config_map["data"]["create-topics.sh"] == script, build
        assert job["containers"][0]["command"] == ["/bin/sh", "/opt/stream-worker/create-topics.sh"], build


def test_tensorrt_caches_land_on_a_writable_volume(rendered: dict[str, list[dict]]) -> None:
    """The root filesystem is read-only: each gpu config's engine cache must sit on an emptyDir."""
    from google.protobuf import text_format
    from tritonclient.grpc import model_config_pb2

    pod = one(rendered["gpu"], "Deployment", "triton")["spec"]["template"]["spec"]
    empty_dirs = {volume["name"] for volume in pod["volumes"] if "emptyDir" in volume}
    writable = [m["mountPath"] for m in pod["containers"][0]["volumeMounts"] if m["name"] in empty_dirs]
    cache_paths = []
    for config_file in sorted((KUSTOMIZE_DIR.parents[1] / "model_repository").glob("*/configs/gpu.pbtxt")):
        config = text_format.Parse(config_file.read_text(), model_config_pb2.ModelConfig())
        for accelerator in config.optimization.execution_accelerators.gpu_execution_accelerator:
            if path := accelerator.parameters.get("trt_engine_cache_path"):
                cache_paths.append(path)
                assert any(path.startswith(mount + "/") for mount in writable), f"{config_file}: {path}"
    assert cache_paths, "no gpu config caches TensorRT engines"


def test_largest_accepted_frame_fits_the_topics(rendered: dict[str, list[dict]], monkeypatch) -> None:
    """A frame the worker accepts must also fit the DLQ topic (whole frame plus headers)."""
    from stream_worker.worker.settings import load_settings

    for build, objects in rendered.items():
        for key, value in one(objects, "ConfigMap", "stream-worker-settings")["data"].items():
            monkeypatch.setenv(key, value)
        largest_record = load_settings().max_frame_bytes + 64 * 1024
        topics = one(objects, "ConfigMap", "stream-worker-topics")["data"]
        assert largest_record <= int(topics["MAX_MESSAGE_BYTES"]), build


# --- who may reach what: NetworkPolicies, evaluated as the API server would ------------------

ANYONE = {"anyone": True}  # a rule without `from`: every source
Client = tuple[dict[str, str], dict[str, str]]  # (its namespace's labels, its pod's labels)


def selects(selector: dict, labels: dict[str, str]) -> bool:
    """Kubernetes label-selector semantics: matchLabels and matchExpressions, all must hold."""
    if any(labels.get(key) != value for key, value in selector.get("matchLabels", {}).items()):
        return False
    for expression in selector.get("matchExpressions", []):
        key, values = expression["key"], expression.get("values", [])
        holds = {
            "In": key in labels and labels[key] in values,
            "NotIn": key not in labels or labels[key] not in values,
            "Exists": key in labels,
            "DoesNotExist": key not in labels,
        }[expression["operator"]]
        if not holds:
            return False
    return True


def pod_templates(objects: list[dict]) -> dict[str, dict]:
    return {obj["metadata"]["name"]: obj["spec"]["template"] for obj in objects if obj["kind"] in POD_OWNERS}


def ingress_policies(objects: list[dict], template: dict) -> list[dict]:
    """Specs of the policies that isolate `template`'s pods for ingress."""
    labels = template["metadata"]["labels"]
    return [
        policy["spec"]
        for policy in by_kind(objects, "NetworkPolicy")
        if selects(policy["spec"]["podSelector"], labels) and "Ingress" in policy["spec"]["policyTypes"]
    ]


def _admits(peer: dict, client: Client) -> bool:
    namespace_labels, pod_labels = client
    if peer is ANYONE or "ipBlock" in peer:
        return True
    if "namespaceSelector" in peer:
        namespace_ok = selects(peer["namespaceSelector"], namespace_labels)
    else:  # the policy's own namespace
        namespace_ok = namespace_labels.get("kubernetes.io/metadata.name") == NAMESPACE
    return namespace_ok and selects(peer.get("podSelector", {}), pod_labels)


def reachable(objects: list[dict], template: dict, port: int, client: Client) -> bool:
    """May `client` connect to `port` of `template`'s pods?"""
    policies = ingress_policies(objects, template)
    if not policies:
        return True  # not isolated
    named = {
        p["name"]: p["containerPort"] for c in template["spec"]["containers"] for p in c.get("ports", [])
    }
    for spec in policies:
        for rule in spec.get("ingress", []):
            ports = [named.get(p.get("port"), p.get("port", port)) for p in rule.get("ports", [{}])]
            if port in ports and any(_admits(peer, client) for peer in rule.get("from", [ANYONE])):
                return True
    return False


def _clients(objects: list[dict]) -> dict[str, Client]:
    """Would-be callers: our pods, a stranger in our namespace, look-alikes elsewhere, Prometheus."""
    namespace = one(objects, "Namespace", NAMESPACE)["metadata"]["labels"]
    ours = {**namespace, "kubernetes.io/metadata.name": NAMESPACE}
    other = {"kubernetes.io/metadata.name": "default"}
    monitoring = {"kubernetes.io/metadata.name": "monitoring"}
    labels = {name: template["metadata"]["labels"] for name, template in pod_templates(objects).items()}
    return {
        "worker": (ours, labels["stream-worker"]),
        "triton": (ours, labels["triton"]),
        "topics job": (ours, labels["stream-worker-topics"]),
        "stranger": (ours, {"app.kubernetes.io/name": "debug-shell"}),
        "worker look-alike elsewhere": (other, labels["stream-worker"]),
        "prometheus": (monitoring, {"app.kubernetes.io/name": "prometheus"}),
        "other pod in monitoring": (monitoring, {"app.kubernetes.io/name": "grafana"}),
        "prometheus look-alike elsewhere": (other, {"app.kubernetes.io/name": "prometheus"}),
    }


def test_only_workers_reach_triton_only_prometheus_the_metrics(rendered: dict[str, list[dict]]) -> None:
    plain = {  # (pod, port) -> the only callers let in
        ("triton", 8000): {"worker"},
        ("triton", 8001): {"worker"},
        ("triton", 8002): {"prometheus"},
        ("stream-worker", 9108): {"prometheus"},
        ("stream-worker-topics", 8080): set(),  # no listener; still, nobody gets in
    }
    for build, objects in rendered.items():
        allowed = dict(plain)
        clients = _clients(objects)
        templates = pod_templates(objects)
        if "--grpc-use-ssl=true" in templates["triton"]["spec"]["containers"][0]["args"]:
            # With TLS on gRPC, the plain-text HTTP port is left to the kubelet's probes alone.
            allowed[("triton", 8000)] = set()
        for (pod, port), expected in allowed.items():
            admitted = {
                name for name, client in clients.items() if reachable(objects, templates[pod], port, client)
            }
            assert admitted == expected, f"{build}: {pod}:{port} admits {sorted(admitted)}"


def test_every_pod_is_isolated_for_ingress(rendered: dict[str, list[dict]]) -> None:
    for build, objects in rendered.items():
        for name, template in pod_templates(objects).items():
            assert ingress_policies(objects, template), f"{build}: {name} accepts any ingress"


def test_a_misspelt_selector_is_caught(rendered: dict[str, list[dict]]) -> None:
    objects = copy.deepcopy(rendered["base"])
    peer = one(objects, "NetworkPolicy", "triton-inference-from-workers")["spec"]["ingress"][0]["from"][0]
    peer["podSelector"]["matchLabels"]["app.kubernetes.io/name"] = "stream-workers"
    triton = pod_templates(objects)["triton"]
    assert not reachable(objects, triton, 8001, _clients(objects)["worker"])


def _documented_overlay() -> dict:
    """The overlay deploy/README.md gives for pointing the metrics policy at your Prometheus."""
    readme = (KUSTOMIZE_DIR.parent / "README.md").read_text()
    section = readme.split("### Who may reach what", 1)[1]
    return yaml.safe_load(section.split("```yaml\n", 1)[1].split("```", 1)[0])


def test_the_documented_overlay_points_metrics_at_another_prometheus(kubectl: str, tmp_path: Path) -> None:
    overlay = _documented_overlay()
    # As written, the overlay sits in a folder beside deploy/; kustomize wants relative paths.
    beside_deploy = KUSTOMIZE_DIR.parents[1] / "my-overlay"
    overlay["resources"] = [os.path.relpath(beside_deploy / r, tmp_path) for r in overlay["resources"]]
    (tmp_path / "kustomization.yaml").write_text(yaml.safe_dump(overlay))
    result = subprocess.run(
        [kubectl, "kustomize", str(tmp_path)], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    objects = [doc for doc in yaml.safe_load_all(result.stdout) if doc]
    templates = pod_templates(objects)
    theirs = ({"kubernetes.io/metadata.name": "observability"}, {"app": "prometheus"})
    for pod, port in (("triton", 8002), ("stream-worker", 9108)):
        assert reachable(objects, templates[pod], port, theirs), pod
        assert not reachable(objects, templates[pod], port, _clients(objects)["prometheus"]), pod


def test_triton_model_control_stays_off(rendered: dict[str, list[dict]]) -> None:
    """Mode `none` (the default): no client can load, unload or replace a model through the API."""
    for build, objects in rendered.items():
        args = pod_templates(objects)["triton"]["spec"]["containers"][0]["args"]
        control = [arg for arg in args if arg.startswith(("--model-control-mode", "--load-model"))]
        assert control in ([], ["--model-control-mode=none"]), f"{build}: {control}"
