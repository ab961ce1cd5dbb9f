"""The Python age policy and the did:web alias: pure rules."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

import pytest

from campaign_engine.domain.age_policy import adult_dob_cutoff, campaign_allows, email_allows
from campaign_engine.domain.audience import did_web_for, profile_id_from_did_web
from campaign_engine.graph.rules.policy import policy_params


def test_cutoff_is_the_eighteenth_birthday() -> None:
    cutoff = adult_dob_cutoff(date(2026, 3, 1), 18)
    assert campaign_allows(dob="2008-03-01", is_managed=False, exclude_minors=True, cutoff=cutoff)
    assert not campaign_allows(dob="2008-03-02", is_managed=False, exclude_minors=True, cutoff=cutoff)


def test_leap_day_birthday_comes_of_age_on_first_of_march() -> None:
    assert not campaign_allows(
        dob="2008-02-29",
        is_managed=False,
        exclude_minors=True,
        cutoff=adult_dob_cutoff(date(2026, 2, 28), 18),
    )
    assert campaign_allows(
        dob="2008-02-29", is_managed=False, exclude_minors=True, cutoff=adult_dob_cutoff(date(2026, 3, 1), 18)
    )


@pytest.mark.parametrize(
    ("dob", "managed", "exclude", "allowed"),
    [
        (None, False, True, True),
        (None, True, True, False),
        ("garbage", True, True, False),
        ("2015-01-01", False, False, True),
        (None, True, False, True),
    ],
)
def test_campaign_policy_unknown_and_managed(
    dob: str | None, managed: bool, exclude: bool, allowed: bool
) -> None:
    cutoff = adult_dob_cutoff(date(2026, 3, 1), 18)
    assert campaign_allows(dob=dob, is_managed=managed, exclude_minors=exclude, cutoff=cutoff) is allowed


def test_email_policy_needs_a_known_adult_and_no_managed_unless_service() -> None:
    cutoff = adult_dob_cutoff(date(2026, 3, 1), 18)
    assert not email_allows(dob=None, is_managed=False, is_service_profile=False, cutoff=cutoff)
    assert not email_allows(dob="2000-01-01", is_managed=True, is_service_profile=False, cutoff=cutoff)
    assert email_allows(dob="2000-01-01", is_managed=True, is_service_profile=True, cutoff=cutoff)
    assert email_allows(dob="2000-01-01", is_managed=False, is_service_profile=False, cutoff=cutoff)


@pytest.mark.parametrize("profile_id", ["p1", "user:42", "a/b", "ümlaut"])
def test_did_web_alias_round_trips(profile_id: str) -> None:
    did = did_web_for(profile_id, "Campaigns.Test:8443")
    assert did.startswith("did:web:campaigns.test%3A8443:")
    assert profile_id_from_did_web(did, "campaigns.test:8443") == profile_id


def test_did_web_alias_rejects_other_domains_and_paths() -> None:
    assert profile_id_from_did_web("did:web:other.test:p1", "campaigns.test") is None
    assert profile_id_from_did_web("did:web:campaigns.test:a:b", "campaigns.test") is None
    assert profile_id_from_did_web("did:plc:abc", "campaigns.test") is None


def test_policy_params_count_ages_from_the_utc_date() -> None:
    """One builder for every policy-checked query: 00:30 at UTC+2 on 1 March is still 28 February in
    UTC, so someone born on 1 March 2008 is not 18 yet, whichever zone the caller's clock uses."""
    plus_two = datetime(2026, 3, 1, 0, 30, tzinfo=timezone(timedelta(hours=2)))
    assert policy_params(plus_two, 18)["adultDob"] == adult_dob_cutoff(date(2026, 2, 28), 18)
    assert policy_params(plus_two.astimezone(UTC), 18) == policy_params(plus_two, 18)
