"""Reading a camera-settings file: JSON or YAML, chosen by the file's extension (`.json`,
`.yaml`/`.yml`), else JSON tried first, then YAML. Every problem comes back as one
CameraSettingsError naming the file and where in it, so `cameras set` can refuse it whole."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import yaml

from stream_worker.contracts.cameras import CameraSettings, CameraSettingsError, parse_settings

JSON_SUFFIXES = (".json",)
YAML_SUFFIXES = (".yaml", ".yml")


def load_settings_file(path: Path) -> CameraSettings:
    """The settings in `path`; CameraSettingsError when unreadable, not JSON/YAML, or invalid."""
    source = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise CameraSettingsError([f"cannot read it: {error}"], source) from error
    return parse_settings(parse_text(text, path.suffix.lower(), source), source)


def parse_text(text: str, suffix: str = "", source: str = "settings") -> Any:
    """The document in `text`, decoded as the suffix says (or JSON, then YAML)."""
    if not text.strip():
        raise CameraSettingsError(
            ["is empty (write {} for the defaults, or use `cameras remove` to drop the settings)"], source
        )
    if suffix in JSON_SUFFIXES:
        return _json(text, source)
    if suffix in YAML_SUFFIXES:
        return _yaml(text, source)
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return _yaml(text, source)


def _json(text: str, source: str) -> Any:
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError as error:
        raise CameraSettingsError([f"is not valid JSON: {error}"], source) from error


def _yaml(text: str, source: str) -> Any:
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise CameraSettingsError([f"is not valid JSON or YAML: {error}"], source) from error
