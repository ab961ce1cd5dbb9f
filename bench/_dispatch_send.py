"""The dispatch ``bench.dispatch`` (and ``bench.load``) times, from preview to the last ``notifiedAt``
through the API process, the review's forecast beside it, and the warm-up before the measured rounds."""

import time
from typing import Any

from bench._dispatch_stack import TENANT, Admin, seed
from campaign_engine.campaigns.sending.dispatch_reads import get_dispatch
from campaign_engine.domain.types import parse_ts
from campaign_engine.graph.graph import Graph

# Warm-up: at least WARMUP_SECONDS of dispatching, then until a round is not SETTLED times faster than
# the best before it (at most MAX_WARMUP_ROUNDS rounds). On a fresh JVM the rounds' rate kept climbing
# for about 40 s (794/s in the first 10,000-recipient round, ~2,100/s from the seventh).
WARMUP_SECONDS = 60.0
SETTLED = 1.1
MAX_WARMUP_ROUNDS = 30


def run_dispatch(
    graph: Graph, admin: Admin, campaign_id: str, n: int, give_up: float, *, time_cap: float | None = None
) -> tuple[str, float, int]:
    """Preview ``campaign_id``, dispatch it with the token, and wait until all ``n`` members have
    ``notifiedAt``, or ``time_cap`` seconds after the dispatch call. Returns the Dispatch id, the
    seconds from the dispatch call to the last ``notifiedAt`` (or to the cap) and how many were notified.

    Progress is read from the Dispatch's ``acknowledged`` counter (one node; it moves in the same
    transaction as each first ``notifiedAt``): counting the campaign's CAMPAIGN_STATE relationships
    ten times a second would load the database under test with up to N reads per poll.
    """
    started = time.perf_counter()
    preview = admin.query("campaigns.previewDispatch", {"campaignId": campaign_id})
    blocked = preview["blockedReason"]  # only a one-language campaign over --languages' locales falls back
    if preview["notificationRecipientCount"] != n or blocked not in (None, "missing_translation"):
        raise RuntimeError(f"{campaign_id}: unexpected preview {preview}")
    previewed = time.perf_counter()
    confirm = {"campaignId": campaign_id, "expectedPreviewToken": preview["previewToken"]}
    answer = admin.mutate("campaigns.dispatch", {**confirm, **({"acceptFallback": True} if blocked else {})})
    confirmed = time.perf_counter()
    dispatch_id = str(answer["dispatchId"])
    while (acknowledged := get_dispatch(graph, dispatch_id).acknowledged) < n:
        if time.monotonic() > give_up:
            raise RuntimeError(f"{campaign_id}: not all {n} notified before the deadline")
        if time_cap is not None and time.perf_counter() - previewed > time_cap:
            break
        time.sleep(0.1)
    if n >= 100_000:
        print(
            f"  {campaign_id}: previewDispatch {previewed - started:.1f}s, dispatch call "
            f"{confirmed - previewed:.1f}s",
            flush=True,
        )
    elapsed = time.perf_counter() - previewed
    if "plan" in preview:  # a --baseline-ref release may predate the forecast
        print_forecast(campaign_id, preview["plan"]["notify"], elapsed, done=acknowledged == n)
    return dispatch_id, elapsed, acknowledged


def print_forecast(campaign_id: str, plan: dict[str, Any], elapsed: float, *, done: bool) -> None:
    """The review's forecast (``plan.notify``: from the preview's instant, which the dispatch call
    follows at once) next to the actual seconds from the dispatch call to the last ``notifiedAt``."""
    forecast = (parse_ts(plan["finishesAt"]) - parse_ts(plan["startsAt"])).total_seconds()
    actual = f"actual {elapsed:.1f}s" if done else f"stopped at {elapsed:.1f}s"
    print(
        f"  {campaign_id}: forecast finish {forecast:.1f}s ({plan['rateSource']} {plan['rate']:.0f}/s), "
        f"{actual}, ratio forecast/actual {forecast / elapsed:.2f}",
        flush=True,
    )


def warm_up(
    graph: Graph, admin: Admin, size: int, give_up: float, *, label: str = "warmup", tenant: str = TENANT
) -> None:
    """Untimed dispatches of ``size`` recipients, each to a fresh campaign, until the rate settles."""
    best, dispatching = 0.0, 0.0
    for round_ in range(1, MAX_WARMUP_ROUNDS + 1):
        campaign_id = f"bench-{label}-{round_}"
        seed(graph, campaign_id, size, tenant=tenant)
        _, elapsed, _ = run_dispatch(graph, admin, campaign_id, size, give_up)
        dispatching += elapsed
        print(f"warm-up {round_}: {size} recipients at {size / elapsed:.0f}/s", flush=True)
        if dispatching >= WARMUP_SECONDS and size / elapsed < best * SETTLED:
            return
        best = max(best, size / elapsed)
