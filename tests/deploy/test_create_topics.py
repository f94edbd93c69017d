"""create-topics.sh (Compose's topic-init and the Kubernetes Job) under POSIX sh.

The Kafka CLI tools are Java and not installed here, so stand-ins record each call and answer
`--describe` like kafka-topics.sh does; what is checked is the script's own logic: create if
missing, raise partitions only upwards, always (re)apply retention, pass SASL/TLS settings.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest
import yaml

from stream_worker.contracts.topics import TOPICS, Topic

SCRIPT = Path(__file__).resolve().parents[2] / "deploy" / "kubernetes" / "base" / "create-topics.sh"

# Answers `--describe --topic NAME` with the partition count in $STUB_PARTITIONS_<NAME> (. and - -> _).
STUB_TOPICS = """#!/bin/sh
echo "kafka-topics.sh $*" >> "$STUB_LOG"
case " $* " in
  *" --describe "*)
    topic=$(echo " $* " | sed -n 's/.* --topic \\([^ ]*\\) .*/\\1/p')
    var=STUB_PARTITIONS_$(echo "$topic" | tr '.-' '__')
    count=$(eval echo "\\${$var:-}")
    [ -n "$count" ] && printf 'Topic: %s\\tTopicId: x\\tPartitionCount: %s\\tReplicationFactor: 1\\n' \\
      "$topic" "$count"
    ;;
