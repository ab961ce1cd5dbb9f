"""The reference-inbox tests' SQLite file and the inbox serving it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.inbox_posts import (
    running_inbox,
)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "inbox" / "inbox.sqlite3"


@pytest.fixture
def inbox(db_path: Path) -> Iterator[str]:
    with running_inbox(db_path) as base_url:
        yield base_url
