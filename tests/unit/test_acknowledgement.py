"""Table of receiver answers and how the acknowledgement grammar reads them."""

from __future__ import annotations

import pytest

from campaign_engine.domain.acknowledgement import classify_acknowledgement

JSON = "application/json"

CASES: list[tuple[str, int | None, bytes | None, str | None, str]] = [
    # --- positive: a real JSON true in one of the recognised places, with a 2xx ----------------
    ("bare true", 200, b"true", JSON, "positive"),
    ("bare true with whitespace", 200, b" true\n", JSON, "positive"),
    ("top-level sent", 200, b'{"sent": true}', JSON, "positive"),
    ("top-level success", 201, b'{"success": true}', JSON, "positive"),
    ("top-level ok", 202, b'{"ok": true, "id": "m-1"}', JSON, "positive"),
    ("under data", 200, b'{"data": {"sent": true}}', JSON, "positive"),
    ("under result.data", 200, b'{"result": {"data": {"ok": true}}}', JSON, "positive"),
    ("tRPC envelope of true", 200, b'{"result": {"data": true}}', JSON, "positive"),
    ("charset parameter", 200, b'{"ok": true}', "application/json; charset=utf-8", "positive"),
    ("vendor +json type", 200, b'{"ok": true}', "application/vnd.inbox+json", "positive"),
    ("missing content type tolerated", 200, b'{"ok": true}', None, "positive"),
    ("agreeing verdicts", 200, b'{"ok": true, "data": {"sent": true}}', JSON, "positive"),
    # --- negative: the receiver understood and declined ---------------------------------------
    ("bare false", 200, b"false", JSON, "negative"),
    ("top-level sent false", 200, b'{"sent": false}', JSON, "negative"),
    ("under data false", 200, b'{"data": {"success": false}}', JSON, "negative"),
    ("under result.data false", 200, b'{"result": {"data": {"ok": false}}}', JSON, "negative"),
    ("tRPC envelope of false", 200, b'{"result": {"data": false}}', JSON, "negative"),
    ("400 with false", 400, b'{"ok": false, "error": "unknown recipient"}', JSON, "negative"),
    ("410 with false", 410, b'{"success": false}', JSON, "negative"),
    # --- uncertain: everything else retries ---------------------------------------------------
    ("timeout", None, None, None, "uncertain"),
    ("timeout with stray body", None, b"true", JSON, "uncertain"),
    ("204 no content", 204, b"", None, "uncertain"),
    ("200 empty body", 200, b"", JSON, "uncertain"),
    ("200 None body", 200, None, JSON, "uncertain"),
    ("plain text OK", 200, b"OK", "text/plain", "uncertain"),
    ("plain text true", 200, b"true", "text/plain", "uncertain"),
    ("html true", 200, b"true", "text/html; charset=utf-8", "uncertain"),
    ("status ok is not a verdict", 200, b'{"status": "ok"}', JSON, "uncertain"),
    ("string true", 200, b'{"ok": "true"}', JSON, "uncertain"),
    ("number 1", 200, b'{"sent": 1}', JSON, "uncertain"),
    ("bare 1", 200, b"1", JSON, "uncertain"),
    ("null", 200, b'{"ok": null}', JSON, "uncertain"),
    ("nested too deep", 200, b'{"a": {"data": {"ok": true}}}', JSON, "uncertain"),
    ("result without data", 200, b'{"result": {"ok": true}}', JSON, "uncertain"),
    ("data not an object", 200, b'{"data": [true]}', JSON, "uncertain"),
    ("bare data true", 200, b'{"data": true}', JSON, "uncertain"),
    ("array of true", 200, b"[true]", JSON, "uncertain"),
    ("contradictory verdicts", 200, b'{"ok": true, "data": {"sent": false}}', JSON, "uncertain"),
    ("invalid JSON", 200, b'{"ok": tru', JSON, "uncertain"),
    ("invalid UTF-8", 200, b'{"ok": true, "x": "\xff"}', JSON, "uncertain"),
    ("deep nesting", 200, b"[" * 100_000 + b"]" * 100_000, JSON, "uncertain"),
    ("500 with true", 500, b'{"ok": true}', JSON, "uncertain"),
    ("503 with false", 503, b'{"ok": false}', JSON, "uncertain"),
    ("408 with false", 408, b'{"ok": false}', JSON, "uncertain"),
    ("425 with false", 425, b'{"ok": false}', JSON, "uncertain"),
    ("429 with false", 429, b'{"ok": false}', JSON, "uncertain"),
    ("4xx claiming true", 400, b'{"ok": true}', JSON, "uncertain"),
    ("404 without verdict", 404, b"not found", "text/plain", "uncertain"),
    ("redirect", 302, b'{"ok": true}', JSON, "uncertain"),
]


@pytest.mark.parametrize(
    ("status_code", "body", "content_type", "expected"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_classify_acknowledgement(
    status_code: int | None, body: bytes | None, content_type: str | None, expected: str
) -> None:
    assert classify_acknowledgement(status_code, body, content_type) == expected
