"""The Postmark batch body assembled once per page is byte for byte the one built message by message
(issue 23 item 2), over text hypothesis draws: non-ASCII, right-to-left, quotes, backslashes, control
and line-separator characters, emoji, and the slot at the start, the end, twice or not at all."""

from __future__ import annotations

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from campaign_engine.delivery.email.postmark_body import PageBody, message_fields
from campaign_engine.delivery.email.provider import BodyTemplate, OutgoingEmail

SLOT = "https://unsubscribe.invalid/slot-7f3c9a1e"
# Any code point but a lone surrogate (no JSON encoder writes one), weighted toward the ones JSON escapes.
_TEXT = st.text(
    alphabet=st.one_of(
        st.sampled_from(
            ['"', "\\", "\n", "\r", "\t", "\x00", "\x1f", "\u2028", "\u2029", "\u05d0", "\u0627", "😀", "/"]
        ),
        st.characters(blacklist_categories=("Cs",)),
    ),
    max_size=40,
)
_BODY = st.lists(_TEXT, min_size=1, max_size=4).map(SLOT.join)


def _message(
    template: BodyTemplate, fills: tuple[str, str], *, to: str, tag: str | None, meta: bool
) -> OutgoingEmail:
    text_fill, html_fill = fills
    return OutgoingEmail(
        key=to,
        to=to,
        subject='Réunion — اجتماع "today"',
        html=template.html.replace(template.slot, html_fill),
        text=template.text.replace(template.slot, text_fill),
        headers={"List-Unsubscribe": f"<{text_fill}>", "List-Unsubscribe-Post": "List-Unsubscribe=One-Click"},
        tag=tag,
        metadata={"campaignId": "alpha~launch", "profileId": to} if meta else {},
        sender="École <news@école.example>" if tag else None,
        body_template=template,
        fills=fills,
    )


@settings(max_examples=300, deadline=None)
@given(
    html=_BODY,
    text=_BODY,
    links=st.lists(st.tuples(_TEXT, _TEXT), min_size=1, max_size=5),
    tag=st.sampled_from([None, "launch"]),
    meta=st.booleans(),
)
def test_a_page_assembled_once_is_the_page_built_message_by_message(
    html: str, text: str, links: list[tuple[str, str]], tag: str | None, meta: bool
) -> None:
    template = BodyTemplate(text=text, html=html, slot=SLOT)
    messages = [
        _message(
            template,
            (f"https://u.example/{a}", f"https://u.example/{b}&amp;"),
            to=f"p{i}@x.example",
            tag=tag,
            meta=meta,
        )
        for i, (a, b) in enumerate(links)
    ]
    reference = orjson.dumps(
        [message_fields(m, sender="news@campaigns.test", stream="broadcast") for m in messages]
    )
    assert PageBody(sender="news@campaigns.test", stream="broadcast").encode(messages) == reference


def test_a_message_without_a_template_takes_the_reference_path() -> None:
    plain = OutgoingEmail(key="k", to="a@x.example", subject="s", html="<p>h</p>", text="t", headers={})
    reference = orjson.dumps([message_fields(plain, sender="s@x.example", stream="b")])
    assert PageBody(sender="s@x.example", stream="b").encode([plain]) == reference
