"""PostmarkProvider against a real loopback server that speaks Postmark's API (tests/support)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from datetime import UTC, datetime

import pytest

from campaign_engine.delivery.email.postmark import PostmarkProvider, parse_retry_after
from campaign_engine.delivery.email.provider import (
    OutgoingEmail,
    ProviderConfigError,
    ProviderUnavailable,
)
from tests.support.postmark_standin import PostmarkStandin

TOKEN = "pm-server-token-0123456789"
SENDER = "Announcements <news@sender.test>"


@pytest.fixture(scope="module")
def shared_standin() -> Iterator[PostmarkStandin]:
    with PostmarkStandin(token=TOKEN) as server:
        yield server


@pytest.fixture
def standin(shared_standin: PostmarkStandin) -> PostmarkStandin:
    shared_standin.reset()
    return shared_standin


@pytest.fixture
def own_standin() -> Iterator[PostmarkStandin]:
    """A server of the test's own, for tests that stop it."""
    with PostmarkStandin(token=TOKEN) as server:
        yield server


MakeProvider = Callable[..., PostmarkProvider]


@pytest.fixture
def make_provider(standin: PostmarkStandin) -> Iterator[MakeProvider]:
    """Providers against the stand-in, all closed after the test."""
    made: list[PostmarkProvider] = []

    def make(*, stream: str = "broadcast", api_key: str = TOKEN, timeout: float = 5.0) -> PostmarkProvider:
        made.append(
            PostmarkProvider(
                api_key=api_key, stream=stream, sender=SENDER, base_url=standin.url, timeout=timeout
            )
        )
        return made[-1]

    yield make
    for p in made:
        p.close()


@pytest.fixture
def provider(make_provider: MakeProvider) -> PostmarkProvider:
    return make_provider()


def email(n: int, *, to: str | None = None) -> OutgoingEmail:
    return OutgoingEmail(
        key=f"p{n}",
        to=to or f"user{n}@rcpt.test",
        subject=f"Subject {n}",
        html=f"<p>Hello {n}</p>",
        text=f"Hello {n}",
        headers={
            "List-Unsubscribe": f"<https://c.test/u/{n}>",
            "List-Unsubscribe-Post": "List-Unsubscribe=One-Click",
        },
        tag="campaign-c1",
        metadata={"campaignId": "c1"},
    )


# --- verify -----------------------------------------------------------------------------------------


def test_verify_accepts_a_broadcast_stream_and_checks_only_once(
    standin: PostmarkStandin, provider: PostmarkProvider
) -> None:
    provider.verify()
    provider.verify()
    provider.send_batch([email(1)])
    assert standin.stream_calls == 1


def test_transactional_stream_is_refused_and_nothing_is_sent(
    standin: PostmarkStandin, make_provider: MakeProvider
) -> None:
    provider = make_provider(stream="outbound")
    with pytest.raises(ProviderConfigError, match="Broadcasts"):
        provider.verify()
    # send_batch never raises (the port contract): nothing was sent, so nothing is claimed for good.
    [result] = provider.send_batch([email(1)])
    assert (result.outcome, result.reason) == ("throttled", "verify:ProviderConfigError")
    assert standin.batch_calls == 0
    assert standin.accepted == []


def test_unknown_stream_and_bad_token_are_config_errors(make_provider: MakeProvider) -> None:
    with pytest.raises(ProviderConfigError, match="does not exist"):
        make_provider(stream="nope").verify()
    with pytest.raises(ProviderConfigError, match="token"):
        make_provider(api_key="wrong-token").verify()


def test_unreachable_provider_on_verify_is_unavailable(own_standin: PostmarkStandin) -> None:
    provider = PostmarkProvider(api_key=TOKEN, stream="broadcast", sender=SENDER, base_url=own_standin.url)
    own_standin.stop()
    with pytest.raises(ProviderUnavailable):
        provider.verify()
    provider.close()


# --- accepted -----------------------------------------------------------------------------------------


