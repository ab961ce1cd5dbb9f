"""SMTP message bytes: the standard library builds one message per page, the rest are spliced.

``build_message`` is the reference: the ``email`` package's MIME tree, policy-driven header folding and
``as_bytes``, ~1.4 ms per message, most of what SMTP sending cost. A page's messages differ only in a
few values (To, Date, Message-ID, the List-Unsubscribe header, the template's slots in both parts: the
unsubscribe and web-view links), so
``PageAssembler`` builds the page's message once with a placeholder in each of those places, cuts it
at the placeholders, and joins each recipient's values in: the same bytes ``build_message`` makes for
the same inputs (``tests/unit/test_smtp_message.py`` compares them over varied content).

A splice is only exact when the values cannot change how the library would have rendered the rest,
so a message takes the reference path when any value could: an address that is not a plain dot-atom,
a header value that is not plain printable ASCII or could read as an encoded word, a line that would
pass 998 characters (the library would then re-encode the part or fold the header), a part the
library had to quoted-printable or base64 encode. Each template is also checked once against the
reference build of its first message; a mismatch sends every message of it by the reference path.
"""

from __future__ import annotations

import logging
import random
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from email.message import EmailMessage
from email.policy import SMTP

from campaign_engine.delivery.email.provider import BodyTemplate, OutgoingEmail

__all__ = ["PageAssembler", "build_message", "dot_stuffed", "new_boundary"]

log = logging.getLogger(__name__)

# RFC 5322 allows 998-character lines. The default 78 makes the email package fold a long unsubscribe
# URL into an RFC 2047 encoded word, which mail clients do not parse as List-Unsubscribe.
SMTP_POLICY = SMTP.clone(max_line_length=998)
# RFC 6531 lets the headers of an SMTPUTF8 message carry raw UTF-8.
UTF8_POLICY = SMTP_POLICY.clone(utf8=True)
# The library re-encodes a part or folds a header past 998; a splice stays a little under it.
_MAX_LINE = 990

# Headers we set ourselves; a caller's header of the same name would make an ambiguous message.
_MANAGED_HEADERS = frozenset(
    {
        "from",
        "to",
        "subject",
        "date",
        "message-id",
        "mime-version",
        "content-type",
        "content-transfer-encoding",
    }
)
SAFE_ADDRESS = re.compile(r"^[^\s\x00-\x1f\x7f<>()\[\],;:\"\\@]+@[A-Za-z0-9.-]+$")
# What the header registry renders verbatim: a dot-atom local part (non-ASCII allowed: only SMTPUTF8
# messages carry one) at a dot-atom domain.
_ATEXT = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~\-\u0080-\U0010ffff]+"
_PLAIN_ADDRESS = re.compile(rf"^{_ATEXT}(?:\.{_ATEXT})*@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*$")
# URL characters (RFC 3986) and the angle brackets around one: what links and List-Unsubscribe values
# are made of, and nothing the header folder or a parser could treat specially.
_PLAIN_VALUE = re.compile(r"^[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%<>]+$")
_PLACEHOLDER = "slot-e1c2b3a4"
_TO, _DATE, _ID = (
    "to-slot-e1c2b3a4@slot.invalid",
    "Mon, 01 Jan 2001 00:00:00 -0000",
    "<id-e1c2b3a4@slot.invalid>",
)


def build_message(
    message: OutgoingEmail,
    *,
    sender: str,
    message_id: str,
    date: str,
    boundary: str | None = None,
    utf8: bool | None = None,
) -> bytes:
    """The reference build (``utf8``: raw UTF-8 headers; by default when the recipient needs SMTPUTF8).
    Raises ValueError for a message that must not be sent (unsafe address, a managed header, CR/LF in
    a header value)."""
    if not SAFE_ADDRESS.match(message.to):
        raise ValueError("recipient is not a plain address")
    utf8 = not message.to.isascii() if utf8 is None else utf8
    mime = EmailMessage(policy=UTF8_POLICY if utf8 else SMTP_POLICY)
    mime["From"] = sender
    mime["To"] = message.to
    mime["Subject"] = message.subject
    mime["Date"] = date
    mime["Message-ID"] = message_id
    for name, value in message.headers.items():
        if name.lower() in _MANAGED_HEADERS:
            raise ValueError(f"header {name} is set by the provider")
        mime[name] = value  # the policy refuses CR/LF in values: no header injection
    mime.set_content(message.text)
    mime.add_alternative(message.html, subtype="html")
    if boundary is not None:
        mime.set_boundary(boundary)
    return mime.as_bytes()


