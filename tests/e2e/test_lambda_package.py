"""The Lambda zip, built by the script behind ``make lambda-package``, runs every handler on its own.

The zip is built into a temporary directory (``--output``), unpacked, and probed by a clean interpreter
(``python -I -S``: the standard library plus the unpacked directory, nothing from this venv or the
checkout), as Lambda's runtime would load it from ``/var/task``. The probe imports every handler named in
serverless.yml and the modules the API handler imports lazily, reads every named Cypher query, and
reports where every module came from. Native extensions must be the target platform's binaries and must
load: a wheel built for the wrong platform would fail here, and a missing one would make the Neo4j
driver fall back to pure Python silently.

Building needs PyPI (or pip's cache); it takes about a minute.
"""

from __future__ import annotations

import json
import platform
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path
from typing import Any

import pytest

from tests.support.lambda_emulator import REPO_ROOT, load_serverless

# pytest-xdist: the zip is built once per module (minutes): its checks share one worker and one build.
pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("test_lambda_package")]

TRIPLETS = {"x86_64": "x86_64-linux-gnu", "arm64": "aarch64-linux-gnu"}
ELF_MACHINES = {"x86_64": 62, "arm64": 183}
NATIVE = ("neo4j._rust", "pydantic_core._pydantic_core", "uvloop.loop", "httptools.parser.parser")
LAZY = ("mangum", "campaign_engine.api.app")  # imported by the API handler at its first call

PROBE = r"""
import importlib, json, sys
task_root, handlers, modules = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
sys.path.insert(0, task_root)
for dotted in handlers:
    module, _, name = dotted.rpartition(".")
    assert callable(getattr(importlib.import_module(module), name)), dotted
files = {name: importlib.import_module(name).__file__ for name in modules}
from campaign_engine.graph.cypher import cypher_dir, query, statement_paths
names = sorted(statement_paths())
sizes = {name: len(query(name)) for name in names}
from neo4j._codec.packstream import v1
print(json.dumps({
    "files": files,
    "cypher_dir": str(cypher_dir()),
    "cypher": sizes,
    "neo4j_rust_codec": v1._rust_pack is not None,
    "loaded": {n: getattr(m, "__file__", None) for n, m in sorted(sys.modules.items())},
}))
"""


@pytest.fixture(scope="module")
def config() -> dict[str, Any]:
    return load_serverless()


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    output = tmp_path_factory.mktemp("lambda") / "campaign-engine.zip"
    subprocess.run(
        [sys.executable, str(REPO_ROOT / "infra" / "lambda" / "package.py"), "--output", str(output)],
        cwd=REPO_ROOT,
        check=True,
        timeout=900,
    )
    return output


@pytest.fixture(scope="module")
def task_root(built: Path) -> Path:
    root = built.parent / "task"
    with zipfile.ZipFile(built) as archive:
        archive.extractall(root)
    return root


def test_zip_entries_are_sorted_timestamp_free_and_world_readable(built: Path) -> None:
    with zipfile.ZipFile(built) as archive:
        infos = archive.infolist()
    names = [info.filename for info in infos]
    assert names == sorted(names)
    assert {info.date_time for info in infos} == {(1980, 1, 1, 0, 0, 0)}
    assert {info.external_attr >> 16 for info in infos} == {0o100644}
    assert not any(name.startswith(("bin/", "tests/")) for name in names)


def test_native_extensions_are_built_for_the_lambda_platform(config: dict[str, Any], task_root: Path) -> None:
    provider = config["provider"]
    version = provider["runtime"].removeprefix("python").replace(".", "")
    machine = ELF_MACHINES[provider["architecture"]]
    extensions = sorted(task_root.rglob("*.so"))
    assert extensions
    for path in extensions:
        header = path.read_bytes()[:20]
        assert header[:4] == b"\x7fELF", path
        assert int.from_bytes(header[18:20], "little") == machine, path  # e_machine
        tag = path.name.split(".")[-2]
        assert tag == "abi3" or tag == f"cpython-{version}-{TRIPLETS[provider['architecture']]}", path


def test_every_handler_imports_from_the_zip_alone(config: dict[str, Any], task_root: Path) -> None:
    provider = config["provider"]
    assert provider["runtime"] == f"python{sys.version_info.major}.{sys.version_info.minor}", (
        "the probe must run the runtime's Python version"
    )
    assert platform.machine() == {"x86_64": "x86_64", "arm64": "aarch64"}[provider["architecture"]], (
        "the probe must run on the target architecture to load its native code"
    )
    handlers = sorted({spec["handler"] for spec in config["functions"].values()})
    assert handlers
    answer = subprocess.run(
        [
            sys.executable, "-I", "-S", "-c", PROBE,
            str(task_root), json.dumps(handlers), json.dumps([*NATIVE, *LAZY]),
        ],
        env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
        cwd=task_root,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )  # fmt: skip
    assert answer.returncode == 0, answer.stderr
    report = json.loads(answer.stdout)

    stdlib = {Path(sysconfig.get_path(key)).resolve() for key in ("stdlib", "platstdlib")}
    for name, file in report["loaded"].items():
        if file is None:  # built into the interpreter, or a namespace package
            continue
        path = Path(file).resolve()
        assert path.is_relative_to(task_root) or any(path.is_relative_to(s) for s in stdlib), (name, file)
        assert "site-packages" not in path.parts, (name, file)
    for name in NATIVE:
        path = Path(report["files"][name])
        assert path.is_relative_to(task_root) and path.suffix == ".so", (name, path)
    assert report["neo4j_rust_codec"], "the Neo4j driver fell back to its pure-Python codec"

    # campaign_engine.graph.cypher reads the named queries next to the package, as on /var/task.
    assert Path(report["cypher_dir"]) == task_root / "cypher"
    repo_queries = sorted(p.stem for p in (REPO_ROOT / "cypher").rglob("*.cypher"))
    assert sorted(report["cypher"]) == repo_queries
    assert all(report["cypher"].values())


def test_package_data_and_bytecode_are_included(task_root: Path) -> None:
    package = REPO_ROOT / "campaign_engine"
    data = [p for p in package.rglob("*") if p.is_file() and p.suffix not in (".py", ".pyc")]
    assert data
    for path in data:
        assert (task_root / path.relative_to(REPO_ROOT)).is_file(), path
    tag = sys.implementation.cache_tag
    for path in (task_root / "campaign_engine").rglob("*.py"):
        assert (path.parent / "__pycache__" / f"{path.stem}.{tag}.pyc").is_file(), path
