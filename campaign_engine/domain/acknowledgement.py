"""The acknowledgement grammar: did an inbox receiver confirm *durable storage* of a notification?

Only a positive answer lets the worker write ``notifiedAt``; a negative answer is a definite refusal
(the receiver understood and declined); anything else is uncertain and the delivery is retried, because
"duplicate over drop" is cheaper than a recipient who silently never got the announcement.

Rules, in order:

* ``status_code is None`` (timeout, connection error), 1xx/3xx, 5xx, and 408/425/429 -> uncertain:
  the receiver may or may not have stored the message, or asked us to come back later.
* The body must be JSON. An explicit non-JSON ``Content-Type`` (``text/plain``, ``text/html``...) is
  uncertain even when the text happens to read ``true``; a *missing* content type is tolerated and the
  body is parsed, since minimal receivers often omit it.
* Verdicts are read from: the bare document (``true``/``false``, what LearnCard's inbox answers), a
  boolean ``result.data`` (that answer in tRPC's success envelope), and the keys ``sent``, ``success``
  and ``ok`` at the top level, under ``data`` and under ``result.data``.
  Only real JSON booleans count: ``"true"``, ``1`` and ``null`` say nothing.
* All verdicts ``true`` with a 2xx -> positive. All verdicts ``false`` with a 2xx, or with a 4xx other
  than 408/425/429 -> negative. No verdict, or verdicts that contradict each other -> uncertain.
  A 4xx that claims ``true`` is contradictory and therefore uncertain.
"""

from __future__ import annotations

import json
from typing import Any, Literal

__all__ = ["Acknowledgement", "classify_acknowledgement"]

Acknowledgement = Literal["positive", "negative", "uncertain"]

_VERDICT_KEYS = ("sent", "success", "ok")
_RETRYABLE_4XX = frozenset({408, 425, 429})


def classify_acknowledgement(
    status_code: int | None, body: bytes | None, content_type: str | None
) -> Acknowledgement:
    if status_code is None or not body:
        return "uncertain"
    is_2xx = 200 <= status_code < 300
    is_final_4xx = 400 <= status_code < 500 and status_code not in _RETRYABLE_4XX
    if not (is_2xx or is_final_4xx):
        return "uncertain"
    if content_type is not None and not _is_json_media_type(content_type):
        return "uncertain"
    try:
        document = json.loads(body)
    except (ValueError, RecursionError):  # invalid UTF-8 or JSON, or absurdly deep nesting
        return "uncertain"
    verdicts = set(_verdicts(document))
    if verdicts == {True}:
        return "positive" if is_2xx else "uncertain"
    if verdicts == {False}:
        return "negative"
    return "uncertain"


def _is_json_media_type(content_type: str) -> bool:
    media_type = content_type.split(";", 1)[0].strip().lower()
    return media_type == "application/json" or (
        media_type.startswith("application/") and media_type.endswith("+json")
    )


def _verdicts(document: Any) -> list[bool]:
    if isinstance(document, bool):
        return [document]
    enveloped = _child(_child(document, "result"), "data")
    if isinstance(enveloped, bool):
        return [enveloped]
    found: list[bool] = []
    for scope in (document, _child(document, "data"), _child(_child(document, "result"), "data")):
        if isinstance(scope, dict):
            found.extend(scope[key] for key in _VERDICT_KEYS if isinstance(scope.get(key), bool))
    return found


def _child(node: Any, key: str) -> Any:
    return node.get(key) if isinstance(node, dict) else None