esac
exit 0
"""
STUB_CONFIGS = """#!/bin/sh
echo "kafka-configs.sh $*" >> "$STUB_LOG"
"""


def run_script(
    tmp_path: Path, partitions: dict[str, int], fill: bool = True, **env: str
) -> tuple[int, list[list[str]], str]:
    """Run the script against stand-in Kafka tools that report `partitions` per topic (with `fill`,
    every declared topic not named there reports its declared count)."""
    if fill:
        partitions = {**{topic.name: topic.partitions for topic in TOPICS}, **partitions}
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name, body in (("kafka-topics.sh", STUB_TOPICS), ("kafka-configs.sh", STUB_CONFIGS)):
        (bin_dir / name).write_text(body)
        (bin_dir / name).chmod(0o755)
    log = tmp_path / "calls.log"
    log.write_text("")
    environment = {
        "PATH": os.environ["PATH"],
        "KAFKA_BIN": str(bin_dir),
        "STUB_LOG": str(log),
        "BOOTSTRAP_SERVERS": "kafka:9092",
        **{
            f"STUB_PARTITIONS_{topic.replace('.', '_').replace('-', '_')}": str(n)
            for topic, n in partitions.items()
        },
        **env,
    }
    result = subprocess.run(
        ["/bin/sh", str(SCRIPT)], env=environment, capture_output=True, text=True, timeout=60, check=False
    )
    calls = [shlex.split(line) for line in log.read_text().splitlines()]
    return result.returncode, calls, result.stdout + result.stderr


def calls_with(calls: list[list[str]], *words: str) -> list[list[str]]:
    return [call for call in calls if all(word in call for word in words)]


def option(call: list[str], name: str) -> str:
    return call[call.index(name) + 1]


def test_creates_each_topic_with_its_partitions_and_retention(tmp_path: Path) -> None:
    code, calls, output = run_script(
        tmp_path,
        {
            "frames": 12,
            "plates": 12,
            "frames.dlq": 1,
            "sightings": 6,
            "alerts": 6,
            "visits": 6,
            "store.dlq": 1,
            "watchlist": 1,
            "cameras": 6,
            "camera-status": 3,
            "notify-targets": 1,
            "notify.dlq": 1,
            "notify.deliveries": 1,
            "notify.replays": 1,
            "notify-tests": 1,
            "notify-status": 1,
            "corrections": 1,
        },
        FRAMES_PARTITIONS="12",
        PLATES_PARTITIONS="12",
        FRAMES_RETENTION_MS="60000",
        REPLICATION_FACTOR="3",
    )
    assert code == 0, output
    creates = {option(call, "--topic"): call for call in calls_with(calls, "--create", "--if-not-exists")}
    assert set(creates) == {
        "frames",
        "plates",
        "frames.dlq",
        "sightings",
        "alerts",
        "visits",
        "store.dlq",
        "watchlist",
        "cameras",
        "camera-status",
        "notify-targets",
        "notify.dlq",
        "notify.deliveries",
        "notify.replays",
        "notify-tests",
        "notify-status",
        "corrections",
    }
    assert option(creates["frames"], "--partitions") == "12"
    assert option(creates["frames.dlq"], "--partitions") == "1"
    assert option(creates["store.dlq"], "--partitions") == "1"
    assert all(option(call, "--replication-factor") == "3" for call in creates.values())
    assert all(option(call, "--bootstrap-server") == "kafka:9092" for call in calls)
    alters = calls_with(calls, "--alter", "--entity-name")
    configs = {option(call, "--entity-name"): option(call, "--add-config") for call in alters}
    assert configs["frames"] == (
        "cleanup.policy=delete,retention.ms=60000,retention.bytes=1073741824,max.message.bytes=10485760"
    )
    assert configs["plates"].startswith("cleanup.policy=delete,retention.ms=604800000,")
    assert configs["notify-targets"].startswith("cleanup.policy=compact,")
    assert configs["camera-status"].startswith("cleanup.policy=[compact,delete],retention.ms=3600000,")
    assert option(creates["camera-status"], "--config") == "cleanup.policy=compact,delete"
    assert configs["notify.dlq"].startswith("cleanup.policy=delete,retention.ms=1209600000,")
    assert not calls_with(calls, "--partitions", "--alter"), "nothing to raise"


def test_raises_partitions_but_never_lowers_them(tmp_path: Path) -> None:
    code, calls, output = run_script(
        tmp_path,
        {
            "frames": 3,
            "plates": 9,
            "frames.dlq": 1,
            "sightings": 6,
            "alerts": 6,
            "visits": 6,
            "store.dlq": 1,
            "watchlist": 1,
            "cameras": 6,
            "camera-status": 3,
            "notify-targets": 1,
            "notify.dlq": 1,
            "notify.deliveries": 1,
            "notify.replays": 1,
            "notify-tests": 1,
            "notify-status": 1,
            "corrections": 1,
        },
        FRAMES_PARTITIONS="6",
        PLATES_PARTITIONS="6",
    )
    assert code == 0, output
    (raise_call,) = [call for call in calls_with(calls, "--alter", "--partitions") if "--create" not in call]
    assert option(raise_call, "--topic") == "frames" and option(raise_call, "--partitions") == "6"
    assert "plates has 9 partitions, more than the configured 6" in output


def test_passes_the_client_properties_when_present(tmp_path: Path) -> None:
    properties = tmp_path / "client.properties"
    properties.write_text("security.protocol=SASL_SSL\n")
    partitions = {
        "frames": 6,
        "plates": 6,
        "frames.dlq": 1,
        "sightings": 6,
        "alerts": 6,
        "visits": 6,
        "store.dlq": 1,
        "watchlist": 1,
        "cameras": 6,
        "camera-status": 3,
        "notify-targets": 1,
        "notify.dlq": 1,
        "notify.deliveries": 1,
        "notify.replays": 1,
        "notify-tests": 1,
        "notify-status": 1,
        "corrections": 1,
    }
    code, calls, output = run_script(tmp_path, partitions, COMMAND_CONFIG=str(properties))
    assert code == 0, output
    assert calls and all(option(call, "--command-config") == str(properties) for call in calls)

    code, calls, output = run_script(tmp_path, partitions, COMMAND_CONFIG=str(tmp_path / "absent"))
    assert code == 0, output
    assert not any("--command-config" in call for call in calls), "PLAINTEXT when the Secret has none"


def test_fails_when_the_partition_count_cannot_be_read(tmp_path: Path) -> None:
    code, _, output = run_script(tmp_path, {}, fill=False)
    assert code != 0
    assert "could not read the partition count of topic frames" in output


def test_requires_the_bootstrap_servers(tmp_path: Path) -> None:
    code, calls, output = run_script(tmp_path, {"frames": 6}, BOOTSTRAP_SERVERS="")
    assert code != 0 and not calls
    assert "set BOOTSTRAP_SERVERS" in output


def _applied(tmp_path: Path) -> tuple[dict[str, str], dict[str, dict[str, str]]]:
    """(partitions, configs) per topic when the script runs with its defaults on a fresh cluster."""
    code, calls, output = run_script(tmp_path, {topic.name: topic.partitions for topic in TOPICS})
    assert code == 0, output
    creates = {
        option(call, "--topic"): option(call, "--partitions") for call in calls_with(calls, "--create")
    }
    configs = {
        option(call, "--entity-name"): {
            key: value.strip("[]")  # a list value is written [a,b] for kafka-configs.sh
            for key, value in re.findall(r"([^=,]+)=(\[[^\]]*\]|[^,]*)", option(call, "--add-config"))
        }
        for call in calls_with(calls, "--alter", "--entity-name")
    }
    return creates, configs


@pytest.mark.parametrize("topic", TOPICS, ids=lambda topic: topic.name)
def test_kafka_gets_the_declared_topology(tmp_path: Path, topic: Topic) -> None:
    """Partitions, retention and compaction as contracts/topics.py says (the local `up` applies the same)."""
    partitions, configs = _applied(tmp_path)
    assert partitions[topic.name] == str(topic.partitions)
    config = {key: value for key, value in configs[topic.name].items() if key != "max.message.bytes"}
    assert config == topic.config()


# The variables that compose.yaml and the Kubernetes ConfigMap pass to the script, by their topic.
SETTINGS = {
    "FRAMES": "frames",
    "PLATES": "plates",
    "DLQ": "frames.dlq",
    "SIGHTINGS": "sightings",
    "ALERTS": "alerts",
    "STORE_DLQ": "store.dlq",
    "CAMERAS": "cameras",
    "CAMERA_STATUS": "camera-status",
}
DEPLOY = SCRIPT.parents[2]


def _declared_value(variable: str) -> str | None:
    for prefix, name in sorted(SETTINGS.items(), key=lambda item: -len(item[0])):
        declared = next(topic for topic in TOPICS if topic.name == name)
        for suffix, value in (
            ("_PARTITIONS", declared.partitions),
            ("_RETENTION_MS", declared.retention_ms),
            ("_RETENTION_BYTES", declared.retention_bytes),
        ):
            if variable == prefix + suffix:
                return str(value)
    return None


def test_compose_and_kubernetes_defaults_are_the_declared_topology() -> None:
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    compose_env = {
        name: str(value).rsplit(":-", 1)[-1].rstrip("}")
        for name, value in compose["services"]["topic-init"]["environment"].items()
    }
    configmap = yaml.safe_load((DEPLOY / "kubernetes" / "base" / "topics.yaml").read_text())["data"]
    checked = 0
    for settings in (compose_env, configmap):
        for variable, value in settings.items():
            if (expected := _declared_value(variable)) is not None:
                assert value == expected, variable
                checked += 1
    assert checked == 2 * 20
