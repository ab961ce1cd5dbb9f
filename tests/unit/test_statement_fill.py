"""graph/cypher.py's one fill: a slot a template lacks, a slot left unfilled or a misspelt placeholder
fails where the statement is built, never as Cypher sent to the server."""

from __future__ import annotations

import pytest

from campaign_engine.graph.cypher import fill, fragment, is_fragment, statement, statement_paths
from campaign_engine.graph.rules.policy import CAMPAIGN_AGE_OK, SELF_ENROLLABLE, TENANT_VIEW


def test_slots_then_fragments_are_filled_nested() -> None:
    slots = {"RULE": "{{SELF_ENROLLABLE}}", "EXTRA": "x"}
    text = fill("{{TENANT_VIEW}} WITH p, c, view WHERE {{RULE}} AND {{EXTRA}}", name="t", slots=slots)
    rule = SELF_ENROLLABLE.replace("{{CAMPAIGN_AGE_OK}}", CAMPAIGN_AGE_OK)
    assert text == f"{TENANT_VIEW} WITH p, c, view WHERE {rule} AND x"


def test_a_leftover_placeholder_fails() -> None:
    with pytest.raises(ValueError, match=r"\{\{EMAIL_CAP\}\} unfilled"):
        fill("MATCH (p) {{EMAIL_CAP}} RETURN p", name="t", slots={})


def test_a_misspelt_fragment_fails() -> None:
    with pytest.raises(ValueError, match=r"\{\{CAMPAIGN_AGE_0K\}\} unfilled"):
        fill("MATCH (p) WHERE {{CAMPAIGN_AGE_0K}} RETURN p", name="t", slots={})


def test_any_leftover_braces_fail() -> None:
    with pytest.raises(ValueError, match="unfilled"):
        fill("MATCH (p) WHERE {{ lower }} RETURN p", name="t", slots={})


def test_a_slot_the_template_lacks_fails() -> None:
    with pytest.raises(ValueError, match="has no slot EVENT"):
        statement("dispatch_page", EVENT="shown")


def test_a_slot_left_unfilled_by_the_caller_fails() -> None:
    with pytest.raises(ValueError, match=r"\{\{EVENT\}\} unfilled"):
        statement("record_event")


def test_a_contact_predicate_without_its_binding_fails() -> None:
    with pytest.raises(ValueError, match="never binds `emails`"):
        fill("MATCH (p) WHERE {{EMAIL_CONTACT_OK}} RETURN p", name="t", slots={})


def test_fragments_are_not_statements() -> None:
    fragments = [name for name in statement_paths() if is_fragment(name)]
    assert "email_cap" in fragments
    with pytest.raises(ValueError, match="is a fragment"):
        statement("email_cap")
    with pytest.raises(ValueError, match="is a statement"):
        fragment("email_page")


def test_a_filled_statement_is_built_once() -> None:
    assert statement("record_event", EVENT="shown") is statement("record_event", EVENT="shown")