def test_batch_is_accepted_with_provider_ids_and_full_message(
    standin: PostmarkStandin, provider: PostmarkProvider
) -> None:
    results = provider.send_batch([email(1), email(2)])
    assert [(r.key, r.outcome) for r in results] == [("p1", "accepted"), ("p2", "accepted")]
    assert [r.provider_message_id for r in results] == [m["MessageID"] for m in standin.accepted]
    sent = standin.accepted[0]
    assert sent["From"] == SENDER
    assert sent["To"] == "user1@rcpt.test"
    assert sent["MessageStream"] == "broadcast"
    assert sent["HtmlBody"] == "<p>Hello 1</p>"
    assert sent["TextBody"] == "Hello 1"
    assert {"Name": "List-Unsubscribe-Post", "Value": "List-Unsubscribe=One-Click"} in sent["Headers"]
    assert sent["Tag"] == "campaign-c1"
    assert sent["Metadata"] == {"campaignId": "c1"}


def test_batches_above_500_are_split(standin: PostmarkStandin, provider: PostmarkProvider) -> None:
    results = provider.send_batch([email(n) for n in range(1001)])
    assert standin.batch_calls == 3
    assert len(standin.accepted) == 1001
    assert [r.key for r in results] == [f"p{n}" for n in range(1001)]
    assert {r.outcome for r in results} == {"accepted"}


# --- per-message failures inside a 200 ------------------------------------------------------------------


def test_a_200_can_hold_per_message_failures(standin: PostmarkStandin, provider: PostmarkProvider) -> None:
    standin.error_codes = {
        "inactive@rcpt.test": 406,
        "bad@rcpt.test": 300,
        "slow@rcpt.test": 429,
        "odd@rcpt.test": 9999,
    }
    batch = [
        email(1),
        email(2, to="inactive@rcpt.test"),
        email(3, to="bad@rcpt.test"),
        email(4, to="slow@rcpt.test"),
        email(5, to="odd@rcpt.test"),
        email(6),
    ]
    results = provider.send_batch(batch)
    assert [(r.key, r.outcome, r.reason) for r in results] == [
        ("p1", "accepted", None),
        ("p2", "rejected", "postmark:406"),
        ("p3", "rejected", "postmark:300"),
        ("p4", "throttled", "postmark:429"),
        ("p5", "uncertain", "postmark:9999"),  # an unknown code proves nothing: keep the claim
        ("p6", "accepted", None),
    ]
    assert [m["To"] for m in standin.accepted] == ["user1@rcpt.test", "user6@rcpt.test"]


# --- whole-request answers ------------------------------------------------------------------------------


def test_429_throttles_the_whole_batch_with_retry_after(
    standin: PostmarkStandin, provider: PostmarkProvider
) -> None:
    standin.throttle_next(1, retry_after="7")
    results = provider.send_batch([email(1), email(2)])
    assert [(r.outcome, r.retry_after_seconds, r.reason) for r in results] == [
        ("throttled", 7.0, "http:429")
    ] * 2
    assert standin.accepted == []
    # The throttle was for that call only: the next batch goes through.
    assert [r.outcome for r in provider.send_batch([email(3)])] == ["accepted"]


def test_throttled_chunk_stops_later_chunks(standin: PostmarkStandin, provider: PostmarkProvider) -> None:
    standin.pass_next(1)
    standin.throttle_next(1, retry_after="3")
    results = provider.send_batch([email(n) for n in range(1200)])
    assert standin.batch_calls == 2  # the third chunk was never sent
    assert [r.outcome for r in results[:500]] == ["accepted"] * 500
    assert {(r.outcome, r.reason, r.retry_after_seconds) for r in results[500:1000]} == {
        ("throttled", "http:429", 3.0)
    }
    assert {(r.outcome, r.reason, r.retry_after_seconds) for r in results[1000:]} == {
        ("throttled", "not_sent", 3.0)
    }


def test_5xx_is_uncertain_and_later_chunks_wait(standin: PostmarkStandin, provider: PostmarkProvider) -> None:
    standin.fail_next(1, status=500)
    results = provider.send_batch([email(n) for n in range(600)])
    assert standin.batch_calls == 1
    assert {(r.outcome, r.reason) for r in results[:500]} == {("uncertain", "http:500")}
    assert {(r.outcome, r.reason) for r in results[500:]} == {("throttled", "not_sent")}


def test_dropped_connection_after_request_is_uncertain(
    standin: PostmarkStandin, provider: PostmarkProvider
) -> None:
    standin.drop_next(1)
    results = provider.send_batch([email(1), email(2)])
    assert {r.outcome for r in results} == {"uncertain"}
    assert all(r.reason is not None and r.reason.startswith("transport:") for r in results)
    assert [r.outcome for r in provider.send_batch([email(3)])] == ["accepted"]


