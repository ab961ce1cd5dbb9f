"""The Postmark batch body assembled once per page is byte for byte the one built message by message
, over text hypothesis draws: non-ASCII, right-to-left, quotes, backslashes, control
and line-separator characters, emoji, and several slots (unsubscribe, web view, and more to
come) each at the start, the end, twice, in any order or not at all."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from campaign_engine.delivery.email.postmark_body import PageBody, message_fields
from campaign_engine.delivery.email.provider import BodyTemplate, OutgoingEmail

SLOTS = (
    "https://unsubscribe.invalid/slot-7f3c9a1e",
    "https://view.invalid/slot-7f3c9a1e",
    "https://cta.invalid/slot-7f3c9a1e",
)
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
_BODY = st.lists(st.tuples(_TEXT, st.sampled_from(SLOTS)), max_size=6).flatmap(
    lambda cuts: _TEXT.map(lambda tail: "".join(text + slot for text, slot in cuts) + tail)
)


def _filled(part: str, fills: tuple[str, ...]) -> str:
    """The reference: each slot replaced in turn (fills carry no slot, so order cannot matter)."""
    for slot, fill in zip(SLOTS, fills, strict=True):
        part = part.replace(slot, fill)
    return part


def _message(
    template: BodyTemplate,
    fills: tuple[tuple[str, ...], tuple[str, ...]],
    *,
    to: str,
    tag: str | None,
    meta: bool,
) -> OutgoingEmail:
    text_fills, html_fills = fills
    return OutgoingEmail(
        key=to,
        to=to,
        subject='Réunion — اجتماع "today"',
        html=_filled(template.html, html_fills),
        text=_filled(template.text, text_fills),
        headers={
            "List-Unsubscribe": f"<{text_fills[0]}>",
            "List-Unsubscribe-Post": "List-Unsubscribe=One-Click",
        },
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
    links=st.lists(st.tuples(_TEXT, _TEXT, _TEXT), min_size=1, max_size=5),
    tag=st.sampled_from([None, "launch"]),
    meta=st.booleans(),
)
def test_a_page_assembled_once_is_the_page_built_message_by_message(
    html: str, text: str, links: list[tuple[str, str, str]], tag: str | None, meta: bool
) -> None:
    template = BodyTemplate(text=text, html=html, slots=SLOTS)
    messages = [
        _message(
            template,
            (
                (f"https://u.example/{a}", f"https://v.example/{b}", f"https://c.example/{c}"),
                (f"https://u.example/{a}&amp;", f"https://v.example/{b}", f"https://c.example/{c}&amp;"),
            ),
            to=f"p{i}@x.example",
            tag=tag,
            meta=meta,
        )
        for i, (a, b, c) in enumerate(links)
    ]
    reference = orjson.dumps(
        [message_fields(m, sender="news@campaigns.test", stream="broadcast") for m in messages]
    )
    assert PageBody(sender="news@campaigns.test", stream="broadcast").encode(messages) == reference


def test_a_message_without_a_template_takes_the_reference_path() -> None:
    plain = OutgoingEmail(key="k", to="a@x.example", subject="s", html="<p>h</p>", text="t", headers={})
    reference = orjson.dumps([message_fields(plain, sender="s@x.example", stream="b")])
    assert PageBody(sender="s@x.example", stream="b").encode([plain]) == reference


def test_slots_must_be_distinct_and_none_inside_another() -> None:
    with pytest.raises(ValueError, match="distinct"):
        BodyTemplate(text="", html="", slots=(SLOTS[0], SLOTS[0]))
    with pytest.raises(ValueError, match="contain"):
        BodyTemplate(text="", html="", slots=("https://s.invalid/1", "https://s.invalid/12"))
