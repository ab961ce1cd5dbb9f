"""A process on the local queue never loads boto3: every ``campaign-engine`` process of ``make dev`` and
of the suite pays its import (a fifth of the CPU of importing the wiring) at each start otherwise. An
SQS deployment loads it when it builds its queues. Each case is a fresh interpreter, so an import made
by another test cannot hide one."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

_BUILD = """
import sys
from campaign_engine.config import Settings
from campaign_engine.api.app import create_app  # the API's modules, as `serve` imports them
from campaign_engine.wiring import build_queues
settings = Settings(_env_file=None, campaign_queue_backend={backend!r}, campaign_local_queue_path={path!r},
                    campaign_dispatch_queue_url="http://127.0.0.1:9/queue/dispatch",
                    campaign_delivery_queue_url="http://127.0.0.1:9/queue/delivery", aws_region="us-east-1")
build_queues(settings)
print("boto3" in sys.modules, "botocore" in sys.modules)
"""


def _loaded(backend: str, tmp_path: Path) -> str:
    code = _BUILD.format(backend=backend, path=str(tmp_path / "queue.sqlite3"))
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


def test_the_local_queue_builds_without_boto3(tmp_path: Path) -> None:
    assert _loaded("local", tmp_path) == "False False"


def test_sqs_queues_load_it_when_built(tmp_path: Path) -> None:
    assert _loaded("sqs", tmp_path) == "True True"
