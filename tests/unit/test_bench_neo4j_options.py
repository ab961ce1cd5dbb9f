"""The benches measure the Neo4j a deployment runs: importing a bench (and the test support some of them
use) leaves the launcher's JVM options and Neo4j settings as the environment gave them. The test run's
own options (C1 only, plans kept for an hour: ``tests/conftest.py``) are set when pytest configures,
so a bench that imported test support once ran its Neo4j on the C1 compiler alone."""

from __future__ import annotations

import os
import subprocess
import sys

from campaign_engine.graph.local_neo4j import JVM_OPTIONS_VARIABLE, SETTINGS_VARIABLE, repo_root

_PRINT_AFTER_IMPORTS = """
import importlib, os, pathlib, sys
for path in sorted(pathlib.Path("bench").glob("[!_]*.py")):
    importlib.import_module(f"bench.{path.stem}")
print(repr((os.environ.get(sys.argv[1]), os.environ.get(sys.argv[2]))))
"""


def test_importing_every_bench_leaves_the_launcher_options_alone() -> None:
    env = {k: v for k, v in os.environ.items() if k not in (JVM_OPTIONS_VARIABLE, SETTINGS_VARIABLE)}
    done = subprocess.run(
        [sys.executable, "-c", _PRINT_AFTER_IMPORTS, JVM_OPTIONS_VARIABLE, SETTINGS_VARIABLE],
        cwd=repo_root(), env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "(None, None)"