def test_timeout_is_uncertain_because_the_provider_may_have_accepted(
    standin: PostmarkStandin, make_provider: MakeProvider
) -> None:
    provider = make_provider(timeout=0.3)
    provider.verify()
    standin.delay_next(1.0)
    results = provider.send_batch([email(1)])
    assert [(r.outcome, r.reason) for r in results] == [("uncertain", "transport:ReadTimeout")]
    assert len(standin.accepted) == 1  # it did go out: releasing the claim would have sent it twice


@pytest.mark.parametrize(
    "body",
    [
        "not json",
        {"ErrorCode": 0},
        [{"ErrorCode": 0, "MessageID": "only-one"}],
        [{"ErrorCode": 0, "MessageID": "a"}, {"ErrorCode": 0, "MessageID": "b"}, {"ErrorCode": 0}],
    ],
)
def test_unreadable_or_mismatched_200_is_uncertain(
    standin: PostmarkStandin, provider: PostmarkProvider, body: object
) -> None:
    standin.answer_next(status=200, body=body)
    results = provider.send_batch([email(1), email(2)])
    assert {(r.outcome, r.reason) for r in results} == {("uncertain", "unreadable_answer")}


def test_malformed_result_item_is_uncertain(standin: PostmarkStandin, provider: PostmarkProvider) -> None:
    standin.answer_next(status=200, body=[{"ErrorCode": 0, "MessageID": "m1"}, {"ErrorCode": "0"}])
    results = provider.send_batch([email(1), email(2)])
    assert [(r.outcome, r.provider_message_id) for r in results] == [("accepted", "m1"), ("uncertain", None)]


@pytest.mark.parametrize(
    ("status", "body", "outcome", "reason"),
    [
        (401, {"ErrorCode": 10, "Message": "Bad or missing API token."}, "rejected", "postmark:10"),
        (422, {"ErrorCode": 300, "Message": "Invalid email request"}, "rejected", "postmark:300"),
        (422, {"ErrorCode": 405, "Message": "Not allowed to send"}, "rejected", "postmark:405"),
        (422, {"ErrorCode": 9999, "Message": "Something new"}, "uncertain", "http:422"),
        (422, "garbage", "uncertain", "http:422"),
        (503, {"ErrorCode": 100, "Message": "Maintenance"}, "uncertain", "http:503"),
        (302, {}, "uncertain", "http:302"),
    ],
)
def test_whole_request_errors(
    standin: PostmarkStandin, provider: PostmarkProvider, status: int, body: object, outcome: str, reason: str
) -> None:
    standin.answer_next(status=status, body=body)
    results = provider.send_batch([email(1), email(2)])
    assert {(r.outcome, r.reason) for r in results} == {(outcome, reason)}


def test_connection_refused_at_send_is_throttled_since_nothing_left(own_standin: PostmarkStandin) -> None:
    provider = PostmarkProvider(api_key=TOKEN, stream="broadcast", sender=SENDER, base_url=own_standin.url)
    provider.verify()
    own_standin.stop()
    results = provider.send_batch([email(1), email(2)])
    assert {(r.outcome, r.reason) for r in results} == {("throttled", "transport:ConnectError")}
    provider.close()


def test_neither_token_nor_addresses_reach_logs_or_reasons(
    standin: PostmarkStandin, provider: PostmarkProvider, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    standin.error_codes = {"inactive@rcpt.test": 406}
    results = provider.send_batch([email(1), email(2, to="inactive@rcpt.test")])
    standin.fail_next(1)
    results += provider.send_batch([email(3)])
    standin.drop_next(1)
    results += provider.send_batch([email(4)])
    logged = caplog.text + " ".join(str(r) for r in results)
    assert TOKEN not in logged
    assert "@rcpt.test" not in logged


def test_parse_retry_after() -> None:
    now = datetime(2024, 1, 1, 0, 0, 0, tzinfo=UTC)
    assert parse_retry_after("12") == 12.0
    assert parse_retry_after("Mon, 01 Jan 2024 00:00:30 GMT", now=now) == 30.0
    assert parse_retry_after("Sun, 31 Dec 2023 00:00:00 GMT", now=now) == 0.0
    assert parse_retry_after("-5") == 0.0
    assert parse_retry_after("soon") is None
    assert parse_retry_after("nan") is None
    assert parse_retry_after(None) is None
