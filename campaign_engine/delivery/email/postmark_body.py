"""A Postmark batch body assembled once per page.

A page's messages share one rendering (``compose.py``: the body with slots where each recipient's
links go), so their bodies are JSON-escaped once, around the slots, and each message's JSON is
the escaped pieces with its own escaped links between them. JSON string escaping is character by
character, so escaped pieces joined are the escaped whole: the bytes equal ``orjson.dumps`` of the
message's fields (``tests/unit/test_postmark_body.py`` compares them), at a fraction of the copying.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from campaign_engine.delivery.email.provider import BodyTemplate, Cut, OutgoingEmail

__all__ = ["PageBody", "message_fields"]


def message_fields(message: OutgoingEmail, *, sender: str, stream: str) -> dict[str, Any]:
    """One message of ``/email/batch`` as Postmark reads it (the reference form)."""
    data: dict[str, Any] = {
        "From": message.sender or sender,
        "To": message.to,
        "Subject": message.subject,
        "HtmlBody": message.html,
        "TextBody": message.text,
        "MessageStream": stream,
        "Headers": [{"Name": name, "Value": value} for name, value in message.headers.items()],
    }
    if message.tag:
        data["Tag"] = message.tag
    if message.metadata:
        data["Metadata"] = dict(message.metadata)
    return data


def _escaped(text: str) -> bytes:
    """``text`` as the inside of a JSON string."""
    return orjson.dumps(text)[1:-1]


class _EscapedCut:
    """One part's ``Cut``, its pieces escaped once."""

    def __init__(self, cut: Cut) -> None:
        # A bytes %-template ("%" doubled in the pieces), its fields the fills in slot order.
        self._template = b"%b".join(_escaped(piece).replace(b"%", b"%%") for piece in cut.pieces)
        self._order = cut.order

    def join(self, fills: Sequence[str]) -> bytes:
        escaped = [_escaped(fill) for fill in fills]
        return self._template % tuple([escaped[slot] for slot in self._order])


class _Pieces:
    """A template's text and html parts, escaped once, cut at the slots."""

    def __init__(self, template: BodyTemplate) -> None:
        self.html = _EscapedCut(template.html_cut)
        self.text = _EscapedCut(template.text_cut)


class PageBody:
    """Builds one ``/email/batch`` request body; templates are escaped once per page."""

    def __init__(self, *, sender: str, stream: str) -> None:
        self._sender, self._stream = sender, stream
        self._pieces: dict[int, _Pieces] = {}

    def encode(self, messages: Sequence[OutgoingEmail]) -> bytes:
        return b"[" + b",".join(self._message(message) for message in messages) + b"]"

    def _message(self, message: OutgoingEmail) -> bytes:
        template, fills = message.body_template, message.fills
        if template is None or fills is None:
            return orjson.dumps(message_fields(message, sender=self._sender, stream=self._stream))
        pieces = self._pieces.get(id(template))
        if pieces is None:
            pieces = self._pieces.setdefault(id(template), _Pieces(template))
        text_fills, html_fills = fills
        return b"".join(
            [
                b'{"From":', orjson.dumps(message.sender or self._sender),
                b',"To":', orjson.dumps(message.to),
                b',"Subject":', orjson.dumps(message.subject),
                b',"HtmlBody":"', pieces.html.join(html_fills),
                b'","TextBody":"', pieces.text.join(text_fills),
                b'","MessageStream":', orjson.dumps(self._stream),
                b',"Headers":', orjson.dumps(_headers(message.headers)),
                *((b',"Tag":', orjson.dumps(message.tag)) if message.tag else ()),
                *((b',"Metadata":', orjson.dumps(dict(message.metadata))) if message.metadata else ()),
                b"}",
            ]
        )  # fmt: skip


def _headers(headers: Mapping[str, str]) -> list[dict[str, str]]:
    return [{"Name": name, "Value": value} for name, value in headers.items()]
