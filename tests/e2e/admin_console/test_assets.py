"""The console's shell without its built assets: every path answers 503 naming the make target."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from campaign_engine.api.admin_console import ASSETS_DIR, admin_console_router

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("admin_console")]


def test_missing_assets_answer_503_naming_the_make_target(tmp_path: Path) -> None:
    app = FastAPI()
    app.include_router(admin_console_router(tmp_path))  # an empty folder: nothing built
    with TestClient(app) as client:
        for path in ("/admin", "/admin/email-frame", "/admin/assets/app-ABCDEFGH.js"):
            answer = client.get(path)
            assert answer.status_code == 503, path
            assert "make admin-assets" in answer.text
    assert (ASSETS_DIR / "manifest.json").is_file(), "run `make admin-assets` before the browser tests"
