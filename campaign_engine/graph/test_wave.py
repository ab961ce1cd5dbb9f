"""A test wave's decision: the one transaction that picks the winner, by the system
when ``decideAt`` falls due or by an admin early (``campaigns.chooseVariant``).

Base layer because both sides write it: the page walks of ``delivery`` decide when their page job wakes
at the decision time (the wave delay machinery wakes them, locally and on Lambda, as it wakes any next
pass), and ``campaigns/sending/test_wave.py`` decides by hand. They must not import each other (§2), and the
decision must be one rule.

The decision is a compare-and-set on the Campaign's ``abTest`` under the campaign lock: only an
undecided test is decided, so a decision job running twice, two channels' walks waking together or an
admin racing the system decide once. In that transaction: the rates (each variant's test recipients
reached by this confirmation's Dispatches, and those of them with the metric), the winner (highest
rate, and why: a tie or no evidence sends the first variant, ``domain/ab_variants.py:decision_of``),
``abTest`` with the winner (what every serving path reads), each Dispatch of the confirmation in
``phase: rest`` with the decision, and the audit entry. Nobody is reassigned: test members are drawn by
the hash, and the winner only changes what readers outside the test wave are served.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from campaign_engine.domain.ab_variants import VariantRate, decision_of, in_test_wave
from campaign_engine.domain.reasons import DecisionReason
from campaign_engine.graph.audit import AuditContext, record_audit
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Tx
from campaign_engine.graph.locks import lock_campaign

__all__ = ["SYSTEM_ACTOR", "Decision", "decide", "decision_due"]

SYSTEM_ACTOR = "system:test-wave"

# The recipients the confirmation reached: one expansion of the campaign's state relationships, once
# per test. Only test members were reached before the decision (the rest waits), and the Python filter
# below keeps exactly them anyway.
_REACHED = "test_wave_reached"  # cypher/graph/test_wave_reached.cypher

_WRITE = "test_wave_decide"  # cypher/graph/test_wave_decide.cypher


@dataclass(frozen=True)
class Decision:
    winner: str
    reason: DecisionReason
    rates: list[VariantRate]
    decided_by: str
    decided_at: str
    restart: list[tuple[str, str]]
    """(dispatch id, channel) of the confirmation's Dispatches waiting at the start of a pass: an early
    decision enqueues their rest pass after the commit (``nextPageAt`` cleared here)."""

    def wire(self) -> dict[str, Any]:
        return {"winner": self.winner, "reason": self.reason, "rates": [r.wire() for r in self.rates],
                "decidedBy": self.decided_by, "decidedAt": self.decided_at}  # fmt: skip


def decision_due(campaign: Mapping[str, Any] | None, *, now: str) -> bool:
    """The campaign's test wave is undecided and its decision time has come (a pure read of the node)."""
    if campaign is None or not campaign.get("abTest"):
        return False
    test = json.loads(campaign["abTest"])
    return test.get("winner") is None and str(test["decideAt"]) <= now


def decide(
    tx: Tx,
    *,
    campaign_id: str,
    now: str,
    audit: AuditContext,
    chosen: str | None = None,
    only_if_due: bool = True,
) -> Decision | None:
    """Decide the campaign's test wave (module docstring). ``chosen``: an admin's pick, else the rates
    decide. None when there is nothing to decide: no test, already decided, or (``only_if_due``) not
    due yet; the caller words that. Raises ``ValueError`` for a ``chosen`` that is no variant."""
    campaign = lock_campaign(tx, campaign_id)
    if campaign is None or not campaign.get("abTest"):
        return None
    test = json.loads(campaign["abTest"])
    if test.get("winner") is not None or (only_if_due and str(test["decideAt"]) > now):
        return None
    order = [str(v["id"]) for v in json.loads(campaign.get("abVariants") or "[]")]
    if chosen is not None and chosen not in order:
        raise ValueError(chosen)
    rates = _rates(tx, campaign_id=campaign_id, test=test, order=order)
    reason: DecisionReason = "chosen"
    winner = chosen
    if winner is None:
        winner, reason = decision_of(rates)
    decision = Decision(winner=winner, reason=reason, rates=rates, decided_by=audit.actor, decided_at=now,
                        restart=[])  # fmt: skip
    stored = {**test, "winner": winner, "reason": reason, "decidedAt": now, "decidedBy": audit.actor}
    rows = tx.run(
        statement(_WRITE),
        campaignId=campaign_id,
        abTest=json.dumps(stored, separators=(",", ":")),
        dispatchIds=list(test.get("dispatchIds") or []),
        decision=json.dumps(decision.wire(), separators=(",", ":")),
        winner=winner,
        decidedBy=audit.actor,
        now=now,
    ).data()
    restart = [(str(r["id"]), str(r["channel"])) for r in rows if r["idle"]]
    record_audit(
        tx, audit, target_type="campaign", target_id=campaign_id, campaign=campaign,
        revision_before=campaign.get("revision"), revision_after=campaign.get("revision"),
        detail={**decision.wire(), "dispatchIds": test.get("dispatchIds"), "metric": test["metric"]},
    )  # fmt: skip
    return replace(decision, restart=restart)


def _rates(tx: Tx, *, campaign_id: str, test: Mapping[str, Any], order: list[str]) -> list[VariantRate]:
    """Each variant's rate of the metric over its test recipients, in definition order."""
    metric, share = str(test["metric"]), float(test["testShare"])
    denominators: Counter[str] = Counter()
    numerators: Counter[str] = Counter()
    for row in tx.run(
        statement(_REACHED), campaignId=campaign_id, dispatchIds=list(test.get("dispatchIds") or [])
    ):
        if not in_test_wave(campaign_id, str(row["profileId"]), share):
            continue
        if metric == "emailClicked" and not row["emailed"]:
            continue  # the email metric is over the test members the email reached
        denominators[row["variantId"]] += 1
        numerators[row["variantId"]] += 1 if row[metric] else 0
    return [VariantRate(vid, numerators[vid], denominators[vid]) for vid in order]
