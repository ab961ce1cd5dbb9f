"""Fixtures the integration tests share: the loopback Postmark stand-in.

One stand-in serves a whole module (a uvicorn thread per module, not per test); ``postmark`` resets its
scripts, error codes and records before each test that takes it. A test that needs a server nobody else
has touched (a different token, a delay still running when it ends) defines its own ``postmark``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.postmark_standin import PostmarkStandin


@pytest.fixture(scope="module")
def standin() -> Iterator[PostmarkStandin]:
    with PostmarkStandin() as server:
        yield server


@pytest.fixture
def postmark(standin: PostmarkStandin) -> PostmarkStandin:
    """The module's stand-in, reset: no script, no error codes, nothing accepted."""
    standin.reset()
    return standin
