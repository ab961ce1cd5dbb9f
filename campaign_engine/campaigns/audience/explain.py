"""``campaigns.explainRecipient``: would this profile receive this campaign now, per channel, and why.

Every verdict comes from the rules the sends use: the campaign-level rule is ``domain/dispatch.py``'s
``send_blocked`` (what the preview and the page guard call), and the recipient rules are the policy
fragments of ``graph/rules/policy.py`` evaluated by ``cypher/audience/explain_recipient.cypher``,
listed in the order the page walks apply them. The rule names are the walks' own reason codes (``opted_out``,
``age_policy``, ``suppressed``, ...), so ``blockedBy`` is what a send would have recorded. A test
holds the explanation and the preview together for each rule
(tests/integration/campaigns/audience/test_explain_recipient.py).

One module past 350 lines on purpose: its sections (language, variant, segment, guardian route) are
read from the one statement's row, and keeping them beside each other is what keeps them in step with
the preview.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Literal, cast

from pydantic import Field

from campaign_engine.campaigns.audience.guardian_explain import (
    GuardianRoute,
    RoutedTo,
    guardian_route,
    routed_children,
    routed_to,
)
from campaign_engine.campaigns.audience.segments import SegmentExplanation, explain_segment
from campaign_engine.domain.ab_variants import (
    TestWave,
    assigned_variant,
    in_test_wave,
    served_variant,
    unit_point,
    variant_bounds,
)
from campaign_engine.domain.camel import CamelModel
from campaign_engine.domain.dispatch import send_blocked
from campaign_engine.domain.errors import NotFound
from campaign_engine.domain.frequency_cap import CapChannel, ChannelCap, cap_params
from campaign_engine.domain.guardian_copy import guardian_source, routes_guardians
from campaign_engine.domain.locale import language_of
from campaign_engine.domain.priority import skips_pacing_rules
from campaign_engine.domain.reasons import BlockedReason
from campaign_engine.domain.tenancy import CampaignRefOut, campaign_ref
from campaign_engine.domain.types import format_ts
from campaign_engine.domain.variant_copy import overridden
from campaign_engine.domain.variants import ContentField, served_locale, wire_languages
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Graph, Tx
from campaign_engine.graph.rules.policy import policy_params
from campaign_engine.graph.rules.segment import compile_for, segment_of

__all__ = ["ChannelExplanation", "RecipientExplanation", "RuleVerdict", "explain_recipient"]

ExplainedChannel = Literal["notify", "email"]


class RuleVerdict(CamelModel):
    rule: str
    """The reason code a send records when this rule fails (``not_member``, ``opted_out``, ...)."""
    ok: bool
    detail: str | None = None


class ChannelExplanation(CamelModel):
    channel: ExplainedChannel
    would_receive: bool
    blocked_by: str | None = None
    """The first failing rule, as the walk checks them; None when the profile would receive it."""
    rules: list[RuleVerdict]


class PastSend(CamelModel):
    """What already happened to this profile for this campaign (the CAMPAIGN_STATE relationship)."""

    notified_at: str | None = None
    email_claimed_at: str | None = None
    emailed_at: str | None = None
    email_outcome: str | None = None
    email_outcome_reason: str | None = None
    email_outcome_at: str | None = None
    bounced_at: str | None = None
    complained_at: str | None = None
    email_clicked_at: str | None = None
    """The first click on the email's tracked CTA."""
    unsubscribed_at: str | None = None
    """When they opted out of the tenant's email through this campaign's unsubscribe link."""
    shown_first_at: str | None = None
    clicked_first_at: str | None = None
    dismissed_first_at: str | None = None
    notify_capped_at: str | None = None
    email_capped_at: str | None = None
    variant_id: str | None = None
    """The A/B content variant recorded at the first delivery or in-app event."""


class LanguageChoice(CamelModel):
    """Which language each channel serves this reader, and why: the one rule of every send."""

    locale: str | None = Field(description="the profile's locale, as stored")
    served: dict[str, str] = Field(description="per content (message, notification, email): its language")
    why: str


class VariantShare(CamelModel):
    id: str
    start: float
    end: float


