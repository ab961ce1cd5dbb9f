"""The email-dispatch tests' settings (the loopback Postmark stand-in), local queues, and every email
worker a test built closed after it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from campaign_engine.config import Settings
from campaign_engine.wiring import Queues
from tests.support.delivery import local_queues
from tests.support.email import (
    email_settings,
)
from tests.support.email_dispatch import (
    _OPEN,
)
from tests.support.postmark_standin import PostmarkStandin


@pytest.fixture
def settings(base_settings: Settings, postmark: PostmarkStandin) -> Settings:
    return email_settings(base_settings, postmark.url, postmark.token)


@pytest.fixture
def queues(tmp_path: Path) -> Queues:
    return local_queues(tmp_path / "q.sqlite3")


@pytest.fixture(autouse=True)
def _close_workers() -> Iterator[None]:
    yield
    while _OPEN:
        _OPEN.pop().close()
