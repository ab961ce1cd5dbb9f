"""Fixtures the end-to-end tests share: the browser of the console and unsubscribe-page tests.

A module's browser tests share one Chromium (its start is seconds on a loaded machine) and isolate
themselves in their own browser contexts. Module scope, not session: Playwright's sync API keeps an
event loop of its own, which must not stay open beside the other tests' ``asyncio.run``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser

from tests.support.browser import chromium


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as launched:
        yield launched