class VariantChoice(CamelModel):
    """Which A/B content variant this profile gets on every channel, and why."""

    variant_id: str
    point: float = Field(description="the keyed hash of (campaign, profile) as a point in [0, 1)")
    shares: list[VariantShare] = Field(description="each variant's share of [0, 1), by weight, in order")
    why: str
    in_test_wave: bool | None = Field(
        default=None, description="with a test wave: whether this profile is one of its members"
    )
    served: str | None = Field(
        default=None,
        description="the variant this profile is served now: variantId, or the test's winner outside the "
        "test wave; null while they wait for its decision",
    )
    overrides: dict[str, list[str]] = Field(
        default_factory=dict,
        description="per content (message, notification, email), the fields the served variant sets in "
        "the language this reader is served; a content not named is that language's base copy",
    )


class RecipientExplanation(CamelModel):
    campaign_id: CampaignRefOut
    profile_id: str
    member: bool
    member_source: str | None = None
    """How the profile joined the audience (``profileIds``, ``tag:beta``, ``selfEnrolled``...)."""
    member_added_at: str | None = None
    channels: list[ChannelExplanation]
    past: PastSend | None = None
    language: LanguageChoice | None = None
    segment: SegmentExplanation | None = None
    """The live segment's verdict for this profile, condition by condition."""
    variant: VariantChoice | None = None
    """None when the campaign has no A/B variants."""
    guardian: GuardianRoute | None = None
    """Where the campaign routes minors to guardians (``minors: "guardians"``): this profile as a guardian,
    the members routed to them."""
    routed_to: list[RoutedTo] | None = None
    """A member the age policy excludes, where the campaign goes instead ([]: none)."""


def _channel(channel: ExplainedChannel, rules: list[RuleVerdict]) -> ChannelExplanation:
    failed = next((rule.rule for rule in rules if not rule.ok), None)
    return ChannelExplanation(channel=channel, would_receive=failed is None, blocked_by=failed, rules=rules)


_DISABLED: dict[str, BlockedReason] = {"notify": "notify_disabled", "email": "email_disabled"}


def _campaign_rule(campaign: dict[str, Any], channel: str, now: str) -> RuleVerdict:
    reason = send_blocked(campaign, channels=[channel], missing=_DISABLED[channel], now=now)
    return RuleVerdict(rule=reason or "campaign_can_send", ok=reason is None)


