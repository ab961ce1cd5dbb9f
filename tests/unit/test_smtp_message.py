"""Messages assembled once per page are byte for byte what the email package builds.

Each message is composed as the email worker composes it (real templates, a signed unsubscribe link)
and built twice: by ``PageAssembler`` and by the reference ``build_message`` with the same Message-ID,
Date and boundary. Content varies where the library's rendering could: non-ASCII and right-to-left
subjects and bodies, subjects long enough to fold into encoded words, SMTPUTF8 addresses, leading dots,
links and lines near the 998-character limit (where splicing must give way to the reference path).
"""

from __future__ import annotations

import email
import email.policy
from email.utils import formatdate, make_msgid
from urllib.parse import unquote

import pytest

from campaign_engine.delivery.email.compose import EmailContent, compose_email, email_content_for
from campaign_engine.delivery.email.provider import OutgoingEmail
from campaign_engine.delivery.email.smtp_message import PageAssembler, build_message, dot_stuffed
from campaign_engine.domain.campaign import CampaignPublic
from campaign_engine.unsubscribe.tokens import LinkCampaign, UnsubscribeLink, UnsubscribeTokens

SENDER = "Announcements <news@sender.test>"
TOKENS = UnsubscribeTokens("test-secret-" + "s" * 40)

SUBJECTS = [
    "Plain news",
    "Café — ünïcødé, naïve",
    "إعلان جديد: تحديث الخدمة",  # Arabic, right to left
    "עדכון חשוב לכל המשתמשים",  # Hebrew
    "A long subject that goes on " * 5 + "and on",  # 146 characters, the most a subject may have
    "Ünïcødé " * 18,  # folds into several encoded words
    "emoji 🎉 and CJK 新しいお知らせ",
]
BODIES = [
    "One\nTwo",
    ".starts with a dot\n..two dots\n.",
    "مرحبا بكم في الخدمة الجديدة\nשלום עולם\nmixed עברית and English",  # noqa: RUF001 - RTL on purpose
    "x" * 1200,  # a line the library must re-encode: the reference path
    "word " * 400,  # one long line of words
    "Tabs\tand  double  spaces\r\nCRLF line\rCR line",
]
ADDRESSES = [
    "user@example.com",
    "first.last+tag@sub.example.org",
    "josé@example.com",  # SMTPUTF8: raw UTF-8 headers
    "用户@example.com",
    "odd..dots@example.com",  # not a dot-atom: rendered by the reference path
    "o'brien@example.com",
]


def content(subject: str, body: str, *, name: str = "Test") -> EmailContent:
    campaign = CampaignPublic.model_validate(
        {
            "id": "c-1",
            "name": name,
            "status": "live",
            "channels": ["email"],
            "tenantId": "default",
            "email": {"subject": subject, "title": subject[:40], "body": body, "ctaLabel": "Öffnen"},
            "createdAt": "2026-01-01T00:00:00.000000Z",
            "updatedAt": "2026-01-01T00:00:00.000000Z",
            "revision": 1,
        }
    )
    return email_content_for(
        campaign, origins={"default": "https://app.example.org"}, tenants={}, default_tenant="default"
    )


def page(shared: EmailContent, *, domain: str = "campaigns.example.org") -> list[OutgoingEmail]:
    return [
        compose_email(
            shared,
            key=f"p{i}",
            to=address,
            unsubscribe_id=f"unsub-{i}-" + "u" * (i * 7),
            tokens=TOKENS,
            domain_name=domain,
        )
        for i, address in enumerate(ADDRESSES)
    ]


def assert_same_bytes(messages: list[OutgoingEmail]) -> PageAssembler:
    assembler = PageAssembler(sender=SENDER)
    date = formatdate(localtime=False)
    for message in messages:
        message_id = make_msgid(domain="sender.test")
        spliced = assembler.build(message, message_id=message_id, date=date)
        reference = build_message(
            message, sender=SENDER, message_id=message_id, date=date, boundary=assembler.boundary(message)
        )
        assert spliced == dot_stuffed(reference), message.key
    return assembler


@pytest.mark.parametrize("subject", SUBJECTS)
@pytest.mark.parametrize("body", BODIES)
def test_spliced_messages_are_the_reference_bytes(subject: str, body: str) -> None:
    assembler = assert_same_bytes(page(content(subject, body)))
    if len(body) < 998:  # parts the library keeps 7/8-bit: everyone but the odd address is spliced
        assert assembler.spliced == len(ADDRESSES) - 1


