"""campaigns.explainRecipient against the real API and graph, held to the preview rule by rule.

Each case is one profile that breaks exactly one rule (or none), alone in a campaign of its own; the
explanation's ``wouldReceive`` per channel must equal what the reviewed-dispatch preview counts for
that campaign, and ``blockedBy`` must name the rule. If the explanation and the sends ever used
different predicates, one of these pairs would disagree.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from pydantic import TypeAdapter

from campaign_engine.config import Settings
from campaign_engine.domain.frequency_cap import FrequencyCaps
from campaign_engine.domain.types import format_ts
from campaign_engine.graph.graph import Graph
from tests.conftest import ADMIN_ID
from tests.support.api import TrpcClient, api_client, error_code, ok
from tests.support.delivery import NOW, StepClock, local_queues, make_campaign
from tests.support.email import EMAIL_COPY, add_email_members, email_settings

FrequencyCapsSetting: TypeAdapter[FrequencyCaps] = TypeAdapter(FrequencyCaps)
BOTH = {"channels": ["notify", "email"], "email": EMAIL_COPY}
PRIMARY = {"isPrimary": True, "isVerified": True}

# (case, campaign options, profile setup, expected notify blockedBy, expected email blockedBy)
CASES: list[tuple[str, dict[str, Any], dict[str, Any], str | None, str | None]] = [
    ("eligible", BOTH, {}, None, None),
    ("push-opt-out", BOTH, {"announcementPushOptOut": True}, "opted_out", None),
    ("email-opt-out", BOTH, {"announcementEmailOptOut": True}, None, "opted_out"),
    ("managed-minor", BOTH, {"dob": "2015-01-01", "isManaged": True}, "age_policy", "age_policy"),
    ("unknown-age", BOTH, {"dob": None}, None, "age_policy"),
    ("no-address", BOTH, {"emails": []}, None, "no_email"),
    (
        "two-primaries",
        BOTH,
        {"emails": [{"value": "a@example.com", **PRIMARY}, {"value": "b@example.com", **PRIMARY}]},
        None,
        "no_email",
    ),
    ("suppressed", BOTH, {"suppressed": True}, None, "suppressed"),
    ("notified", BOTH, {"state": {"notifiedAt": "2026-02-01T00:00:00.000000Z"}}, "already_notified", None),
    ("claimed", BOTH, {"state": {"emailClaimedAt": "2026-02-01T00:00:00.000000Z"}}, None, "already_claimed"),
    ("outsider", BOTH, {"member": False}, "not_member", "not_member"),
    ("paused", {**BOTH, "status": "paused"}, {}, "not_live", "not_live"),
    ("ended", {**BOTH, "endsAt": "2026-02-01T00:00:00Z"}, {}, "ended", "ended"),
    ("notify-only", {"channels": ["notify"]}, {}, None, "email_disabled"),
]


def _setup(graph: Graph, case: str, campaign: dict[str, Any], profile: dict[str, Any]) -> str:
    campaign_id = f"c-{case}"
    make_campaign(graph, campaign_id, **campaign)
    profile = dict(profile)
    state = profile.pop("state", None)
    suppressed = profile.pop("suppressed", False)
    member = profile.pop("member", True)
    emails = profile.pop("emails", None)
    dob = profile.pop("dob", "1990-01-01")
    profile_id = f"p-{case}"
    add_email_members(graph, campaign_id, [profile_id], dob=dob, member=member, emails=emails, **profile)
    if not member:  # still a member of nothing, but the preview needs someone to count
        add_email_members(graph, campaign_id, [f"{profile_id}-other"])
    if state:
        graph.run(
            "MATCH (p:Profile {profileId: $p}), (c:Campaign {id: $c}) "
            "CREATE (p)-[s:CAMPAIGN_STATE]->(c) SET s = $s",
            p=profile_id,
            c=campaign_id,
            s=state,
        )
    if suppressed:
        graph.run(
            "CREATE (:EmailSuppression {address: toLower($a), reason: 'hard_bounce', since: $now})",
            a=f"{profile_id}@example.com",
            now="2026-02-01T00:00:00.000000Z",
        )
    return campaign_id


def _admin(api: TrpcClient, path: str, data: dict[str, Any]) -> Any:
    return api.query(path, data, as_=ADMIN_ID, admin=True)


@pytest.mark.parametrize(("case", "campaign", "profile", "notify", "email"), CASES, ids=[c[0] for c in CASES])
def test_the_explanation_agrees_with_the_preview_rule_by_rule(
    base_settings: Settings,
    graph: Graph,
    tmp_path: Path,
    case: str,
    campaign: dict[str, Any],
    profile: dict[str, Any],
    notify: str | None,
    email: str | None,
) -> None:
    campaign_id = _setup(graph, case, campaign, profile)
    queues = local_queues(tmp_path / "q.sqlite3")
    # A configured provider, so email is a deliverable channel; the preview never calls it.
    settings = email_settings(base_settings, "http://127.0.0.1:9", "server-token-0123456789")
    with api_client(settings, graph, clock=StepClock(NOW), dispatch_queue=queues.dispatch) as api:
        explained = ok(
            _admin(api, "campaigns.explainRecipient", {"campaignId": campaign_id, "profileId": f"p-{case}"})
        )
        preview = ok(_admin(api, "campaigns.previewDispatch", {"campaignId": campaign_id}))

    by_channel = {c["channel"]: c for c in explained["channels"]}
    assert (by_channel["notify"].get("blockedBy"), by_channel["email"].get("blockedBy")) == (notify, email)
    sendable = preview.get("blockedReason") in (None, "no_recipients")
    profile_counted = case != "outsider"  # the outsider's campaign counts its other member, never it
    assert by_channel["notify"]["wouldReceive"] == (
        sendable and profile_counted and preview["notificationRecipientCount"] == 1
    )
    assert by_channel["email"]["wouldReceive"] == (
        sendable and profile_counted and preview["emailRecipientCount"] == 1
    )
    for channel in by_channel.values():
        failed = [rule["rule"] for rule in channel["rules"] if not rule["ok"]]
        assert failed[:1] == ([channel["blockedBy"]] if channel.get("blockedBy") else [])
    assert explained["member"] is (case != "outsider")


def test_past_sends_and_unknown_names(base_settings: Settings, graph: Graph, tmp_path: Path) -> None:
    campaign_id = _setup(
        graph,
        "past",
        BOTH,
        {
            "state": {
                "notifiedAt": "2026-02-01T00:00:00.000000Z",
                "emailedAt": "2026-02-01T00:00:01.000000Z",
                "emailClaimedAt": "2026-02-01T00:00:00.500000Z",
                "emailOutcome": "accepted",
                "bouncedAt": "2026-02-02T00:00:00.000000Z",
            }
        },
    )
    with api_client(base_settings, graph, clock=StepClock(NOW)) as api:
        explained = ok(
            _admin(api, "campaigns.explainRecipient", {"campaignId": campaign_id, "profileId": "p-past"})
        )
        assert explained["past"]["emailOutcome"] == "accepted"
        assert explained["past"]["bouncedAt"] == "2026-02-02T00:00:00.000000Z"
        assert explained["memberSource"] == "test"
        unknown_profile = _admin(
            api, "campaigns.explainRecipient", {"campaignId": campaign_id, "profileId": "nobody"}
        )
        unknown_campaign = _admin(
            api, "campaigns.explainRecipient", {"campaignId": "nope", "profileId": "p-past"}
        )
        assert error_code(unknown_profile) == error_code(unknown_campaign) == "NOT_FOUND"
        anonymous = api.query(
            "campaigns.explainRecipient", {"campaignId": campaign_id, "profileId": "p-past"}
        )
        assert error_code(anonymous) == "UNAUTHORIZED"


def test_the_frequency_cap_is_explained_as_the_claim_applies_it(
    base_settings: Settings, graph: Graph, tmp_path: Path
) -> None:
    """One send an hour per channel: a profile with a send in the log is capped now and not an hour
    later; one whose slot this campaign already holds (a retried claim) is not capped. The verdict is
    the claim's own fragment (graph/rules/policy.py EMAIL_CAP_REACHED) and its notify twin."""
    recent = format_ts(NOW - timedelta(minutes=10))
    campaign_id = _setup(graph, "cap", BOTH, {"notifyCapLog": [recent], "emailCapLog": [recent]})
    add_email_members(graph, campaign_id, ["p-held"], notifyCapLog=[recent], emailCapLog=[recent])
    graph.run(
        "MATCH (p:Profile {profileId: 'p-held'}), (c:Campaign {id: $c}) CREATE (p)-[:CAMPAIGN_STATE "
        "{notifyCapCountedAt: $t, emailCapCountedAt: $t}]->(c)",
        c=campaign_id,
        t=recent,
    )
    caps = {"*": {"notify": {"max": 1, "windowSeconds": 3600}, "email": {"max": 1, "windowSeconds": 3600}}}
    settings = email_settings(base_settings, "http://127.0.0.1:9", "server-token-0123456789").model_copy(
        update={"campaign_frequency_caps": FrequencyCapsSetting.validate_python(caps)}
    )

    def blocked_by(clock: StepClock, profile_id: str) -> tuple[Any, Any]:
        with api_client(settings, graph, clock=clock) as api:
            explained = ok(
                _admin(
                    api, "campaigns.explainRecipient", {"campaignId": campaign_id, "profileId": profile_id}
                )
            )
        by_channel = {c["channel"]: c for c in explained["channels"]}
        return by_channel["notify"].get("blockedBy"), by_channel["email"].get("blockedBy")

    assert blocked_by(StepClock(NOW), "p-cap") == ("capped", "capped")
    assert blocked_by(StepClock(NOW + timedelta(hours=1)), "p-cap") == (None, None)
    assert blocked_by(StepClock(NOW), "p-held") == (None, None)
    # The settings only seeded the default tenant's record: the caps go when the record drops them.
    with api_client(base_settings, graph, clock=StepClock(NOW)) as api:  # no cap configured: passes
        cleared = {"tenantId": "default", "frequencyCaps": {}}
        ok(api.mutate("tenants.update", cleared, as_=ADMIN_ID, admin=True))
        explained = ok(
            _admin(api, "campaigns.explainRecipient", {"campaignId": campaign_id, "profileId": "p-cap"})
        )
    rules = {c["channel"]: {r["rule"]: r for r in c["rules"]} for c in explained["channels"]}
    assert rules["notify"]["capped"] == {"rule": "capped", "ok": True, "detail": "no frequency cap"}