def new_boundary() -> str:
    """A boundary as the email package's generator draws one."""
    # Not a secret: the generator's own recipe (random, not secrets), so the bytes look as they did.
    return "=" * 15 + f"{random.randrange(sys.maxsize):019d}" + "=="  # noqa: S311


def dot_stuffed(data: bytes) -> bytes:
    """RFC 5321 transparency: double leading dots, CRLF line ends, then the terminating dot."""
    data = re.sub(rb"(?:\r\n|\n|\r(?!\n))", b"\r\n", data)
    data = re.sub(rb"(?m)^\.", b"..", data)
    if not data.endswith(b"\r\n"):
        data += b"\r\n"
    return data + b".\r\n"


@dataclass
class _Fills:
    to: str
    date: str
    message_id: str
    headers: Sequence[str]
    text: Sequence[str]
    html: Sequence[str]


class _Template:
    """One page message cut at its placeholders: literal byte pieces and, between them, slot indexes
    into a message's values (To, Date, Message-ID, each text fill, each html fill, each header value)."""

    def __init__(self, data: bytes, slot_count: int, header_count: int) -> None:
        self.verified = False
        """Set once a splice equalled the reference build of the same message."""
        placeholders = [_TO, _DATE, _ID]
        placeholders += [_text_placeholder(i) for i in range(slot_count)]
        placeholders += [_html_placeholder(i) for i in range(slot_count)]
        placeholders += [_header_placeholder(i) for i in range(header_count)]
        index = {p.encode(): i for i, p in enumerate(placeholders)}
        pattern = re.compile(b"|".join(re.escape(p) for p in index))
        self.pieces: list[bytes] = []
        self.slots: list[int] = []
        # Per line with slots: (its length without them, their indexes), to keep every line in bounds.
        self.lines: list[tuple[int, list[int]]] = []
        start = 0
        for match in pattern.finditer(data):
            self.pieces.append(data[start : match.start()])
            self.slots.append(index[match.group()])
            start = match.end()
        self.pieces.append(data[start:])
        for line in data.split(b"\r\n"):
            found = [index[m.group()] for m in pattern.finditer(line)]
            if found:
                self.lines.append((len(pattern.sub(b"", line)), found))
        # A bytes %-template of the pieces ("%" doubled), its fields the values in slot order.
        self._template = b"%b".join(piece.replace(b"%", b"%%") for piece in self.pieces)
        # Per number of slots on a line, the longest rest of such a line: with the longest value, a
        # bound that spares checking each line for nearly every message.
        self._bounds: dict[int, int] = {}
        for base, found in self.lines:
            self._bounds[len(found)] = max(base, self._bounds.get(len(found), 0))

    def render(self, fills: _Fills) -> bytes | None:
        fixed = (fills.to, fills.date, fills.message_id)
        values = [value.encode() for value in (*fixed, *fills.text, *fills.html, *fills.headers)]
        longest = max(map(len, values))
        if any(base + count * longest > _MAX_LINE for count, base in self._bounds.items()):
            for base, found in self.lines:
                if base + sum(len(values[i]) for i in found) > _MAX_LINE:
                    return None
        return self._template % tuple([values[slot] for slot in self.slots])


def _header_placeholder(i: int) -> str:
    return f"<https://h{i}.{_PLACEHOLDER}.invalid/>"


def _text_placeholder(i: int) -> str:
    return f"https://t{i}.{_PLACEHOLDER}.invalid/"


def _html_placeholder(i: int) -> str:
    return f"https://m{i}.{_PLACEHOLDER}.invalid/"


_MAX_TEMPLATES = 64
"""Templates an assembler keeps: a walk's languages (and variants) times its senders, with room."""


