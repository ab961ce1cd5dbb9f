"""Debian's Chromium under Playwright, as every browser test launches it, and where screenshots go.

Chromium is required: if ``/usr/bin/chromium`` is missing (``make system-deps``) the launch fails and
so do the browser tests; they are never skipped."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from playwright.sync_api import Browser, sync_playwright

from tests.support.processes import REPO_ROOT

__all__ = ["ARTIFACTS", "CHROMIUM", "CHROMIUM_ARGS", "chromium"]

ARTIFACTS = REPO_ROOT / "tests" / "artifacts"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@contextmanager
def chromium() -> Iterator[Browser]:
    """One headless Chromium; each test opens its own context (cookies, storage) in it."""
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()
