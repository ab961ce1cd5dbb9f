"""The pooled, pipelined SMTP path against a real loopback server that cuts on cue.

At most one attempt per claimed recipient must hold whatever step the connection dies at: a message
the server stored is never reported ``throttled`` or ``rejected`` (that would release its claim and
send it again), and a message reported ``accepted`` is one the server stored. The worker's retry is
played here by sending the ``throttled`` messages again, as it does after releasing their claims.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import SecretStr

from campaign_engine.config import Settings
from campaign_engine.delivery.email.provider import OutgoingEmail, SendResult
from campaign_engine.delivery.email.smtp import SmtpProvider
from campaign_engine.wiring import build_email_provider
from tests.support.smtp_sink import Cut, SinkState, SmtpSink, running_sink

SENDER = "Announcements <news@sender.test>"


@pytest.fixture(params=[True, False], ids=["pipelining", "lock-step"])
def sink(request: pytest.FixtureRequest) -> Iterator[SmtpSink]:
    with running_sink(SinkState(pipelining=request.param)) as running:
        yield running


@pytest.fixture
def providers() -> Iterator[list[SmtpProvider]]:
    made: list[SmtpProvider] = []
    yield made
    for provider in made:
        provider.close()


def provider(sink: SmtpSink, made: list[SmtpProvider], **options: Any) -> SmtpProvider:
    # A generous reply bound: on a loaded machine a 2 s one dropped healthy sessions mid-page, which
    # the connection counts below would read as the pool's doing.
    created = SmtpProvider(host="127.0.0.1", port=sink.port, sender=SENDER, timeout=30.0, **options)
    made.append(created)
    return created


def message(n: int) -> OutgoingEmail:
    return OutgoingEmail(
        key=f"p{n}",
        to=f"user{n}@rcpt.test",
        subject=f"Subject {n}",
        html=f"<p>Hello {n}</p>",
        text=f"Hello {n}\n.\n..dots",
        headers={"List-Unsubscribe": f"<https://c.test/u/{n}>"},
    )


def to_of(key: str) -> str:
    return f"user{key[1:]}@rcpt.test"


def test_a_pipelining_relay_gets_each_message_in_one_round_trip(
    sink: SmtpSink, providers: list[SmtpProvider]
) -> None:
    results = provider(sink, providers, max_connections=1).send_batch([message(n) for n in range(50)])
    assert {r.outcome for r in results} == {"accepted"}
    assert sink.state.received == [f"user{n}@rcpt.test" for n in range(50)]
    assert all(r.provider_message_id for r in results)
    # One read held a message's text and the next MAIL, RCPT and DATA; lock-step sends one at a time.
    assert sink.state.max_commands_per_read == (3 if sink.state.pipelining else 1)


@pytest.mark.parametrize("cut", ["rcpt", "data", "body", "dot"])
@pytest.mark.parametrize("at", [0, 2, 4])
def test_a_cut_at_any_step_never_sends_a_recipient_twice(
    sink: SmtpSink, providers: list[SmtpProvider], cut: Cut, at: int
) -> None:
    sink.state.cuts = {f"user{at}@rcpt.test": cut}
    batch = [message(n) for n in range(5)]
    sender = provider(sink, providers, max_connections=1)
    first = sender.send_batch(batch)
    stored = Counter(sink.state.received)
    expected = "throttled" if cut in ("rcpt", "data") else "uncertain"
    assert [r.outcome for r in first] == ["accepted"] * at + [expected] + ["throttled"] * (4 - at)
    assert all(r.reason == "not_sent" for r in first[at + 1 :])
    _assert_consistent(first, stored)

    retried = [m for m, r in zip(batch, first, strict=True) if r.outcome == "throttled"]
    second = sender.send_batch(retried)  # a fresh connection: the cut one left the pool
    assert all(r.outcome == "accepted" for r in second)
    stored = Counter(sink.state.received)
    assert max(stored.values()) == 1  # nobody twice
    uncertain = {to_of(r.key) for r in first if r.outcome == "uncertain"}
    assert set(stored) | uncertain == {to_of(m.key) for m in batch}  # everyone else exactly once


def _assert_consistent(results: list[SendResult], stored: Counter[str]) -> None:
    for result in results:
        to = to_of(result.key)
        if result.outcome == "accepted":
            assert stored[to] == 1
        elif result.outcome in ("throttled", "rejected"):
            assert stored[to] == 0, f"{result.key} was stored but reported {result.outcome}"


def test_a_refused_recipient_mid_pipeline_is_rejected_and_the_rest_go(
    sink: SmtpSink, providers: list[SmtpProvider]
) -> None:
    sink.state.rcpt_replies = {"user1@rcpt.test": b"550 5.1.1 No such user\r\n"}
    results = provider(sink, providers).send_batch([message(n) for n in range(4)])
    assert [(r.outcome, r.reason) for r in results] == [
        ("accepted", None),
        ("rejected", "rcpt:550"),
        ("accepted", None),
        ("accepted", None),
    ]
    assert sink.state.received == ["user0@rcpt.test", "user2@rcpt.test", "user3@rcpt.test"]


def test_a_relay_without_smtputf8_rejects_only_that_recipient(providers: list[SmtpProvider]) -> None:
    with running_sink(SinkState(smtputf8=False)) as sink:
        utf8 = OutgoingEmail("jose", "josé@rcpt.test", "Hola", "<p>Hola</p>", "Hola", {})
        results = provider(sink, providers).send_batch([message(0), utf8, message(1)])
        assert [(r.outcome, r.reason) for r in results] == [
            ("accepted", None),
            ("rejected", "smtputf8_not_offered"),
            ("accepted", None),
        ]


# --- the pool ------------------------------------------------------------------------------------------


def test_sessions_are_reused_across_batches(sink: SmtpSink, providers: list[SmtpProvider]) -> None:
    sender = provider(sink, providers, max_connections=1)
    for page in range(3):
        results = sender.send_batch([message(page * 10 + n) for n in range(10)])
        assert {r.outcome for r in results} == {"accepted"}
    assert sink.state.connections == 1


def test_a_session_the_relay_dropped_while_idle_is_replaced_without_losing_the_page(
    sink: SmtpSink, providers: list[SmtpProvider]
) -> None:
    sender = provider(sink, providers, max_connections=1)
    sender.send_batch([message(0)])
    sink.state.hang_up_reused = True
    results = sender.send_batch([message(n) for n in range(1, 4)])
    assert {r.outcome for r in results} == {"accepted"}
    assert sink.state.connections == 2
    assert sorted(sink.state.received) == [f"user{n}@rcpt.test" for n in range(4)]


def test_a_session_carries_at_most_its_message_limit(sink: SmtpSink, providers: list[SmtpProvider]) -> None:
    sender = provider(sink, providers, max_connections=1, max_messages_per_connection=3)
    results = sender.send_batch([message(n) for n in range(10)])
    assert {r.outcome for r in results} == {"accepted"}
    assert sink.state.connections == 4
    assert len(sink.state.received) == 10


def test_an_idle_session_is_closed_and_replaced(sink: SmtpSink, providers: list[SmtpProvider]) -> None:
    sender = provider(sink, providers, max_connections=1, idle_seconds=0.2)
    sender.send_batch([message(0)])
    time.sleep(0.5)
    assert {r.outcome for r in sender.send_batch([message(1)])} == {"accepted"}
    assert sink.state.connections == 2


def test_a_page_spreads_over_the_connection_bound(sink: SmtpSink, providers: list[SmtpProvider]) -> None:
    sender = provider(sink, providers, max_connections=4)
    results = sender.send_batch([message(n) for n in range(500)])
    assert {r.outcome for r in results} == {"accepted"}
    assert sorted(sink.state.received) == sorted(f"user{n}@rcpt.test" for n in range(500))
    results = sender.send_batch([message(n) for n in range(500, 1000)])
    assert {r.outcome for r in results} == {"accepted"}
    assert sink.state.connections == 4  # the bound, reused by the second page


def test_the_settings_bound_the_pool_the_worker_builds(sink: SmtpSink) -> None:
    settings = Settings(
        _env_file=None,  # type: ignore[call-arg]
        campaign_email_provider="smtp",
        smtp_host="127.0.0.1",
        smtp_port=sink.port,
        smtp_max_connections=2,
        smtp_max_messages_per_connection=200,
        campaign_unsubscribe_secret=SecretStr("u" * 40),
        campaign_app_origins={"default": "https://app.example.com"},
        email_from="news@example.com",
        domain_name="campaigns.example.com",
    )
    built = build_email_provider(settings)
    assert built is not None
    try:
        results = built.send_batch([message(n) for n in range(500)])
    finally:
        built.close()
    assert {r.outcome for r in results} == {"accepted"}
    assert sink.state.connections == 4  # two at a time, each replaced after 200 messages
