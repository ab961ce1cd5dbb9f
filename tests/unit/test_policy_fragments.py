"""The eligibility fragments of graph/rules/policy.py: the contact predicates read the
addresses a query bound once per profile, and the address grammar is domain/patterns.py's."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from campaign_engine.domain import patterns
from campaign_engine.graph.catalog import filled_statements
from campaign_engine.graph.rules import policy

# Every statement and fill variant the code makes (live segments aside: no graph here to compile them);
# filling raises when a contact predicate has no `emails` to read.
_FILLED = list(filled_statements([None]))


@pytest.mark.parametrize(
    ("name", "text"), _FILLED, ids=[f"{name}-{i}" for i, (name, _) in enumerate(_FILLED)]
)
def test_every_query_binds_the_addresses_its_contact_predicates_read(name: str, text: str) -> None:
    assert "{{" not in text
    if "EmailSuppression {address: toLower(address)}" in text:
        # The addresses are walked once, where they are bound, never inside a predicate.
        assert text.count(policy.PRIMARY_EMAILS) == 1, name


def test_the_address_grammar_is_the_domain_one() -> None:
    assert policy.policy_params(datetime.now(UTC), 18)["emailPattern"] == patterns.EMAIL_PATTERN


def test_an_opt_out_read_without_the_tenant_view_is_refused() -> None:
    """Without ``view`` bound the tenant's opt-out reads null and its unsubscribed people get mail."""
    with pytest.raises(ValueError, match="never binds the tenant's `view`"):
        policy.check_bindings("MATCH (p)-->(c) WHERE NOT {{EMAIL_OPTED_OUT}} RETURN p", name="q")
    with pytest.raises(ValueError, match="never binds the tenant's `view`"):
        policy.check_bindings("MATCH (p)-->(c) WHERE NOT {{PUSH_OPTED_OUT}} RETURN p", name="q")
    bound = "MATCH (p)-->(c) {{TENANT_VIEW}} WITH p, view WHERE NOT {{EMAIL_OPTED_OUT}} RETURN p"
    policy.check_bindings(bound, name="q")


def test_the_two_opt_outs_read_the_profile_and_the_view() -> None:
    for fragment, flag in ((policy.EMAIL_OPTED_OUT, "Email"), (policy.PUSH_OPTED_OUT, "Push")):
        assert f"p.announcement{flag}OptOut" in fragment and f"view.announcement{flag}OptOut" in fragment


@pytest.mark.parametrize(
    "read",
    ["{{CAMPAIGN_AGE_OK}}", "{{EMAIL_AGE_OK}}", "{{AUDIENCE_AGE_OK}}", "{{SELF_ENROLLABLE}}",
     "size({{PRIMARY_EMAILS}}) > 0", "coalesce(view.locale, p.locale) = 'fr'"],
)  # fmt: skip
def test_a_fact_read_without_the_tenant_view_is_refused(read: str) -> None:
    """Unbound, ``view`` would fail only when the statement first runs, or (spelled as a filled slot)
    read the shared facts for a tenant that wrote its own: another tenant's route, age or language."""
    with pytest.raises(ValueError, match="never binds the tenant's `view`"):
        policy.check_bindings(f"MATCH (p)-->(c) WHERE {read} RETURN p", name="q")
    bound = f"MATCH (p)-->(c) {{{{TENANT_VIEW}}}} WITH p, c, view WHERE {read} RETURN p"
    policy.check_bindings(bound, name="q")


def test_every_fact_the_fragments_read_is_the_view_over_the_shared_one() -> None:
    for fragment in (policy.CAMPAIGN_AGE_OK, policy.EMAIL_AGE_OK):
        for fact in ("dob", "isManaged"):
            assert f"coalesce(view.{fact}, p.{fact}" in fragment
            assert f"p.{fact}" not in fragment.replace(f"coalesce(view.{fact}, p.{fact}", "")
    assert "coalesce(view.emailsOwn, false)" in policy.PRIMARY_EMAILS
