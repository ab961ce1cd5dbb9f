"""Builds the zip that ``serverless.yml`` deploys to AWS Lambda (``make lambda-package``).

The target is read from ``serverless.yml`` so the zip and the deployment cannot disagree:
``provider.runtime`` (``python3.X``), ``provider.architecture`` (``x86_64`` | ``arm64``) and
``package.artifact`` (the default output). Steps:

1. ``pip wheel --no-deps`` of a clean copy of the project source (pure Python). A copy, because an
   in-tree setuptools build reuses ``build/lib`` and would ship modules deleted since the last build.
2. ``pip install --target --platform manylinux2014_<arch> --implementation cp --python-version 3.X
   --only-binary=:all:`` of that wheel: every dependency comes as a binary wheel built for Lambda's
   platform, never compiled for (or copied from) this machine. neo4j-rust-ext, pydantic-core, uvloop
   and httptools are native code; a wheel for another platform would fail at import or silently fall
   back to pure Python.
3. ``cypher/`` goes to the zip root: ``campaign_engine.graph.cypher`` reads it from the directory that
   holds the package (``/var/task/cypher`` on Lambda).
4. Byte-compiled ``.pyc`` (unchecked-hash, so no timestamps) when this interpreter is the runtime's
   version: ``/var/task`` is read-only, so without them every cold start compiles every import.
5. Zipped deterministically: sorted entries, fixed timestamps, mode 0644.

boto3/botocore are bundled rather than taken from the runtime: the runtime's copy is pinned by AWS
and may be older than ours, bundling keeps the SQS client at the version the tests ran, and the zip
alone can import every handler (tests/e2e/test_lambda_package.py checks exactly that). The unpacked
size is checked against Lambda's 250 MB limit.
"""

from __future__ import annotations

import argparse
import compileall
import os
import py_compile
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
PLATFORMS = {"x86_64": "manylinux2014_x86_64", "arm64": "manylinux2014_aarch64"}
UNZIPPED_LIMIT = 250 * 1024 * 1024  # Lambda: deployment package, unzipped
FIXED_TIME = (1980, 1, 1, 0, 0, 0)
SOURCES = ("pyproject.toml", "README.md", "campaign_engine")


@dataclass(frozen=True)
class Target:
    runtime: str  # python3.11
    python_version: str  # 3.11
    architecture: str  # x86_64
    platform: str  # manylinux2014_x86_64
    artifact: Path


class _Loader(yaml.SafeLoader):
    """serverless.yml with CloudFormation tags (!Ref, !GetAtt) read as None: only plain keys are used."""


_Loader.add_multi_constructor("!", lambda loader, suffix, node: None)


def read_target(config_path: Path = ROOT / "serverless.yml") -> Target:
    text = config_path.read_text(encoding="utf-8")
    config: dict[str, Any] = yaml.load(text, Loader=_Loader)  # noqa: S506 - a SafeLoader subclass
    provider = config["provider"]
    runtime, architecture = provider.get("runtime"), provider.get("architecture")
    if not isinstance(runtime, str) or not runtime.startswith("python3."):
        raise SystemExit(f"{config_path}: provider.runtime must name a Python runtime, got {runtime!r}")
    if architecture not in PLATFORMS:
        raise SystemExit(f"{config_path}: provider.architecture must be one of {sorted(PLATFORMS)}")
    for name, function in (config.get("functions") or {}).items():
        for key, value in (("runtime", runtime), ("architecture", architecture)):
            if function.get(key, value) != value:
                raise SystemExit(f"{config_path}: function {name} overrides {key}; one zip serves all")
    package = config.get("package") or {}
    if package.get("individually") or not package.get("artifact"):
        raise SystemExit(f"{config_path}: package must name one artifact for all functions")
    return Target(
        runtime=runtime,
        python_version=runtime.removeprefix("python"),
        architecture=architecture,
        platform=PLATFORMS[architecture],
        artifact=(config_path.parent / package["artifact"]).resolve(),
    )


