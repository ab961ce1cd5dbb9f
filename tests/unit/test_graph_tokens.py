"""The session's token list (tests/support/graph_tokens.py) finds what the statements name."""

from __future__ import annotations

from tests.support.graph_tokens import statement_tokens


def test_the_tokens_of_the_hot_statements_are_found() -> None:
    labels, types, properties = statement_tokens()
    assert {"Campaign", "Profile", "Dispatch", "TenantView", "EmailSuppression"} <= labels
    assert {"IN_CAMPAIGN_AUDIENCE", "CAMPAIGN_STATE", "GUARDIAN_OF", "HAS_VIEW"} <= types
    assert {"profileId", "shownVersion", "casLock", "hasInAppMessage", "tenantId"} <= properties
    assert not labels & types
