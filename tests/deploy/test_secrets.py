"""No credential is written anywhere under deploy/: every password/secret/token-like setting is a
reference (secretKeyRef, a Secret name) or a visible placeholder such as `<password>`."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

DEPLOY_DIR = Path(__file__).resolve().parents[2] / "deploy"
EXAMPLE_SECRET = DEPLOY_DIR / "kubernetes" / "examples" / "kafka-secret.example.yaml"
TEXT_SUFFIXES = {".yaml", ".yml", ".json", ".sh", ".md", ".properties", ".conf", ".env", ".dockerignore"}

# A key naming a credential, then `: ` or `=` (no space after `=`, as in shell and properties),
# then its value (YAML, JSON, properties, shell, JAAS).
_ASSIGNMENT = re.compile(
    r"""(?P<key>[\w.-]*(?:password|passwd|secret|token|api[_-]?key|private[_-]?key)[\w.-]*)["']?\s*(?::\s*|=)"""
    r"""(?P<value>"[^"]*"|'[^']*'|[^\s,;}]*)""",
    re.IGNORECASE,
)
# Keys that name where a secret is, not what it is.
_REFERENCE_KEY = re.compile(r"(Ref|Name|Names|_FILE|__FILE|Path|Dir)$|^(secrets?|secretName)$", re.IGNORECASE)
# <placeholder>, ${VARIABLE}, ***, empty, or a file path (kubectl --from-file=password=./password).
_PLACEHOLDER = re.compile(r"^(<[^<>]+>|\$\{?[A-Z_][A-Z0-9_]*(:-)?\}?|\*+|\.{0,2}/[\w./-]*|)$")


def deploy_files() -> list[Path]:
    return sorted(
        path
        for path in DEPLOY_DIR.rglob("*")
        if path.is_file() and (path.suffix in TEXT_SUFFIXES or path.name.endswith("Dockerfile"))
    )


def literal_credentials(text: str) -> list[str]:
    found = []
    for match in _ASSIGNMENT.finditer(text):
        key, value = match["key"], match["value"].strip("\"'")
        if _REFERENCE_KEY.search(key) or _PLACEHOLDER.match(value):
            continue
        if value in {"|", ">", "|-", ">-"}:  # a YAML block follows: its lines are scanned on their own
            continue
        if value.lower() in {"true", "false", "null"}:  # a switch (automountServiceAccountToken)
            continue
        found.append(f"{key}={value}")
    return found


@pytest.mark.parametrize("path", deploy_files(), ids=lambda path: str(path.relative_to(DEPLOY_DIR)))
def test_no_credential_in_plain_text(path: Path) -> None:
    assert literal_credentials(path.read_text()) == []


@pytest.mark.parametrize(
    "text",
    [
        'password: "hunter2"',
        '{"sasl.password": "s3cr3t"}',
        'username="svc" password="s3cr3t";',
        "KAFKA_SASL_PASSWORD=s3cr3t",
        "GF_SECURITY_ADMIN_PASSWORD: admin",
        "api_key: abc123",
    ],
)
def test_scanner_catches_literal_credentials(text: str) -> None:
    assert literal_credentials(text)


@pytest.mark.parametrize(
    "text",
    [
        "password: <password>",
        '"sasl.password": "<password>"',
        "secretKeyRef:",
        "secretName: stream-worker-kafka",
        "- parameter: password",
        "GF_SECURITY_ADMIN_PASSWORD__FILE: /run/secrets/grafana",
        "password: ${KAFKA_PASSWORD}",
        "--from-literal=password= --from-literal=ca=",
        "--from-file=password=./password",
    ],
)
def test_scanner_lets_references_and_placeholders_pass(text: str) -> None:
    assert literal_credentials(text) == []


def test_example_secret_is_only_an_example() -> None:
    """Not applied by any kustomization, and every credential in it is a placeholder."""
    kustomizations = "".join(path.read_text() for path in DEPLOY_DIR.rglob("kustomization.yaml"))
    assert "examples" not in kustomizations and EXAMPLE_SECRET.name not in kustomizations
    (secret,) = yaml.safe_load_all(EXAMPLE_SECRET.read_text())
    assert secret["kind"] == "Secret" and "data" not in secret
    values = secret["stringData"]
    assert values["username"] == "<username>" and values["password"] == "<password>"
    assert '"sasl.password": "<password>"' in values["kafka-config.json"]
    assert 'password="<password>"' in values["client.properties"]
