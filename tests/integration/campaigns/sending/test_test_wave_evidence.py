"""The evidence rule of an A/B test wave on the real graph: an experiment whose test wave would give any
variant fewer than ``CAMPAIGN_EXPERIMENT_MIN_PER_VARIANT`` recipients is refused by previewDispatch,
dispatch and scheduleDispatch naming the numbers, and a schedule that fires with too few fails in the
same words (``campaigns/sending/test_wave.py:check_evidence``). The wave itself is
``test_test_wave.py``; how a decision without evidence reads is ``tests/unit/test_test_wave_decision.py``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from campaign_engine.campaigns.sending.dispatch import preview_dispatch
from campaign_engine.campaigns.sending.dispatch_settings import DispatchSettings
from campaign_engine.campaigns.sending.schedule import fire_due
from campaign_engine.config import Settings
from campaign_engine.domain.ab_variants import Experiment, assigned_variant, in_test_wave
from campaign_engine.domain.errors import BadRequest
from campaign_engine.domain.types import format_ts
from campaign_engine.graph.graph import Graph
from campaign_engine.wiring import Queues
from tests.conftest import ADMIN_ID
from tests.support.api import TrpcClient, api_client, error_code, ok
from tests.support.delivery import NOW, StepClock, local_queues
from tests.support.email import EMAIL_COPY, add_email_members, email_settings
from tests.support.postmark_standin import PostmarkStandin

ADMIN = {"as_": ADMIN_ID, "admin": True}
READERS = [f"t{i:02d}" for i in range(60)]
SHARE = 0.3
CAMPAIGN: dict[str, Any] = {
    "id": "small", "name": "small", "channels": ["email"], "email": EMAIL_COPY,
    "variants": [{"id": "A"}, {"id": "B", "email": {"subject": "Subject B"}}],
}  # fmt: skip


@pytest.fixture
def lenient(
    base_settings: Settings, graph: Graph, standin: PostmarkStandin, tmp_path: Path
) -> Iterator[tuple[TrpcClient, Queues]]:
    """The API with a minimum of 1 (what a schedule accepted with enough readers needs), and its queues."""
    queues = local_queues(tmp_path / "q.sqlite3")
    settings = email_settings(
        base_settings, standin.url, standin.token, campaign_experiment_min_per_variant=1
    )
    with api_client(settings, graph, clock=StepClock(NOW), dispatch_queue=queues.dispatch) as api:
        yield api, queues


def test_a_test_wave_too_small_to_tell_the_variants_apart_is_refused_naming_the_numbers(
    lenient: tuple[TrpcClient, Queues], graph: Graph
) -> None:
    """Preview, dispatch and scheduleDispatch refuse an experiment whose test wave gives any variant
    fewer than CAMPAIGN_EXPERIMENT_MIN_PER_VARIANT (default 50) recipients, naming both numbers, and
    write nothing; exactly the minimum is enough."""
    api, queues = lenient
    ok(api.mutate("campaigns.create", CAMPAIGN, **ADMIN))
    add_email_members(graph, "small", READERS, tenants=["default"])
    ok(api.mutate("campaigns.setStatus", {"campaignId": "small", "status": "live"}, **ADMIN))
    testers = Counter(
        assigned_variant(CAMPAIGN["variants"], campaign_id="small", profile_id=p)
        for p in READERS
        if in_test_wave("small", p, SHARE)
    )
    assert set(testers) == {"A", "B"} and max(testers.values()) < 50
    assert Settings.model_fields["campaign_experiment_min_per_variant"].default == 50
    experiment = {"testShare": SHARE, "metric": "emailClicked", "decideAfterSeconds": 600}
    said = (
        f"the test wave gives variant A {testers['A']} recipients and variant B {testers['B']} "
        "recipients; each variant needs at least 50"
    )
    default = api.settings.model_copy(update={"campaign_experiment_min_per_variant": 50})
    later = format_ts(NOW + timedelta(hours=1))
    with api_client(default, graph, clock=StepClock(NOW), dispatch_queue=queues.dispatch) as strict:
        asked = {"campaignId": "small", "experiment": experiment}
        plain = ok(strict.query("campaigns.previewDispatch", {"campaignId": "small"}, **ADMIN))
        confirmed = {**asked, "expectedPreviewToken": plain["previewToken"]}
        scheduled = {**confirmed, "sendAt": later}
        answers = [
            strict.query("campaigns.previewDispatch", asked, **ADMIN),
            strict.mutate("campaigns.dispatch", confirmed, **ADMIN),
            strict.mutate("campaigns.scheduleDispatch", scheduled, **ADMIN),
        ]
        for answer in answers:
            assert error_code(answer) == "BAD_REQUEST"
            assert said in answer.json()["error"]["message"]
            [issue] = answer.json()["error"]["data"]["issues"]
            assert (issue["path"], issue["code"]) == (["experiment", "testShare"], "too_few_per_variant")
        assert ok(strict.query("campaigns.listDispatches", {"campaignId": "small"}, **ADMIN)) == []
    assert graph.run("MATCH (c:Campaign {id: 'small'}) RETURN c.abTest AS t") == [{"t": None}]

    # The bound itself: a wave giving each variant exactly the minimum runs; one more refuses the short
    # variant alone.
    fewest, short = min((n, vid) for vid, n in testers.items())
    bound = DispatchSettings(adult_age=18, max_recipients=1000, experiment_min_per_variant=fewest)
    wave = Experiment(test_share=SHARE, metric="emailClicked", decide_after_seconds=600)
    shown = preview_dispatch(graph, campaign_id="small", now=NOW, settings=bound, experiment=wave)
    assert shown.test_wave == dict(sorted(testers.items()))
    stricter = replace(bound, experiment_min_per_variant=fewest + 1)
    refused = f"gives variant {short} {fewest} recipients; each variant needs at least {fewest + 1}"
    with pytest.raises(BadRequest, match=refused):
        preview_dispatch(graph, campaign_id="small", now=NOW, settings=stricter, experiment=wave)

    # A schedule accepted with enough readers fails, in the same words, if it fires with too few.
    plain = ok(api.query("campaigns.previewDispatch", {"campaignId": "small"}, **ADMIN))
    body = {"campaignId": "small", "experiment": experiment, "expectedPreviewToken": plain["previewToken"],
            "sendAt": later}  # fmt: skip
    [first, *_] = ok(api.mutate("campaigns.scheduleDispatch", body, **ADMIN))
    fired = fire_due(graph, queues.dispatch, now=NOW + timedelta(hours=1), settings=stricter)
    assert list(fired.values()) == ["failed"]
    failed = ok(api.query("campaigns.getDispatch", {"dispatchId": first["dispatchId"]}, **ADMIN))
    assert failed["status"] == "failed" and refused in failed["lastError"]
