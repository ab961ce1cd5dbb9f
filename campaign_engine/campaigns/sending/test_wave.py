"""A dispatch's A/B test wave: accepting the ``experiment`` and starting it
(``campaigns.chooseVariant`` is ``choose_variant.py``).

``dispatch`` and ``scheduleDispatch`` take ``experiment: {testShare, metric, decideAfterSeconds}``
(``domain/ab_variants.py:Experiment``). ``check_experiment`` refuses it (BAD_REQUEST, inside the
confirmation's transaction, so nothing is written) on a campaign without variants, with a metric on a
channel the campaign lacks, once the campaign decided a test already (its readers got the winner; a
second test would serve some of them another variant), or when the test wave would give a variant fewer
than ``CAMPAIGN_EXPERIMENT_MIN_PER_VARIANT`` recipients (no rate over so few tells the arms apart).
``start_test`` writes, in the transaction that starts the send (the confirmation, or the sweeper firing
a schedule), the Campaign's ``abTest`` (what every serving path reads: ``TestWave.of``) and each
Dispatch's ``phase: testing`` and ``decideAt``. A send without an experiment abandons an undecided test
(its testing Dispatch is superseded): everyone is then served their assigned variant, which test
members already have.

The decision itself is ``graph/test_wave.py:decide``, shared with the page walks that decide on time.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from campaign_engine.domain.ab_variants import Experiment
from campaign_engine.domain.errors import BadRequest
from campaign_engine.domain.reasons import RefusalCode
from campaign_engine.domain.types import format_ts
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Tx

__all__ = ["check_evidence", "check_experiment", "experiment_json", "start_test"]

_CLICK_TRACKING = "MATCH (t:Tenant {tenantId: $tenantId}) RETURN t.clickTracking AS on"

_START = "test_wave_start"  # cypher/sending/test_wave_start.cypher

_TOO_FEW: RefusalCode = "too_few_per_variant"


def check_experiment(
    tx: Tx,
    campaign: Mapping[str, Any],
    experiment: Experiment,
    *,
    walked: list[str],
    test_wave: Mapping[str, int] | None,
    min_per_variant: int,
) -> None:
    """BAD_REQUEST for an experiment this campaign cannot run (module docstring); reads only.
    ``test_wave``: the preview's test-wave recipients per variant (computed with the experiment's
    share)."""
    where = [{"path": ["experiment"], "message": "not possible for this campaign"}]
    if not json.loads(campaign.get("abVariants") or "[]"):
        raise BadRequest("experiment: the campaign has no variants to test", issues=where)
    if not walked:
        raise BadRequest("experiment: a test wave needs the notify or email channel", issues=where)
    if campaign.get("minors") == "guardians":  # routed guardians are not drawn into a wave (yet)
        raise BadRequest("experiment: not with minors routed to their guardians", issues=where)
    if campaign.get("abTest") and json.loads(campaign["abTest"]).get("winner") is not None:
        raise BadRequest("experiment: this campaign already decided an A/B test", issues=where)
    channels = campaign.get("channels") or []
    if experiment.metric == "emailClicked":
        if "email" not in channels:
            raise BadRequest("experiment: metric emailClicked needs the email channel", issues=where)
        record = tx.run(_CLICK_TRACKING, tenantId=campaign.get("tenantId") or "").single()
        if record is not None and record["on"] is False:
            raise BadRequest(
                "experiment: metric emailClicked needs the tenant's clickTracking on", issues=where
            )
    elif not campaign.get("hasInAppMessage"):
        raise BadRequest(f"experiment: metric {experiment.metric} needs the in-app message", issues=where)
    check_evidence(campaign, test_wave or {}, min_per_variant)


def check_evidence(campaign: Mapping[str, Any], test_wave: Mapping[str, int], min_per_variant: int) -> None:
    """BAD_REQUEST naming the numbers when the test wave gives any variant fewer than
    ``min_per_variant`` recipients (``test_wave``: recipients per variant id; a variant it lacks has 0)."""
    order = [str(v["id"]) for v in json.loads(campaign.get("abVariants") or "[]")]
    short = [(vid, int(test_wave.get(vid, 0))) for vid in order if test_wave.get(vid, 0) < min_per_variant]
    if not short:
        return
    gives = " and ".join(f"variant {vid} {n} recipient{'' if n == 1 else 's'}" for vid, n in short)
    message = f"the test wave gives {gives}; each variant needs at least {min_per_variant}"
    raise BadRequest(
        f"experiment: {message} (raise testShare, widen the audience, or send without an experiment)",
        issues=[{"path": ["experiment", "testShare"], "message": message, "code": _TOO_FEW}],
    )


def experiment_json(experiment: Experiment | None) -> str | None:
    """As a Dispatch keeps it (a scheduled one until it fires)."""
    return None if experiment is None else experiment.model_dump_json(by_alias=True)


def start_test(
    tx: Tx, *, campaign_id: str, experiment: Experiment | None, dispatch_ids: list[str], now: datetime
) -> None:
    """Start the test wave of a send starting now (module docstring); without one, abandon an
    undecided test."""
    ab_test = decide_at = None
    if experiment is not None:
        decide_at = format_ts(now + timedelta(seconds=experiment.decide_after_seconds))
        ab_test = json.dumps(
            {**experiment.model_dump(by_alias=True), "decideAt": decide_at, "startedAt": format_ts(now),
             "dispatchIds": dispatch_ids, "winner": None},
            separators=(",", ":"),
        )  # fmt: skip
    tx.run(
        statement(_START),
        campaignId=campaign_id,
        abTest=ab_test,
        dispatchIds=dispatch_ids,
        experiment=experiment_json(experiment),
        phase=None if experiment is None else "testing",
        decideAt=decide_at,
    ).consume()
