"""Languages under approval: the approver sees who gets the base content, approves it with
``acceptFallback``, and the approval pins it (the tenant policy of ``test_approval.py``)."""

from __future__ import annotations

import json

from campaign_engine.graph.graph import Graph
from tests.integration.campaigns.sending.test_approval import (
    CAMPAIGN,
    Person,
    _message,
    _profiles,
    _trail,
    api,
)
from tests.integration.campaigns.sending.test_approval_people import _live
from tests.support.api import TrpcClient, error_code, ok

__all__ = ["api"]  # the fixture, shared with test_approval.py


def test_an_approved_fallback_is_pinned_and_sends_without_a_second_flag(
    api: TrpcClient, graph: Graph
) -> None:
    """One reader in three reads French, which the campaign lacks: past the default share, so the
    send needs acceptFallback, and under the policy an approval that accepts it."""
    pia, pol = Person(api, "pia", "publisher"), Person(api, "pol", "publisher")
    _profiles(api, "m1", "m2", "m3", locale={"m1": "fr", "m2": "es", "m3": "en"})
    spanish = {"notification": {"title": "Noticias", "body": "Algo pasó"}, "message": {"title": "App"}}
    ok(pia.mutate("campaigns.create", {**CAMPAIGN, "locale": "en", "translations": {"es": spanish}}))
    _live(pia, pia)
    preview = ok(pia.query("campaigns.previewDispatch", {"campaignId": "launch"}))
    assert (preview["untranslated"], preview["blockedReason"]) == ({"fr": 1}, "missing_translation")
    token = preview["previewToken"]
    asked = pia.mutate(
        "campaigns.dispatch", {"campaignId": "launch", "expectedPreviewToken": token, "acceptFallback": True}
    )
    assert error_code(asked) == "FORBIDDEN"
    # The approver sees who would get the base content, by language, before approving.
    listed = ok(pol.query("campaigns.listAwaitingApproval", None))["records"]
    [request] = [r for r in listed if r["action"] == "dispatch"]  # beside the go-live's ``publish``
    assert (request["untranslated"], request["acceptFallback"]) == ({"fr": 1}, True)

    approval = {"campaignId": "launch", "previewToken": token}
    unflagged = pol.mutate("campaigns.approveDispatch", approval)
    assert error_code(unflagged) == "BAD_REQUEST" and "missing_translation" in _message(unflagged)
    approved = ok(pol.mutate("campaigns.approveDispatch", {**approval, "acceptFallback": True}))
    assert (approved["acceptFallback"], approved["untranslated"]) == (True, {"fr": 1})
    # The approval pinned the fallback: the send needs no flag of its own.
    started = ok(pia.mutate("campaigns.dispatch", {"campaignId": "launch", "expectedPreviewToken": token}))
    assert (
        ok(pia.query("campaigns.getDispatch", {"dispatchId": started["dispatchId"]}))["approvedBy"] == "pol"
    )
    [entry] = [e for e in _trail(graph) if e["procedure"] == "campaigns.approveDispatch"]
    detail = json.loads(entry["detail"])
    assert (entry["actor"], detail["acceptFallback"], detail["untranslated"]) == ("pol", True, {"fr": 1})


def test_without_translations_readers_of_other_languages_block_too(api: TrpcClient) -> None:
    """CAMPAIGN_UNTRANSLATED_MAX_SHARE applies to every campaign, translated or not: a campaign written
    in English alone, sent to French and Spanish readers, is blocked as missing_translation."""
    pia = Person(api, "pia", "publisher")
    _profiles(api, "m1", "m2", "m3", locale={"m1": "fr", "m2": "es", "m3": "en"})
    ok(pia.mutate("campaigns.create", {**CAMPAIGN, "locale": "en"}))
    _live(pia, pia)
    preview = ok(pia.query("campaigns.previewDispatch", {"campaignId": "launch"}))
    assert (preview["untranslated"], preview["blockedReason"]) == ({"es": 1, "fr": 1}, "missing_translation")