class PageAssembler:
    """Builds the dot-stuffed bytes of messages; a template lives as long as its body template is in use.

    Keyed by the ``BodyTemplate`` object itself (identity: it is ``eq=False``), which the key holds, so
    an id is never reused for another body. A page walk renders its bodies once and sends every page with
    them, so a template is built and verified once per walk and language, not once per page: three
    languages cost three builds per page before, ~3 ms each, a tenth of a 500-message page's time."""

    def __init__(self, *, sender: str) -> None:
        self._sender = sender
        self._templates: dict[tuple[object, ...] | None, _Template | None] = {}
        self._boundaries: dict[BodyTemplate, str] = {}
        self.spliced = 0
        """Messages built by splicing (the rest took the reference path)."""

    def build(self, message: OutgoingEmail, *, message_id: str, date: str) -> bytes:
        """The message's SMTP text (dot-stuffed, ending ``.\r\n``); raises ValueError like
        ``build_message`` for a message that must not be sent."""
        fills = self._fills(message, message_id=message_id, date=date)
        key, template, data = None, None, None
        if fills is not None:
            key, template = self._template_for(message)
            data = None if template is None else template.render(fills)
            if data is not None and template is not None and template.verified:
                self.spliced += 1
                return data
        reference = dot_stuffed(
            build_message(
                message,
                sender=self._sender,
                message_id=message_id,
                date=date,
                boundary=self.boundary(message),
            )
        )
        if data is not None and template is not None:  # a template's first splice: checked once
            if data == reference:
                template.verified = True
                self.spliced += 1
            else:
                log.warning("smtp.splice_mismatch")
                self._templates[key] = None
        return reference

    def boundary(self, message: OutgoingEmail) -> str | None:
        """The page's boundary for a message with a body template (None: the generator draws one)."""
        body = message.body_template
        if body is None:
            return None  # the generator draws and checks one, as it always did
        found = self._boundaries.get(body)
        if found is None:
            found = new_boundary()
            while f"--{found}" in body.text or f"--{found}" in body.html:
                found = new_boundary()  # never in the content (the generator's rule, made stricter)
            if len(self._boundaries) >= _MAX_TEMPLATES:
                self._boundaries.clear()  # older walks' bodies; whole, so no lock is needed
            self._boundaries[body] = found
        return found

    def _fills(self, message: OutgoingEmail, *, message_id: str, date: str) -> _Fills | None:
        body, fill = message.body_template, message.fills
        if body is None or fill is None or not _PLAIN_ADDRESS.match(message.to):
            return None
        # A header whose value is not plain (List-ID's phrase) is the page's own, baked into the template
        # (``_template_for`` keys on it); only plain values are spliced.
        text, html = fill
        if len(text) != len(body.slots) or len(html) != len(body.slots):
            return None
        # An html fill is its text fill unless escaping changed it (compose passes the same string).
        if not all(_plain(t) and (h is t or _plain(h)) for t, h in zip(text, html, strict=True)):
            return None
        return _Fills(message.to, date, message_id, list(message.headers.values()), text, html)

    def _template_for(self, message: OutgoingEmail) -> tuple[tuple[object, ...], _Template | None]:
        body = message.body_template
        assert body is not None
        utf8 = not message.to.isascii()
        baked = tuple((name, None if _plain(value) else value) for name, value in message.headers.items())
        key = (body, message.subject, baked, utf8)
        if key in self._templates:
            return key, self._templates[key]
        if len(self._templates) >= _MAX_TEMPLATES:
            self._templates.clear()
        template = self._templates[key] = self._make(message, body, utf8=utf8)
        return key, template

    def _make(self, message: OutgoingEmail, body: BodyTemplate, *, utf8: bool) -> _Template | None:
        placeholder = OutgoingEmail(
            key=message.key,
            to=_TO,
            subject=message.subject,
            text=body.text_cut.join([_text_placeholder(i) for i in range(len(body.slots))]),
            html=body.html_cut.join([_html_placeholder(i) for i in range(len(body.slots))]),
            headers={
                name: _header_placeholder(i) if _plain(value) else value
                for i, (name, value) in enumerate(message.headers.items())
            },
        )
        try:
            built = build_message(
                placeholder,
                sender=self._sender,
                message_id=_ID,
                date=_DATE,
                boundary=self.boundary(message),
                utf8=utf8,
            )
        except ValueError:
            return None  # the reference path raises it again, message by message
        data = dot_stuffed(built)
        if any(
            f"\r\nContent-Transfer-Encoding: {cte}".encode() in data for cte in ("quoted-printable", "base64")
        ):
            return None  # the encoded text depends on where each fill falls
        return _Template(data, len(body.slots), len(message.headers))


def _plain(value: str) -> bool:
    """URL characters the library renders verbatim: no space to fold at, no quote or backslash, no
    encoded word, not a leading dot (transparency) or dash (a boundary line)."""
    return bool(_PLAIN_VALUE.match(value)) and "=?" not in value and not value.startswith((".", "-"))
