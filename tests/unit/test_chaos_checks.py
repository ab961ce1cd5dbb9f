"""The chaos run's end checks (``bench/_chaos_checks.py``) on made-up records: a clean run passes, and
each broken promise is seen, so a green chaos run means the promises held, not that nothing looked."""

from __future__ import annotations

from collections import Counter
from typing import Any

from bench._chaos_checks import check, merge

AUDIENCE = {f"p{i}": f"p{i}@example.com" for i in range(10)}


def dispatch(channel: str, status: str = "completed", **counts: int) -> dict[str, Any]:
    base = {"acknowledged": 0, "emailed": 0, "uncertain": 0, "rejected": 0}
    return {"channel": channel, "status": status, "dispatchId": f"dsp_{channel}", **base, **counts}


def clean() -> dict[str, Any]:
    return {
        "audience": AUDIENCE,
        "inbox": Counter(AUDIENCE.keys()),
        "caught": Counter(list(AUDIENCE.values())),
        "dispatches": [dispatch("notify", acknowledged=10), dispatch("email", emailed=10)],
        "stats": {"notified": 10, "emailed": 10},
        "dead": 0,
    }


def test_a_clean_run_passes() -> None:
    result = check(**clean())
    assert result.ok and result.line(7) == (
        "RESULT faults=7 recipients=10 lost=0 duplicate_emails=0 counter_mismatches=0 stuck=0 critical=0"
    )


def test_an_uncertain_email_may_be_in_the_catcher_or_not() -> None:
    for caught in (9, 10):
        records = clean()
        records["caught"] = Counter(list(AUDIENCE.values())[:caught])
        email = dispatch("email", emailed=9, uncertain=1)
        records["dispatches"] = [dispatch("notify", acknowledged=10), email]
        records["stats"] = {"notified": 10, "emailed": 9}
        assert check(**records).ok


def test_every_broken_promise_is_seen() -> None:
    lost = clean()
    lost["inbox"] = Counter(list(AUDIENCE)[:9])
    assert check(**lost).lost == 1

    twice = clean()
    twice["caught"]["p3@example.com"] += 1
    assert check(**twice).duplicate_emails == 1

    stuck = clean()
    stuck["dispatches"].append(dispatch("notify", "sending"))
    assert check(**stuck).stuck == 1

    broken: list[tuple[str, Any]] = [
        ("stats", {"notified": 9, "emailed": 10}),  # notified disagrees with the inbox
        ("stats", {"notified": 10, "emailed": 11}),  # getStats disagrees with the dispatches
        ("dispatches", [dispatch("notify", acknowledged=11), dispatch("email", emailed=10)]),
        ("dispatches", [dispatch("notify", acknowledged=10), dispatch("email", emailed=9)]),  # caught > sent
        ("caught", Counter(list(AUDIENCE.values())[:9])),  # an accepted email is not in the catcher
        ("inbox", Counter({**Counter(AUDIENCE.keys()), "p1": 2})),  # a recipient stored twice
        ("dead", 1),
    ]
    for key, value in broken:
        records = clean()
        records[key] = value
        assert not check(**records).ok, (key, value)
        assert check(**records).mismatches, (key, value)


def test_the_critical_campaigns_broken_promise_fails_the_merged_run() -> None:
    bulk = check(**clean())
    critical = check(**{**clean(), "inbox": Counter(list(AUDIENCE)[1:])})  # one never stored
    merged = merge(bulk, critical)
    assert not merged.ok and (merged.lost, merged.critical) == (1, 10)
    assert merged.mismatches[0].startswith("critical campaign: ")
    assert merged.line(3).endswith("lost=1 duplicate_emails=0 counter_mismatches=2 stuck=0 critical=10")
