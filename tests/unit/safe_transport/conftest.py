"""The safe-transport tests' fixtures: the face each test runs through, and a loopback inbox."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.egress import (
    _serve,
    _Server,
)


@pytest.fixture(params=["post", "sender"])
def face(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def inbox() -> Iterator[_Server]:
    yield from _serve(_Server())