def explain_recipient(
    graph: Graph,
    *,
    campaign_id: str,
    profile_id: str,
    now: datetime,
    adult_age: int,
    caps: Mapping[str, Mapping[CapChannel, ChannelCap]] | None = None,
) -> RecipientExplanation:
    """``caps``: CAMPAIGN_FREQUENCY_CAPS, so the cap's verdict is the one a send would reach now."""

    def tx_fn(tx: Tx) -> dict[str, Any] | None:
        segment = _segment(tx, campaign_id=campaign_id, profile_id=profile_id, now=now, adult_age=adult_age)
        routing = _routing(tx, campaign_id=campaign_id, profile_id=profile_id, now=now, adult_age=adult_age)
        record = tx.run(
            statement("explain_recipient"),
            campaignId=campaign_id,
            profileId=profile_id,
            notifyCaps=cap_params(caps or {}, "notify", now=now)["caps"],
            emailCaps=cap_params(caps or {}, "email", now=now)["caps"],
            **policy_params(now, adult_age),
        ).single()
        return None if record is None else {**record.data(), "segment": segment, "routing": routing}

    row = graph.read(tx_fn)
    if row is None:
        raise NotFound(f"campaign '{campaign_ref(campaign_id)}' not found")
    if not row["profileFound"]:
        raise NotFound(f"profile '{profile_id}' not found")
    campaign, profile, membership = row["campaign"], row["profile"], row["membership"]
    state: dict[str, Any] = row["state"] or {}
    definition = json.loads(campaign["definition"])
    critical = skips_pacing_rules(definition.get("priority"))
    stamp = format_ts(now)
    segment: SegmentExplanation | None = row["segment"]
    in_segment = segment is not None and segment.matched
    member = RuleVerdict(
        rule="not_member",
        ok=membership is not None or in_segment,
        detail=None if membership is not None or not in_segment else "matched by the live segment",
    )
    notify = [
        _campaign_rule(campaign, "notify", stamp),
        member,
        RuleVerdict(rule="opted_out", ok=not profile["pushOptOut"], detail="announcement push opt-out"),
        RuleVerdict(rule="age_policy", ok=bool(profile["campaignAgeOk"]), detail=_age_detail(campaign)),
        RuleVerdict(
            rule="already_notified", ok=state.get("notifiedAt") is None, detail=state.get("notifiedAt")
        ),
        _cap_rule(row["notifyCap"], bool(profile["notifyCapReached"]), critical=critical),
    ]
    suppressed = bool(profile["emailSuppressed"])
    email = [
        _campaign_rule(campaign, "email", stamp),
        member,
        RuleVerdict(rule="opted_out", ok=not profile["emailOptOut"], detail="announcement email opt-out"),
        RuleVerdict(
            rule="age_policy", ok=bool(profile["emailAgeOk"]), detail="email needs a known adult age"
        ),
        RuleVerdict(rule="suppressed", ok=not suppressed, detail="the address is on the suppression list"),
        # The contact rule (EMAIL_CONTACT_OK) includes suppression, which the walk names first; so the
        # address rule passes when suppression alone fails it: together the two are exactly
        # EMAIL_CONTACT_OK, and blockedBy names what the walk would.
        RuleVerdict(
            rule="no_email",
            ok=bool(profile["emailContactOk"]) or suppressed,
            detail=f"{profile['primaryEmails']} primary verified address(es); exactly one is needed",
        ),
        RuleVerdict(
            rule="already_claimed",
            ok=state.get("emailClaimedAt") is None and state.get("emailedAt") is None,
            detail=state.get("emailedAt") or state.get("emailClaimedAt"),
        ),
        _cap_rule(row["emailCap"], bool(profile["emailCapReached"]), critical=critical),
    ]
    guardian, routed = None, None
    if row["routing"] is not None:  # The campaign routes excluded members to guardians
        children, guardians = row["routing"]
        passes = {name: all(r.ok for r in rules if r.rule != "not_member")
                  for name, rules in (("notify", notify), ("email", email))}  # fmt: skip
        guardian = guardian_route(children, member=membership is not None or in_segment, passes=passes)
        excluded = not profile["campaignAgeOk"] or not profile["emailAgeOk"]
        routed = guardians if (membership is not None or in_segment) and excluded else None
    # A routed guardian (who is no member) reads the guardian copy, in its languages.
    as_guardian = guardian is not None and membership is None and not in_segment
    return RecipientExplanation(
        campaign_id=campaign_id,
        profile_id=profile_id,
        member=membership is not None or in_segment,
        member_source=(membership or {}).get("source") or ("segment" if in_segment else None),
        member_added_at=(membership or {}).get("addedAt"),
        channels=[_channel("notify", notify), _channel("email", email)],
        past=PastSend.model_validate(state) if state else None,
        language=(language := _language(definition, row["locale"], guardian=as_guardian)),
        variant=_variant(
            definition,
            campaign_id=campaign_id,
            profile_id=profile_id,
            wave=TestWave.of(row["campaign"].get("abTest")),
            served_tags=language.served,
        ),
        segment=segment,
        guardian=guardian,
        routed_to=routed,
    )


def _routing(
    tx: Tx, *, campaign_id: str, profile_id: str, now: datetime, adult_age: int
) -> tuple[list[dict[str, Any]], list[RoutedTo]] | None:
    """With ``minors: "guardians"``: the members routed to this profile and its own guardians' outcomes."""
    record = tx.run(_SEGMENT_OF, id=campaign_id).single()
    if record is None:
        return None
    node = dict(record["campaign"])
    if not routes_guardians(json.loads(node.get("definition") or "{}")):
        return None
    compiled = compile_for(tx, node)
    params = {**policy_params(now, adult_age), **(compiled.params(now) if compiled else {})}
    children = routed_children(
        tx, campaign_id=campaign_id, profile_id=profile_id, compiled=compiled, params=params
    )
    return children, routed_to(
        tx, campaign_id=campaign_id, profile_id=profile_id, compiled=compiled, params=params
    )


_SEGMENT_OF = "MATCH (c:Campaign {id: $id}) RETURN c {.id, .ref, .tenantId, .definition} AS campaign"


