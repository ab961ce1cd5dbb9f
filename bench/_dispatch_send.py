"""The dispatch ``bench.dispatch`` (and ``bench.load``) times, from preview to the last ``notifiedAt``
(and, for a notify + email campaign, to its email Dispatch's end) through the API process, the review's
forecast beside each channel, and the warm-up before the measured rounds."""

import time
from dataclasses import dataclass, field
from typing import Any

from bench._dispatch_stack import TENANT, Admin, seed
from campaign_engine.campaigns.sending.dispatch_reads import get_dispatch
from campaign_engine.domain.types import parse_ts
from campaign_engine.graph.graph import Graph

# Warm-up: at least WARMUP_SECONDS of dispatching, then until a round is not SETTLED times faster than
# the best before it (at most MAX_WARMUP_ROUNDS rounds). On a fresh JVM the rounds' rate kept climbing
# for about 40 s (794/s in the first 10,000-recipient round, ~2,100/s from the seventh). The warm-ups'
# campaigns are named next to the rounds' ("bench-0-N", then "bench-1"): the first send to a campaign whose
# id falls where no send's had cost Neo4j a one-off 1.3 core-s of Bolt work and 1.5-2.7 s of compiling, a
# quarter of a 10,000-recipient round (every first round after "bench-warmup-N" warm-ups or named
# "bench-zz-1" in 13 runs; none after "bench-warmup-9N" or "bench-0-N" ones).
WARMUP_SECONDS = 60.0
SETTLED = 1.1
MAX_WARMUP_ROUNDS = 30


@dataclass
class Sent:
    """One dispatch as ``send`` waited for it, per channel: the seconds from the dispatch call to the
    channel's end (or to the cap) and the recipients it reached (notified; emailed)."""

    dispatch_id: str
    seconds: dict[str, float]
    reached: dict[str, int]
    plans: dict[str, Any] = field(default_factory=dict)
    """The review's forecast per channel (``plan`` of the preview right before the dispatch call)."""
    called_at: float = 0.0
    """The wall-clock instant (``time.time()``) of the dispatch call, to set receivers' times against."""

    @property
    def elapsed(self) -> float:
        """To the end of the last channel: the campaign's send."""
        return max(self.seconds.values())


def run_dispatch(
    graph: Graph, admin: Admin, campaign_id: str, n: int, give_up: float, *, time_cap: float | None = None
) -> tuple[str, float, int]:
    """``send``: the Dispatch id, the seconds from the dispatch call until every channel ended (or to
    the cap) and how many were notified."""
    sent = send(graph, admin, campaign_id, n, give_up, time_cap=time_cap)
    return sent.dispatch_id, sent.elapsed, sent.reached["notify"]


def send(
    graph: Graph, admin: Admin, campaign_id: str, n: int, give_up: float, *, time_cap: float | None = None
) -> Sent:
    """Preview ``campaign_id``, dispatch it with the token, and wait until all ``n`` members have
    ``notifiedAt`` (notify) and its email Dispatch is ``completed`` (every member's email has an outcome),
    for each channel the campaign walks, or ``time_cap`` seconds after the dispatch call.

    Progress is read from each channel's Dispatch (one node: ``acknowledged`` moves in the same
    transaction as each first ``notifiedAt``, ``emailed`` with each page's outcomes): counting the
    campaign's CAMPAIGN_STATE relationships ten times a second would load the database under test with
    up to N reads per poll.
    """
    started = time.perf_counter()
    preview = admin.query("campaigns.previewDispatch", {"campaignId": campaign_id})
    blocked = preview["blockedReason"]  # only a one-language campaign over --languages' locales falls back
    plans = preview.get("plan") or {}  # a --baseline-ref release may predate the forecast: notify only
    counts = {"notify": preview["notificationRecipientCount"], "email": preview.get("emailRecipientCount")}
    if any(counts[ch] != n for ch in plans or ["notify"]) or blocked not in (None, "missing_translation"):
        raise RuntimeError(f"{campaign_id}: unexpected preview {preview}")
    called_at, previewed = time.time(), time.perf_counter()
    confirm = {"campaignId": campaign_id, "expectedPreviewToken": preview["previewToken"]}
    answer = admin.mutate("campaigns.dispatch", {**confirm, **({"acceptFallback": True} if blocked else {})})
    confirmed = time.perf_counter()
    ids: dict[str, str] = answer.get("dispatchIds") or {"notify": answer["dispatchId"]}  # older releases
    seconds: dict[str, float] = {}
    reached = dict.fromkeys(ids, 0)
    while True:
        for channel in sorted(ids.keys() - seconds.keys()):
            record = get_dispatch(graph, ids[channel])
            reached[channel] = record.acknowledged if channel == "notify" else record.emailed
            if record.status in ("failed", "stopped", "cancelled"):
                raise RuntimeError(
                    f"{campaign_id}: the {channel} Dispatch {record.status}: {record.last_error}"
                )
            if (reached[channel] >= n) if channel == "notify" else (record.status == "completed"):
                seconds[channel] = time.perf_counter() - previewed
        if len(seconds) == len(ids):
            break
        if time.monotonic() > give_up:
            raise RuntimeError(f"{campaign_id}: not all {n} sent ({reached}) before the deadline")
        if time_cap is not None and time.perf_counter() - previewed > time_cap:
            seconds.update(dict.fromkeys(ids.keys() - seconds.keys(), time.perf_counter() - previewed))
            break
        time.sleep(0.1)
    if n >= 100_000:
        print(
            f"  {campaign_id}: previewDispatch {previewed - started:.1f}s, dispatch call "
            f"{confirmed - previewed:.1f}s",
            flush=True,
        )
    for channel in [ch for ch in ids if ch in plans]:
        print_forecast(campaign_id if channel == "notify" else f"{campaign_id} {channel}",
                       plans[channel], seconds[channel], done=reached[channel] == n)  # fmt: skip
    return Sent(str(answer["dispatchId"]), seconds, reached, plans, called_at)


def print_forecast(campaign_id: str, plan: dict[str, Any], elapsed: float, *, done: bool) -> None:
    """The review's forecast of a channel (``plan.notify``, ``plan.email``: from the preview's instant,
    which the dispatch call follows at once) next to the actual seconds from the dispatch call to the
    channel's end (the last ``notifiedAt``; the email Dispatch ``completed``)."""
    forecast = (parse_ts(plan["finishesAt"]) - parse_ts(plan["startsAt"])).total_seconds()
    actual = f"actual {elapsed:.1f}s" if done else f"stopped at {elapsed:.1f}s"
    print(
        f"  {campaign_id}: forecast finish {forecast:.1f}s ({plan['rateSource']} {plan['rate']:.0f}/s), "
        f"{actual}, ratio forecast/actual {forecast / elapsed:.2f}",
        flush=True,
    )


def warm_up(
    graph: Graph, admin: Admin, size: int, give_up: float, *, label: str = "0", tenant: str = TENANT
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
