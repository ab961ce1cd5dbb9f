"""SmtpProvider against a real aiosmtpd server on loopback, scripted per recipient and per stage: what is
accepted, refused before DATA, uncertain after it, and never sent."""

from __future__ import annotations

import email

import pytest

from campaign_engine.delivery.email.smtp import SmtpProvider
from tests.conftest import free_port
from tests.support.smtp_relay import (
    SENDER,
    SmtpServer,
    outcomes,
    outgoing,
    parse,
    provider_for,
)

# --- accepted -------------------------------------------------------------------------------------------


def test_batch_goes_over_one_connection_as_multipart_alternative(smtp_server: SmtpServer) -> None:
    results = provider_for(smtp_server).send_batch([outgoing(1), outgoing(2)])
    assert outcomes(results) == [("p1", "accepted", None), ("p2", "accepted", None)]
    received = smtp_server.handler.received
    assert len({r.connection for r in received}) == 1
    assert [r.rcpt_tos for r in received] == [["user1@rcpt.test"], ["user2@rcpt.test"]]
    assert received[0].mail_from == "news@sender.test"
    msg = parse(received[0])
    assert msg["From"] == SENDER
    assert msg["To"] == "user1@rcpt.test"
    assert str(email.header.make_header(email.header.decode_header(msg["Subject"]))) == "Subject 1 — café"
    assert msg["Message-ID"] == results[0].provider_message_id
    assert msg["List-Unsubscribe"] == "<https://c.test/u/1>"
    assert msg["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    assert msg.get_content_type() == "multipart/alternative"
    parts = {p.get_content_type(): p.get_payload(decode=True) for p in msg.walk() if not p.is_multipart()}
    assert parts["text/plain"].strip() == b"Hello 1"  # type: ignore[union-attr]
    assert parts["text/html"].strip() == b"<p>Hello 1</p>"  # type: ignore[union-attr]


def test_a_long_list_unsubscribe_url_is_sent_verbatim(smtp_server: SmtpServer) -> None:
    """Mail clients parse ``List-Unsubscribe: <url>`` literally; a folded RFC 2047 word breaks one-click."""
    url = "<https://campaigns.example.org/campaigns/unsubscribe?token=" + "x" * 150 + ">"
    message = outgoing(
        1, headers={"List-Unsubscribe": url, "List-Unsubscribe-Post": "List-Unsubscribe=One-Click"}
    )
    provider_for(smtp_server).send_batch([message])
    raw = smtp_server.handler.received[0].content
    assert f"List-Unsubscribe: {url}".encode() in raw


def test_leading_dots_survive_transparency(smtp_server: SmtpServer) -> None:
    text = "line\n.\n..two\n.end"
    results = provider_for(smtp_server).send_batch([outgoing(1, text=text)])
    assert results[0].outcome == "accepted"
    plain = next(
        p for p in parse(smtp_server.handler.received[0]).walk() if p.get_content_type() == "text/plain"
    )
    assert plain.get_payload(decode=True).replace(b"\r\n", b"\n").rstrip(b"\n") == text.encode()  # type: ignore[union-attr]


# --- refusals before DATA -------------------------------------------------------------------------------


def test_rcpt_refusals_are_rejected_or_throttled_and_the_rest_still_goes(smtp_server: SmtpServer) -> None:
    smtp_server.handler.rcpt_replies = {
        "gone@rcpt.test": "550 5.1.1 No such user",
        "busy@rcpt.test": "451 4.7.1 Try again later",
        "full@rcpt.test": "452 4.2.2 Mailbox full",
    }
    batch = [
        outgoing(1, to="gone@rcpt.test"),
        outgoing(2, to="busy@rcpt.test"),
        outgoing(3),
        outgoing(4, to="full@rcpt.test"),
        outgoing(5),
    ]
    results = provider_for(smtp_server).send_batch(batch)
    assert outcomes(results) == [
        ("p1", "rejected", "rcpt:550"),
        ("p2", "throttled", "rcpt:451"),
        ("p3", "accepted", None),
        ("p4", "throttled", "rcpt:452"),
        ("p5", "accepted", None),
    ]
    assert [r.rcpt_tos for r in smtp_server.handler.received] == [["user3@rcpt.test"], ["user5@rcpt.test"]]


def test_421_at_mail_throttles_this_and_every_later_message(smtp_server: SmtpServer) -> None:
    smtp_server.handler.mail_reply = "421 4.3.2 Service shutting down"
    results = provider_for(smtp_server).send_batch([outgoing(1), outgoing(2)])
    assert outcomes(results) == [("p1", "throttled", "mail:421"), ("p2", "throttled", "not_sent")]
    assert smtp_server.handler.received == []


# --- after DATA: uncertain ------------------------------------------------------------------------------


def test_drop_after_data_is_uncertain_and_later_messages_are_not_sent(smtp_server: SmtpServer) -> None:
    smtp_server.handler.drop_after_data = True
    results = provider_for(smtp_server).send_batch([outgoing(1), outgoing(2)])
    assert [(r.key, r.outcome) for r in results] == [("p1", "uncertain"), ("p2", "throttled")]
    assert results[0].reason is not None
    assert results[0].reason.startswith("after_data:")
    assert results[1].reason == "not_sent"
    assert len(smtp_server.handler.received) == 1  # the server had it: a retry could duplicate it


@pytest.mark.parametrize("reply", ["451 4.3.0 Queue trouble", "554 5.7.1 Content rejected"])
def test_failure_reply_after_data_is_uncertain(smtp_server: SmtpServer, reply: str) -> None:
    smtp_server.handler.data_reply = reply
    results = provider_for(smtp_server).send_batch([outgoing(1), outgoing(2)])
    code = reply.split()[0]
    assert outcomes(results) == [
        ("p1", "uncertain", f"after_data:{code}"),
        ("p2", "uncertain", f"after_data:{code}"),
    ]


def test_timeout_waiting_for_the_final_reply_is_uncertain(smtp_server: SmtpServer) -> None:
    smtp_server.handler.hang_after_data = 1.0
    results = provider_for(smtp_server, timeout=0.3).send_batch([outgoing(1), outgoing(2)])
    assert [(r.key, r.outcome) for r in results] == [("p1", "uncertain"), ("p2", "throttled")]
    assert len(smtp_server.handler.received) == 1


# --- nothing sent ---------------------------------------------------------------------------------------


def test_connection_refused_throttles_everything() -> None:
    provider = SmtpProvider(host="127.0.0.1", port=free_port(), sender=SENDER, timeout=2.0)
    results = provider.send_batch([outgoing(1), outgoing(2)])
    assert {r.outcome for r in results} == {"throttled"}
    assert all(r.reason is not None and r.reason.startswith("connect:") for r in results)


def test_unsafe_messages_are_rejected_before_sending(smtp_server: SmtpServer) -> None:
    batch = [
        outgoing(1, to="x@rcpt.test>\r\nRCPT TO:<y@rcpt.test"),
        outgoing(2, headers={"Subject": "override"}),
        outgoing(3, headers={"X-Evil": "a\r\nBcc: y@rcpt.test"}),
        outgoing(4),
    ]
    results = provider_for(smtp_server).send_batch(batch)
    assert outcomes(results) == [
        ("p1", "rejected", "invalid_message"),
        ("p2", "rejected", "invalid_message"),
        ("p3", "rejected", "invalid_message"),
        ("p4", "accepted", None),
    ]
    assert [r.rcpt_tos for r in smtp_server.handler.received] == [["user4@rcpt.test"]]