@pytest.mark.parametrize("length", [600, 700, 740, 760, 780, 800, 900, 990, 1100])
def test_links_near_the_line_limit_are_exact_on_either_path(length: int) -> None:
    domain = ".".join(["d" * 60] * (length // 61)) + ".example.org"
    assert_same_bytes(page(content("Subject", "Body"), domain=domain))


def test_a_page_needs_one_reference_build_per_template() -> None:
    shared = content("Café", "Hello")
    messages = [
        compose_email(
            shared,
            key=f"p{i}",
            to=f"user{i}@example.com",
            unsubscribe_id=f"u{i}",
            tokens=TOKENS,
            domain_name="c.test",
        )
        for i in range(50)
    ]
    assembler = assert_same_bytes(messages)
    assert assembler.spliced == 50
    assert len({assembler.boundary(m) for m in messages}) == 1


def test_the_spliced_message_parses_with_each_recipient_s_values() -> None:
    messages = page(content("Café", "Hello"))
    assembler = PageAssembler(sender=SENDER)
    for message in messages[:2]:
        raw = assembler.build(message, message_id=make_msgid(domain="sender.test"), date=formatdate())
        parsed = email.message_from_bytes(raw[: -len(b".\r\n")], policy=email.policy.default)
        assert parsed["To"] == message.to
        assert parsed["List-Unsubscribe"] == message.headers["List-Unsubscribe"]
        assert message.fills is not None
        plain = str(parsed.get_body(("plain",)).get_content())  # type: ignore[union-attr]
        assert all(fill in plain for fill in message.fills[0])  # the unsubscribe and web-view links


def test_unsafe_messages_raise_on_either_path() -> None:
    [good] = page(content("Subject", "Body"))[:1]
    assembler = PageAssembler(sender=SENDER)
    for bad in (
        OutgoingEmail(**{**vars(good), "to": "x@rcpt.test>\r\nRCPT TO:<y@rcpt.test"}),
        OutgoingEmail(**{**vars(good), "headers": {"Subject": "override"}}),
        OutgoingEmail(**{**vars(good), "headers": {"X-Evil": "a\r\nBcc: y@rcpt.test"}}),
    ):
        with pytest.raises(ValueError):
            assembler.build(bad, message_id="<a@b>", date=formatdate())


@pytest.mark.parametrize(
    "value",
    [
        "<https://c.test/u?a=1&b=2>",
        '<https://c.test/"quoted">',
        "<https://c.test/back\\slash>",
        "<https://c.test/with space>",
        "=?utf-8?q?encoded?=",
        "<https://c.test/ünï>",
        "(comment) <https://c.test/>",
    ],
)
def test_odd_header_values_are_exact_whichever_path_they_take(value: str) -> None:
    shared = content("Subject", "Body")
    messages = [
        compose_email(
            shared, key="p0", to="a@example.com", unsubscribe_id="u0", tokens=TOKENS, domain_name="c.test"
        )
    ]
    messages.append(
        OutgoingEmail(**{**vars(messages[0]), "key": "p1", "headers": {"List-Unsubscribe": value}})
    )
    assert_same_bytes(messages)


LIST_NAMES = {
    "Plain news": "Plain news <c-1.default.campaigns.example.org>",
    'Spring: the "big" day': '"Spring: the \\"big\\" day" <c-1.default.campaigns.example.org>',
    "Frühling مرحبا": "=?utf-8?b?RnLDvGhsaW5nINmF2LHYrdio2Kc=?= <c-1.default.campaigns.example.org>",
}


@pytest.mark.parametrize("name", list(LIST_NAMES))
def test_every_message_carries_its_list_id_and_is_still_spliced(name: str) -> None:
    """RFC 2919's List-ID: the campaign's name as a phrase (quoted, or encoded when not ASCII) and an id
    under our domain; a header common to the page is baked into its template, so splicing still holds."""
    messages = page(content("Subject", "Body", name=name), domain="campaigns.example.org:8443")
    assert {m.headers["List-ID"] for m in messages} == {LIST_NAMES[name]}
    assembler = assert_same_bytes(messages)
    assert assembler.spliced == len(ADDRESSES) - 1
    parsed = email.message_from_bytes(
        assembler.build(messages[0], message_id="<x@y>", date=formatdate()), policy=email.policy.default
    )
    assert str(parsed["List-ID"]).endswith("<c-1.default.campaigns.example.org>")
    assert name.split()[0] in str(parsed["List-ID"])


def test_pages_of_one_walk_reuse_their_templates_and_stay_exact() -> None:
    """The assembler outlives a page: the second page of the same bodies builds nothing new, with a new
    Date, and every message is still the reference bytes; a new body gets a template of its own."""
    languages = [content("News", "Hello"), content("Noticias", "Hola"), content("أخبار", "مرحبا")]
    assembler = PageAssembler(sender=SENDER)
    for page_number, date in enumerate((formatdate(0), formatdate(86_400))):
        for shared in languages:
            for i in range(3):
                message = compose_email(
                    shared,
                    key=f"p{page_number}-{i}",
                    to=f"user{i}@example.com",
                    unsubscribe_id=f"u{page_number}-{i}",
                    tokens=TOKENS,
                    domain_name="c.test",
                )
                message_id = make_msgid(domain="sender.test")
                built = assembler.build(message, message_id=message_id, date=date)
                reference = build_message(
                    message,
                    sender=SENDER,
                    message_id=message_id,
                    date=date,
                    boundary=assembler.boundary(message),
                )
                assert built == dot_stuffed(reference)
        if page_number == 0:
            templates = dict(assembler._templates)
    assert assembler._templates == templates  # the second page built no template
    assert len(templates) == len(languages)
    assert assembler.spliced == 2 * 3 * len(languages)


def test_the_unsubscribe_link_names_its_campaign_and_a_self_tests_none() -> None:
    shared = content("Plain news", "One")

    def link_of(message: OutgoingEmail) -> UnsubscribeLink:
        token = message.headers["List-Unsubscribe"].split("token=", 1)[1].rstrip(">")
        return TOKENS.read_link(unquote(token))

    sent = compose_email(
        shared, key="p0", to="a@example.com", unsubscribe_id="u0", tokens=TOKENS, domain_name="c.test"
    )
    assert link_of(sent).campaign == LinkCampaign("c-1", "2026-01-01T00:00:00.000000Z")
    test = compose_email(
        shared,
        key="t0",
        to="a@example.com",
        unsubscribe_id="u0",
        tokens=TOKENS,
        domain_name="c.test",
        test=True,
    )
    assert (link_of(test).tenant_id, link_of(test).campaign) == ("default", None)
