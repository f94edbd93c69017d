"""A service's `--help` in the layout of every other command: the services parse their flags with
pydantic-settings (so that a flag, its env variable and its default stay one field), and show them
the way typer shows the tools' options. The help is rendered by typer itself, from a command built
for the purpose out of the settings model: the usage line, the description, the options with their
defaults (the service's own first, then those every service has; the broker's in the Kafka panel),
then the examples.

The description is the running command's own help (its docstring, with the exit codes), else the
model's first paragraph; a group that runs a service (`notify`) lists its commands too. Only the
`--help` path imports this module.
"""

from __future__ import annotations

import inspect
import os
import re
import typing
from collections.abc import Collection
from pathlib import Path
from typing import Any

import typer
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings

from stream_worker.service.options import KAFKA_PANEL, REPO_ROOT

# The settings that say how to reach and use the broker: the Kafka panel, as the tools' options.
KAFKA_FIELDS = (
    "bootstrap_servers",
    "kafka_config",
    "local_broker",
    "auto_offset_reset",
    "session_timeout_ms",
    "group_id",
)
EXAMPLES = re.compile(r"^Examples?:\s*$", re.MULTILINE)


def print_settings_help(model: type[BaseSettings], common: Collection[str]) -> None:
    """Print what `<service> --help` shows, at the terminal's width (typer's console); `common`:
    the settings every service has, shown after the service's own."""
    running = _running_command()
    app = typer.Typer(add_completion=False)
    help_text, epilog = _texts(model, running)
    subcommands = getattr(running, "commands", None)
    function = _command_function(model, common)
    if subcommands:
        app.callback(invoke_without_command=True, help=help_text, epilog=epilog)(function)
    else:
        app.command(help=help_text, epilog=epilog)(function)
    command = typer.main.get_command(app)
    if subcommands:
        for name, sub in subcommands.items():
            command.add_command(sub, name)  # type: ignore[attr-defined]
    prog_name = str(model.model_config.get("cli_prog_name") or "stream-worker")
    command.main(["--help"], prog_name=prog_name, standalone_mode=False)


def _running_command() -> Any:
    """The typer command running now (`stream-worker sightings`), None outside one."""
    try:
        from typer._click.globals import get_current_context
    except ImportError:  # a typer that does not vendor click
        return None
    context = get_current_context(silent=True)
    return None if context is None else context.command


def _texts(model: type[BaseSettings], running: Any) -> tuple[str, str]:
    """(description, epilog): the command's help, then the model's paragraphs and its examples in
    the tools' epilog form (a paragraph per example)."""
    doc = inspect.cleandoc(model.__doc__ or "")
    parts = EXAMPLES.split(doc, maxsplit=1)
    about = parts[0].strip()
    examples = parts[1] if len(parts) > 1 else ""
    own_help = inspect.cleandoc(running.help) if running is not None and running.help else ""
    help_text = own_help or about
    paragraphs = [about] if own_help and about else []
    lines = [line.strip() for line in examples.strip().splitlines() if line.strip()]
    if lines:
        paragraphs.append("Examples:\n\n" + "\n\n".join(f"  {line}" for line in lines))
    return help_text, "\n\n".join(paragraphs)


def _command_function(model: type[BaseSettings], common: Collection[str]) -> Any:
    """A function typer reads as a command: one keyword parameter per setting, never called."""
    fields = list(model.model_fields.items())
    ordered = [
        *(item for item in fields if item[0] not in common and item[0] not in KAFKA_FIELDS),
        *(item for item in fields if item[0] in common and item[0] not in KAFKA_FIELDS),
        *(item for item in fields if item[0] in KAFKA_FIELDS),
    ]
    parameters = [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=option, annotation=annotation)
        for name, info in ordered
        for annotation, option in [_option(model, name, info)]
    ]

    def settings() -> None:
        """Never run: the service parses its own flags."""

    settings.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    settings.__annotations__ = {parameter.name: parameter.annotation for parameter in parameters}
    return settings


def _option(model: type[BaseSettings], name: str, info: FieldInfo) -> tuple[Any, Any]:
    """(annotation, typer.Option) that shows the setting as `--help` shows an option."""
    annotation, metavar = _shown_type(info.annotation)
    described = info.description or ""
    choices = _choices(info.annotation)
    if choices:
        described += " One of: " + ", ".join(choices) + "."
    long = "--" + name.replace("_", "-")
    declarations = [long]
    if annotation is bool:  # its --no-x in the help text: a column of its own would crowd the rest
        described += f" --no-{long[2:]} turns it off."
    if name == "kafka_config":
        declarations.append("-X")
    has_default = info.default_factory is None and info.default is not None
    default = info.default if has_default else None
    shown = _inside_checkout(default)
    option = typer.Option(
        default,
        *declarations,
        help=described.strip(),
        # not shown: the description says how each is named
        envvar=str(model.model_config.get("env_prefix", "")) + name.upper(),
        show_envvar=False,
        metavar=metavar,
        show_default=shown if shown is not None else has_default,
        rich_help_panel=KAFKA_PANEL if name in KAFKA_FIELDS else None,
    )
    return annotation, option


def _shown_type(annotation: Any) -> tuple[Any, str | None]:
    """The type typer shows for a setting's annotation, and a metavar where typer has none."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _shown_type(typing.get_args(annotation)[0])
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        members = [member for member in typing.get_args(annotation) if member is not type(None)]
        if len(members) == 1:
            return _shown_type(members[0])
        return str, None
    if origin is typing.Literal:
        return str, None
    if origin is dict or annotation is dict:
        return list[str], "KEY=VALUE"
    if origin in (list, tuple, set, frozenset):
        return str, None
    if annotation in (bool, int, float, str, Path):
        return annotation, None
    return str, None


def _choices(annotation: Any) -> list[str]:
    if typing.get_origin(annotation) is typing.Literal:
        return [str(choice) for choice in typing.get_args(annotation)]
    return []


def _inside_checkout(value: object) -> str | None:
    """A default path inside the checkout, relative to it (the help reads the same anywhere)."""
    if isinstance(value, Path) and str(value).startswith(str(REPO_ROOT) + os.sep):
        return str(value.relative_to(REPO_ROOT))
    return None
