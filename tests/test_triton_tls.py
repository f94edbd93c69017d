"""The worker's TLS to Triton: settings that name the flag at fault, and the real local Triton served
over TLS (and mutual TLS) with certificates made here, reached by the client and by `stream-worker
run`, while a plain-text client, a foreign CA or a missing client certificate fail loudly.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from certificates import Authority, make_authority
from confluent_kafka import Consumer, Producer
from support import EXPECTED_PLATE, edit_distance
from tls_component import triton_args, worker_environment
from typer.testing import CliRunner

from stream_worker.cli import app
from stream_worker.launchers.broker import create_topics
from stream_worker.launchers.triton import LocalTriton
from stream_worker.service.settings import ConfigError
from stream_worker.triton_client import (
    PlateRecognitionClient,
    TritonTLS,
    TritonUnavailableError,
    tls_from_files,
)
from stream_worker.worker.settings import load_settings

WAIT_S = 300.0  # the CPU Triton on shared cores is slow to answer the first request


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for name in list(os.environ):
        if name.startswith("STREAM_WORKER_"):
            monkeypatch.delenv(name)


@pytest.fixture(scope="module")
def authority(tmp_path_factory: pytest.TempPathFactory) -> Authority:
    return make_authority(tmp_path_factory.mktemp("pki"))


# --- settings and the client's TLS parameters (no server) ------------------------------------


def test_tls_files_are_flags_and_env_variables(authority: Authority, monkeypatch: pytest.MonkeyPatch) -> None:
    assert load_settings([]).triton_tls_ca_file is None
    monkeypatch.setenv("STREAM_WORKER_TRITON_TLS_CA_FILE", str(authority.ca))
    settings = load_settings(
        [
            "--triton-tls-cert-file",
            str(authority.client.cert),
            "--triton-tls-key-file",
            str(authority.client.key),
        ]
    )
    tls = tls_from_files(
        settings.triton_tls_ca_file, settings.triton_tls_cert_file, settings.triton_tls_key_file
    )
    assert tls == TritonTLS(authority.ca, authority.client.cert, authority.client.key)


@pytest.mark.parametrize("name", ["ca", "cert", "key"])
def test_a_missing_tls_file_names_its_flag(name: str, authority: Authority, tmp_path: Path) -> None:
    files = {"ca": authority.ca, "cert": authority.client.cert, "key": authority.client.key}
    files[name] = tmp_path / "absent.pem"
    args = [part for key, path in files.items() for part in (f"--triton-tls-{key}-file", str(path))]
    with pytest.raises(
        ConfigError, match=rf"--triton-tls-{name}-file / STREAM_WORKER_TRITON_TLS_{name.upper()}_FILE"
    ):
        load_settings(args)


@pytest.mark.parametrize("given", ["cert", "key"])
def test_client_certificate_and_key_come_together(given: str, authority: Authority) -> None:
    path = authority.client.cert if given == "cert" else authority.client.key
    with pytest.raises(ConfigError, match="--triton-tls-cert-file and --triton-tls-key-file come together"):
        load_settings([f"--triton-tls-{given}-file", str(path)])
    with pytest.raises(ValueError, match="give both or neither"):
        tls_from_files(None, *((path, None) if given == "cert" else (None, path)))


def test_no_tls_file_means_plain_text() -> None:
    assert tls_from_files(None, None, None) is None


def test_eval_refuses_tls_for_the_local_plain_text_triton(authority: Authority, tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["eval", str(tmp_path), "--tls-ca-file", str(authority.ca)])
    assert result.exit_code == 2
    assert "needs --url" in result.output


# --- the real Triton over TLS ----------------------------------------------------------------


def _serve(repository: Path, authority: Authority, mutual: bool) -> LocalTriton:
    if mutual:  # exactly as the shipped Kubernetes component starts it
        args = triton_args(
            {"tls.crt": authority.server.cert, "tls.key": authority.server.key, "ca.crt": authority.ca}
        )
    else:
        args = [
            "--grpc-use-ssl=true",
            f"--grpc-server-cert={authority.server.cert}",
            f"--grpc-server-key={authority.server.key}",
        ]
    return LocalTriton(repository, extra_args=args)


@pytest.fixture(scope="module")
def tls_triton(prepared_model_repository: Path, authority: Authority) -> Iterator[LocalTriton]:
    with _serve(prepared_model_repository, authority, mutual=False) as server:
        yield server


@pytest.fixture(scope="module")
def mutual_triton(prepared_model_repository: Path, authority: Authority) -> Iterator[LocalTriton]:
    with _serve(prepared_model_repository, authority, mutual=True) as server:
        yield server


def _read_plate(url: str, tls: TritonTLS | None, car_jpeg: bytes) -> str:
    with PlateRecognitionClient(url, timeout_s=WAIT_S, tls=tls) as client:
        [result] = client.recognize([car_jpeg])
    assert result.status == "ok" and result.plates, result
    return result.plates[0].text


@pytest.mark.integration
def test_client_reaches_triton_over_tls_by_address_and_name(
    tls_triton: LocalTriton, authority: Authority, car_jpeg: bytes
) -> None:
    tls = TritonTLS(ca_file=authority.ca)
    for url in (tls_triton.grpc_url, f"localhost:{tls_triton.grpc_port}"):
        assert edit_distance(_read_plate(url, tls, car_jpeg), EXPECTED_PLATE) <= 1, url


@pytest.mark.integration
def test_plain_text_client_of_a_tls_triton_fails_and_says_plain_text(
    tls_triton: LocalTriton, car_jpeg: bytes
) -> None:
    with PlateRecognitionClient(tls_triton.grpc_url, timeout_s=30) as client:
        assert not client.is_ready()
        with pytest.raises(TritonUnavailableError, match=r"\(plain text\) is unavailable"):
            client.recognize([car_jpeg])


@pytest.mark.integration
def test_a_server_certificate_from_another_ca_is_refused(
    tls_triton: LocalTriton, tmp_path: Path, car_jpeg: bytes
) -> None:
    stranger = make_authority(tmp_path / "other", ca_name="another CA")
    with pytest.raises(TritonUnavailableError, match=r"\(TLS\) is unavailable"):
        _read_plate(tls_triton.grpc_url, TritonTLS(ca_file=stranger.ca), car_jpeg)


@pytest.mark.integration
def test_mutual_tls_answers_only_clients_with_a_certificate(
    mutual_triton: LocalTriton, authority: Authority, car_jpeg: bytes
) -> None:
    with pytest.raises(TritonUnavailableError):
        _read_plate(mutual_triton.grpc_url, TritonTLS(ca_file=authority.ca), car_jpeg)
    tls = TritonTLS(authority.ca, authority.client.cert, authority.client.key)
    assert edit_distance(_read_plate(mutual_triton.grpc_url, tls, car_jpeg), EXPECTED_PLATE) <= 1


@pytest.mark.integration
def test_stream_worker_run_reads_plates_through_mutual_tls(
    mutual_triton: LocalTriton,
    authority: Authority,
    kafka_bootstrap: str,
    unique_name: str,
    car_jpeg: bytes,
    tmp_path: Path,
) -> None:
    frames, plates, dlq = (f"{unique_name}-{suffix}" for suffix in ("frames", "plates", "dlq"))
    create_topics(kafka_bootstrap, [frames, plates, dlq], 1)
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    producer.produce(frames, value=car_jpeg, key=b"gate-1", headers=[("camera_id", b"gate-1")])
    assert producer.flush(60) == 0

    options = {
        "bootstrap-servers": kafka_bootstrap,
        "triton-url": mutual_triton.grpc_url,
        "group-id": f"{unique_name}-group",
        "input-topic": frames,
        "output-topic": plates,
        "dlq-topic": dlq,
        "metrics-port": "0",
        "triton-timeout-s": str(WAIT_S),
    }
    # The TLS settings as the shipped Kubernetes component gives them: environment variables.
    client_files = {"ca.crt": authority.ca, "tls.crt": authority.client.cert, "tls.key": authority.client.key}
    environment = {**os.environ, **worker_environment(client_files)}
    log_path = tmp_path / "worker.log"
    with log_path.open("wb") as log:
        worker = subprocess.Popen(
            [sys.executable, "-m", "stream_worker", "run"]
            + [part for name, value in options.items() for part in (f"--{name}", value)],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=environment,
        )
    reader = Consumer(
        {
            "bootstrap.servers": kafka_bootstrap,
            "group.id": f"{unique_name}-reader",
            "auto.offset.reset": "earliest",
        }
    )
    reader.subscribe([plates])
    try:
        deadline = time.monotonic() + WAIT_S
        event = None
        while event is None:
            assert worker.poll() is None, f"worker exited:\n{log_path.read_text(errors='replace')[-4000:]}"
            assert time.monotonic() < deadline, f"no event:\n{log_path.read_text(errors='replace')[-4000:]}"
            message = reader.poll(0.5)
            if message is not None and message.error() is None:
                event = orjson.loads(message.value())
        assert edit_distance(event["plates"][0]["text"], EXPECTED_PLATE) <= 1
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(timeout=120) == 0
    finally:
        reader.close()
        if worker.poll() is None:
            worker.kill()
            worker.wait()


@pytest.mark.integration
def test_recognize_command_reads_through_mutual_tls(
    mutual_triton: LocalTriton, authority: Authority, car_jpeg: bytes, tmp_path: Path
) -> None:
    car = tmp_path / "car.jpg"
    car.write_bytes(car_jpeg)
    args = ["recognize", str(car), "--url", mutual_triton.grpc_url, "--timeout", str(WAIT_S)]
    tls = ["--tls-ca-file", str(authority.ca), "--tls-cert-file", str(authority.client.cert)]
    result = CliRunner().invoke(app, [*args, *tls, "--tls-key-file", str(authority.client.key)])
    assert result.exit_code == 0, result.output
    assert edit_distance(orjson.loads(result.stdout)["plates"][0]["text"], EXPECTED_PLATE) <= 1
    plain = CliRunner().invoke(app, args)
    assert plain.exit_code == 3 and "(plain text) is unavailable" in plain.output, plain.output
