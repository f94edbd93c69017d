"""Every topic name is spelled once, in contracts/topics.py: a module of stream_worker/ or bench/
that uses a declared topic's name as a string literal where a topic is meant fails this test.

"Where a topic is meant" is read from the code around the literal, so that the same words used
for other things (SQL tables, report and command names, metric labels, event kinds, dict keys of
a report) pass:

- the value of an assignment to a name, attribute or key that says `topic` (`input_topic: str =
  Field(...)`, `STATUS_TOPIC = ...`, `config["topic"] = ...`), or a field of a class named `*Topic*`;
- the default of a parameter whose name says `topic` (`topic: str = typer.Option(...)`);
- a keyword argument that says `topic` (`Source(topic=...)`, `topics=[...]`);
- a dict entry whose key says `topic` (`{"topic": ...}`);
- an argument of a call that takes topics: its name says `topic` or `compacted` (`create_topics`,
  `read_compacted`), or it is `subscribe`, `produce`, `TopicPartition`; an `Option(...)` whose flag
  says `topic` (`"--dlq-topic"`); a function, method or class of stream_worker/ or bench/ whose
  parameter at that position says `topic` (`SideReader(bootstrap, topics, ...)`);
- an operand compared with, or-ed with, or chosen against an expression that says `topic`
  (`message.topic() == ...`, `settings.frames_topic or ...`);
- what a function whose name says `topic` returns.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from functools import cache
from pathlib import Path

import pytest

from stream_worker.contracts.topics import BY_NAME

REPO_ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("stream_worker", "bench")
TOPOLOGY = Path("stream_worker/contracts/topics.py")
TOPIC_CALLS = frozenset({"subscribe", "produce", "TopicPartition"})
OPTION_CALLS = frozenset({"Option", "Field"})

# (file, the line's text stripped): a literal the rules above take for a topic that is not one.
ALLOWED: dict[tuple[str, str], str] = {}


def _says_topic(text: str | None) -> bool:
    return text is not None and "topic" in text.lower()


def _mentions_topic(node: ast.AST) -> bool:
    """True when an expression names something topic-like (`settings.input_topic`, `m.topic()`)."""
    for child in ast.walk(node):
        if isinstance(child, ast.Name) and _says_topic(child.id):
            return True
        if isinstance(child, ast.Attribute) and _says_topic(child.attr):
            return True
        if isinstance(child, ast.Constant) and isinstance(child.value, str) and _says_topic(child.value):
            return True
    return False


def _target_says_topic(target: ast.AST) -> bool:
    if isinstance(target, ast.Name):
        return _says_topic(target.id)
    if isinstance(target, ast.Attribute):
        return _says_topic(target.attr)
    if isinstance(target, ast.Subscript):
        key = target.slice
        return isinstance(key, ast.Constant) and isinstance(key.value, str) and _says_topic(key.value)
    if isinstance(target, ast.Tuple | ast.List):
        return any(_target_says_topic(item) for item in target.elts)
    return False


def _callee(call: ast.Call) -> str | None:
    if isinstance(call.func, ast.Name):
        return call.func.id
    if isinstance(call.func, ast.Attribute):
        return call.func.attr
    return None


def _is_topic_call(call: ast.Call) -> bool:
    name = _callee(call)
    if name is None:
        return False
    if name in TOPIC_CALLS or _says_topic(name) or "compacted" in name.lower():
        return True
    flags = [arg.value for arg in call.args if isinstance(arg, ast.Constant) and isinstance(arg.value, str)]
    return name in OPTION_CALLS and any(flag.startswith("--") and _says_topic(flag) for flag in flags)


def _parameter_of_default(arguments: ast.arguments, node: ast.AST) -> str | None:
    positional = [*arguments.posonlyargs, *arguments.args]
    for arg, default in zip(
        positional[len(positional) - len(arguments.defaults) :], arguments.defaults, strict=True
    ):
        if default is node:
            return arg.arg
    for arg, default in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True):
        if default is node:
            return arg.arg
    return None


Signatures = Mapping[str, list[list[str]]]  # callable name -> the positional parameters of each


def _parameters(function: ast.FunctionDef | ast.AsyncFunctionDef, method: bool) -> list[str]:
    names = [arg.arg for arg in (*function.args.posonlyargs, *function.args.args)]
    return names[1:] if method else names


def signatures_of(tree: ast.AST) -> dict[str, list[list[str]]]:
    """The positional parameters of each function, method and class (its `__init__`'s, or a
    dataclass's fields) defined in `tree`, by name."""
    found: dict[str, list[list[str]]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            init = [n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"]
            fields = [
                n.target.id
                for n in node.body
                if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)
            ]
            found.setdefault(node.name, []).append(_parameters(init[0], True) if init else fields)
            for method in node.body:
                if isinstance(method, ast.FunctionDef | ast.AsyncFunctionDef) and method.name != "__init__":
                    found.setdefault(method.name, []).append(_parameters(method, True))
        elif isinstance(node, ast.Module):
            for function in node.body:
                if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                    found.setdefault(function.name, []).append(_parameters(function, False))
    return found


def _topic_parameter(call: ast.Call, argument: ast.AST, signatures: Signatures) -> str | None:
    """The parameter that says `topic` which `argument` (positional) of `call` is given to."""
    if argument not in call.args or any(isinstance(arg, ast.Starred) for arg in call.args):
        return None
    index = call.args.index(argument)
    for parameters in signatures.get(_callee(call) or "", []):
        if index < len(parameters) and _says_topic(parameters[index]):
            return parameters[index]
    return None


def _topic_context(
    child: ast.AST, parent: ast.AST, scopes: list[ast.AST], signatures: Signatures
) -> str | None:
    """Why `child` (a literal or an expression holding it) is a topic inside `parent`, or None."""
    if isinstance(parent, ast.keyword) and _says_topic(parent.arg):
        return f"keyword {parent.arg}="
    if isinstance(parent, ast.Call) and child is not parent.func and _is_topic_call(parent):
        return f"argument of {_callee(parent)}()"
    if isinstance(parent, ast.Call) and (parameter := _topic_parameter(parent, child, signatures)):
        return f"parameter {parameter} of {_callee(parent)}()"
    if isinstance(parent, ast.Dict) and child in parent.values:
        key = parent.keys[parent.values.index(child)]
        if isinstance(key, ast.Constant) and isinstance(key.value, str) and _says_topic(key.value):
            return f"dict entry {key.value!r}"
    if isinstance(parent, ast.Compare | ast.BoolOp | ast.IfExp):
        others = [node for node in ast.iter_child_nodes(parent) if node is not child]
        if any(_mentions_topic(node) for node in others):
            return "compared with or instead of a topic"
    if isinstance(parent, ast.arguments) and _says_topic(name := _parameter_of_default(parent, child)):
        return f"default of parameter {name}"
    if isinstance(parent, ast.Assign) and any(_target_says_topic(t) for t in parent.targets):
        return "assigned to a topic"
    if isinstance(parent, ast.AnnAssign | ast.AugAssign) and _target_says_topic(parent.target):
        return "assigned to a topic"
    scope = scopes[-1] if scopes else None
    named_topic = _says_topic(getattr(scope, "name", None))
    if isinstance(parent, ast.Assign | ast.AnnAssign) and isinstance(scope, ast.ClassDef) and named_topic:
        return f"field of class {scope.name}"
    if (
        isinstance(parent, ast.Return)
        and isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef)
        and named_topic
    ):
        return f"returned by {scope.name}()"
    return None


class _Finder(ast.NodeVisitor):
    """Each declared topic name used as a topic: (line, why)."""

    def __init__(self, names: frozenset[str], signatures: Signatures) -> None:
        self.names = names
        self.signatures = signatures
        self.path: list[ast.AST] = []
        self.scopes: list[ast.AST] = []
        self.found: list[tuple[int, str, str]] = []

    def generic_visit(self, node: ast.AST) -> None:
        scope = isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        self.path.append(node)
        if scope:
            self.scopes.append(node)
        super().generic_visit(node)
        self.path.pop()
        if scope:
            self.scopes.pop()

    def visit_Constant(self, node: ast.Constant) -> None:
        if not (isinstance(node.value, str) and node.value in self.names):
            return
        child: ast.AST = node
        # Up to the statement that holds the literal, and that statement itself.
        for parent in reversed(self.path):
            scopes = [s for s in self.scopes if s is not parent]
            if (why := _topic_context(child, parent, scopes, self.signatures)) is not None:
                self.found.append((node.lineno, node.value, why))
                return
            if isinstance(parent, ast.stmt):
                return
            child = parent


def _modules(root: Path) -> Iterator[Path]:
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            relative = path.relative_to(root)
            if relative != TOPOLOGY:
                yield relative


@cache
def repo_signatures(root: Path) -> dict[str, list[list[str]]]:
    """The callables of stream_worker/ and bench/ under `root`, by name."""
    found: dict[str, list[list[str]]] = {}
    for relative in _modules(root):
        for name, each in signatures_of(ast.parse((root / relative).read_text(encoding="utf-8"))).items():
            found.setdefault(name, []).extend(each)
    return found


def spelled_topics(
    source: str, names: frozenset[str] = frozenset(BY_NAME), root: Path = REPO_ROOT
) -> list[tuple[int, str, str]]:
    """(line, name, why) of each declared topic name the source spells where a topic is meant."""
    tree = ast.parse(source)
    signatures = dict(repo_signatures(root))
    for name, each in signatures_of(tree).items():
        signatures[name] = [*signatures.get(name, []), *each]
    finder = _Finder(names, signatures)
    finder.visit(tree)
    return finder.found


def spelled_in(root: Path) -> tuple[list[str], set[tuple[str, str]]]:
    """Each literal of stream_worker/ and bench/ under `root` spelling a topic (allowed ones apart)."""
    spelled, allowed_seen = [], set()
    for relative in _modules(root):
        lines = (root / relative).read_text(encoding="utf-8").splitlines()
        for line, name, why in spelled_topics("\n".join(lines), root=root):
            key = (relative.as_posix(), lines[line - 1].strip())
            if key in ALLOWED:
                allowed_seen.add(key)
            else:
                spelled.append(f"{relative}:{line}: {name!r} ({why}): use contracts/topics.py")
    return spelled, allowed_seen


def test_no_module_spells_a_topic_name() -> None:
    spelled, allowed_seen = spelled_in(REPO_ROOT)
    assert not spelled, "\n".join(spelled)
    assert allowed_seen == set(ALLOWED), f"stale allowlist entries: {set(ALLOWED) - allowed_seen}"


@pytest.mark.parametrize(
    "source",
    [
        'class S:\n    input_topic: str = Field("frames", min_length=1)',
        'class S:\n    cameras_topic: str = Field(\n        "cameras",\n        description="x",\n    )',
        'STATUS_TOPIC = "camera-status"',
        'OPTION = typer.Option("notify-targets", "--topic", envvar="X")',
        'def tail(topic: str = typer.Option("plates", "--topic")) -> None: ...',
        'def replay(dlq: str = typer.Option("notify.dlq", "--dlq-topic")) -> None: ...',
        'def tail(*, topic: str = "plates") -> None: ...',
        'create_topics(bootstrap, ["frames", "plates"], 1)',
        'create_topics(bootstrap, [name for name in ("frames.dlq",)], 1)',
        'read_compacted(bootstrap, "camera-status", decode, {}, 30.0)',
        'consumer.subscribe(["sightings"])',
        'producer.produce("alerts", value=b"x")',
        'Source(topic="plates", partition=0, offset=1)',
        'record = {"source": {"topic": "notify-tests", "partition": 0}}',
        'if message.topic() == "alerts":\n    pass',
        'name = settings.frames_topic or "frames"',
        'config["topic"] = "watchlist"',
        '@dataclass\nclass DemoTopics:\n    frames: str = "frames"',
        'class Backend:\n    def frames_topic(self) -> str:\n        return "frames"',
        'class Reader:\n    def __init__(self, b, topics, handle): ...\nReader(b, ["alerts"], handle)',
        'def follow(bootstrap, topic, decode): ...\nfollow(b, "cameras", decode)',
        '@dataclass\nclass Engine:\n    topic: str\n    rules: int\nEngine("plates", 1)',
    ],
)
def test_a_topic_name_spelled_as_a_topic_is_caught(source: str) -> None:
    assert spelled_topics(source), source


@pytest.mark.parametrize(
    "source",
    [
        'op.drop_table("sightings")',
        'table = sa.Table(\n    "alerts",\n    metadata,\n)',
        'app.add_typer(cameras_app, name="cameras")',
        'metrics.rows_written.labels("alerts").inc(1)',
        'count = report["frames"]',
        'row = {"frames": 1, "plates": 2}',
        'class EventKind(StrEnum):\n    ALERTS = "alerts"\n    SIGHTINGS = "sightings"',
        'Report("plates", "Unique plates per day", columns, rows)',
        'for table in ("sightings", "alerts", "pictures"):\n    pass',
        'ServiceProcess("visits", "visits", common, logs)',
        'columns = ["arm", "frames", "sightings"]',
        'if kind == "alerts":\n    pass',
        'def report(kind: str = "plates") -> None: ...',
        'def follow(bootstrap, topic, label): ...\nfollow(b, settings.cameras_topic, "cameras")',
    ],
)
def test_the_same_words_meaning_something_else_pass(source: str) -> None:
    assert not spelled_topics(source), source