def _say(message: str) -> None:
    sys.stderr.write(f"lambda-package: {message}\n")


def _pip(*args: str) -> None:
    command = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--quiet", *args]
    subprocess.run(command, check=True)  # noqa: S603 - our own interpreter, arguments built here


def build_wheel(work: Path) -> Path:
    source = work / "source"
    source.mkdir()
    for name in SOURCES:
        origin = ROOT / name
        if origin.is_dir():
            shutil.copytree(origin, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(origin, source / name)
    _pip("wheel", "--no-deps", "--wheel-dir", str(work / "wheel"), str(source))
    (wheel,) = (work / "wheel").glob("*.whl")
    return wheel


def install(wheel: Path, site: Path, target: Target) -> None:
    _pip(
        "install",
        "--target", str(site),
        "--platform", target.platform,
        "--implementation", "cp",
        "--python-version", target.python_version,
        "--only-binary=:all:",
        "--no-compile",
        str(wheel),
    )  # fmt: skip
    shutil.rmtree(site / "bin", ignore_errors=True)  # console scripts with this machine's shebang
    for direct_url in site.glob("*.dist-info/direct_url.json"):  # names our temporary wheel path
        record = direct_url.parent / "RECORD"
        lines = record.read_text(encoding="utf-8").splitlines(keepends=True)
        record.write_text("".join(x for x in lines if "/direct_url.json," not in x), encoding="utf-8")
        direct_url.unlink()
    shutil.copytree(ROOT / "cypher", site / "cypher")


def byte_compile(site: Path, target: Target) -> None:
    here = f"{sys.version_info.major}.{sys.version_info.minor}"
    if here != target.python_version:
        _say(f"no .pyc: this is Python {here}, the runtime is {target.python_version}")
        return
    ok = compileall.compile_dir(
        site,
        ddir="/var/task",  # where tracebacks on Lambda should point
        quiet=1,
        workers=1,  # one process: marshal output then does not depend on which worker compiled a file
        invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH,
    )
    if not ok:
        raise SystemExit("byte-compiling the package failed")


def write_zip(site: Path, output: Path) -> int:
    """The zip of ``site``; returns the unpacked size in bytes."""
    files = sorted((p for p in site.rglob("*") if p.is_file()), key=lambda p: p.relative_to(site).as_posix())
    size = sum(p.stat().st_size for p in files)
    if size > UNZIPPED_LIMIT:
        raise SystemExit(f"unpacked package is {size / 2**20:.0f} MiB, over Lambda's 250 MB limit")
    output.parent.mkdir(parents=True, exist_ok=True)
    partial = output.with_name(output.name + ".partial")
    with zipfile.ZipFile(partial, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=6) as archive:
        for path in files:
            info = zipfile.ZipInfo(path.relative_to(site).as_posix(), date_time=FIXED_TIME)
            info.create_system = 3  # Unix, so the mode below is honoured
            info.external_attr = (0o100644 & 0xFFFF) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, path.read_bytes(), compresslevel=6)
    os.replace(partial, output)
    return size


def build(target: Target, output: Path) -> Path:
    with tempfile.TemporaryDirectory(prefix="lambda-package-") as tmp:
        work = Path(tmp)
        _say(f"{target.runtime} {target.architecture} ({target.platform}) -> {output}")
        wheel = build_wheel(work)
        site = work / "site"
        install(wheel, site, target)
        byte_compile(site, target)
        size = write_zip(site, output)
    _say(f"wrote {output} ({output.stat().st_size / 2**20:.1f} MiB, {size / 2**20:.1f} MiB unpacked)")
    return output


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--config", type=Path, default=ROOT / "serverless.yml")
    parser.add_argument("--output", type=Path, help="default: package.artifact of serverless.yml")
    args = parser.parse_args(argv)
    target = read_target(args.config)
    build(target, (args.output or target.artifact).resolve())


if __name__ == "__main__":
    main()
