"""`--help` in typer's layout for the commands that parse their own flags: the services (with
pydantic-settings, so that a flag, its env variable and its default stay one field) and the
benchmarks (argparse). typer renders it, from a command built for the purpose out of the settings
model or the parser: the usage line, the description, the options with their defaults (a service's
own first, then those every service has; the broker's in the Kafka panel), then the examples.

A service's description is the running command's own help (its docstring, with the exit codes),
else the model's first paragraph; a group that runs a service (`notify`) lists its commands too.
Only the `--help` path imports this module.
"""

from __future__ import annotations

import argparse
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
    context = _running_context()
    running = None if context is None else context.command
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
    # As typed (`stream-worker store run`), else as the model names its command.
    prog_name = context.command_path if context is not None else model.model_config.get("cli_prog_name")
    command.main(["--help"], prog_name=str(prog_name or "stream-worker"), standalone_mode=False)


def print_parser_help(parser: argparse.ArgumentParser) -> None:
    """Print an argparse parser's help in the same layout: its arguments, options and epilog."""
    app = typer.Typer(add_completion=False)
    parameters = [
        inspect.Parameter(
            action.dest,
            inspect.Parameter.KEYWORD_ONLY,
            default=_parameter(action),
            annotation=_action_type(action),
        )
        for action in parser._actions  # argparse has no public list of them
        if not isinstance(action, argparse._HelpAction)
    ]
    app.command(help=parser.description, epilog=parser.epilog)(_never_run(parameters))
    typer.main.get_command(app).main(["--help"], prog_name=parser.prog, standalone_mode=False)


def _parameter(action: argparse.Action) -> Any:
    help_text = "" if action.help in (None, argparse.SUPPRESS) else str(action.help)
    if not action.option_strings:
        if action.choices:
            help_text = f"{help_text} One of: {', '.join(map(str, action.choices))}.".strip()
        metavar = str(action.metavar or action.dest.upper())
        return typer.Argument(..., help=help_text, metavar=metavar, show_default=False)
    default = None if action.default is argparse.SUPPRESS else action.default
    shown = _inside_checkout(default)
    flag_only = isinstance(action, argparse._StoreTrueAction)
    return typer.Option(
        False if flag_only else default,
        *action.option_strings,
        help=help_text,
        metavar=None if action.metavar is None else str(action.metavar),
        show_default=shown if shown is not None else (default not in (None, [], "") and not flag_only),
    )


def _action_type(action: argparse.Action) -> Any:
    if isinstance(action, argparse._StoreTrueAction):
        return bool
    if isinstance(action, argparse._AppendAction):
        return list[str]
    if action.type in (int, float, Path):
        return action.type
    return str


def _never_run(parameters: list[inspect.Parameter]) -> Any:
    """A function typer reads as a command with these parameters; the command parses its own."""

    def flags() -> None:
        """Never run."""

    flags.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    flags.__annotations__ = {parameter.name: parameter.annotation for parameter in parameters}
    return flags


def _running_context() -> Any:
    """The context of the typer command running now (`stream-worker sightings`), None outside one."""
    try:
        from typer._click.globals import get_current_context
    except ImportError:  # a typer that does not vendor click
        return None
    return get_current_context(silent=True)


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
    """A command with one option per setting, the service's own first."""
    fields = list(model.model_fields.items())
    ordered = [
        *(item for item in fields if item[0] not in common and item[0] not in KAFKA_FIELDS),
        *(item for item in fields if item[0] in common and item[0] not in KAFKA_FIELDS),
        *(item for item in fields if item[0] in KAFKA_FIELDS),
    ]
    return _never_run(
        [
            inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=option, annotation=annotation)
            for name, info in ordered
            for annotation, option in [_option(model, name, info)]
        ]
    )


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