def _segment(
    tx: Tx, *, campaign_id: str, profile_id: str, now: datetime, adult_age: int
) -> SegmentExplanation | None:
    """The live segment's verdict per condition; None without a segment. A profile outside
    the campaign's tenant is never found, as for the rest of the explanation."""
    record = tx.run(_SEGMENT_OF, id=campaign_id).single()
    if record is None:
        return None
    node = dict(record["campaign"])
    compiled, rule = compile_for(tx, node), segment_of(node)
    if compiled is None or rule is None:
        return None
    params = policy_params(now, adult_age)
    return explain_segment(tx, compiled, rule, profile_id=profile_id, now=now, params=params)


_CONTENT: tuple[ContentField, ...] = ("message", "notification", "email")


def _language(definition: dict[str, Any], locale: str | None, *, guardian: bool = False) -> LanguageChoice:
    """``guardian``: the reader is a routed guardian, served over ``guardian_source`` as the sends do."""
    base = definition.get("locale", "en")
    served = {
        field: served_locale(
            wire_languages(guardian_source(definition, field)[0] if guardian else definition, field), locale
        )
        for field in _CONTENT
        if definition.get(field)
    }
    if not locale:
        why = f"the profile has no locale: the base content ({base})"
    elif all(tag == base for tag in served.values()) and language_of(locale) != language_of(base):
        why = f"no translation matches {locale}: the base content ({base})"
    else:
        picked = sorted(set(served.values()))
        why = f"{locale} is served {', '.join(picked)} (RFC 4647 lookup: the most specific tag it has)"
    if guardian:
        why += "; as a routed guardian, over the guardian copy's languages where it has that content"
    return LanguageChoice(locale=locale, served=served, why=why)


def _variant(
    definition: dict[str, Any],
    *,
    campaign_id: str,
    profile_id: str,
    wave: TestWave | None = None,
    served_tags: Mapping[str, str],
) -> VariantChoice | None:
    variants = definition.get("variants")
    chosen = assigned_variant(variants, campaign_id=campaign_id, profile_id=profile_id)
    if not variants or chosen is None:
        return None
    point = unit_point(campaign_id, profile_id)
    shares = [VariantShare(id=vid, start=start, end=end) for vid, start, end in variant_bounds(variants)]
    share = next(s for s in shares if s.id == chosen)
    weights = ", ".join(f"{v['id']}:{v.get('weight') or 1}" for v in variants)
    why = (
        f"the keyed hash of (campaign, profile) is {point:.4f}, in {chosen}'s share "
        f"[{share.start:.4f}, {share.end:.4f}) of the weights {weights}: the same on every channel and send"
    )
    member: bool | None = None
    served: str | None = chosen
    if wave is not None:
        member = in_test_wave(campaign_id, profile_id, wave.share)
        served = served_variant(variants, wave, campaign_id=campaign_id, profile_id=profile_id)
        if member:
            why += f"; a member of the test wave ({wave.share:.0%}), served {chosen} for good"
        elif served is None:
            why += f"; outside the test wave ({wave.share:.0%}): nothing is served until the test is decided"
        else:
            why += f"; outside the test wave ({wave.share:.0%}): served the winner, {served}"
    overrides = {
        field: names
        for field, tag in served_tags.items()
        if (names := overridden(definition, cast(ContentField, field), tag, served))
    }
    return VariantChoice(variant_id=chosen, point=point, shares=shares, why=why, in_test_wave=member,
                         served=served, overrides=overrides)  # fmt: skip


def _cap_rule(cap: Mapping[str, Any] | None, reached: bool, *, critical: bool) -> RuleVerdict:
    """The frequency cap as the send would apply it now (``capped``); no cap configured passes, nor
    does a critical campaign, which skips it."""
    if critical:
        return RuleVerdict(rule="capped", ok=True, detail="critical: the frequency cap does not apply")
    detail = "no frequency cap" if cap is None else f"at most {cap['max']} since {cap['since']}"
    return RuleVerdict(rule="capped", ok=not reached, detail=detail)


def _age_detail(campaign: dict[str, Any]) -> str:
    if campaign.get("excludeMinors", True):
        return "the campaign excludes minors: a known adult age, or an unmanaged profile"
    return "the campaign does not exclude minors"
