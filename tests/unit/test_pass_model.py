"""The page walk's model (``campaigns/sending/pass_model.py``): what the forecast and a deadline's verdict
assume the worker does. Figures are worked by hand from the worker's rules (``delivery/readiness.py``)."""

from __future__ import annotations

import random
import time
from datetime import UTC, datetime, timedelta

from campaign_engine.campaigns.sending.pass_model import finish, passes, sent_by

T0 = datetime(2027, 3, 22, 12, 0, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def test_one_ready_group_pauses_between_pages_and_finishes_at_its_last_send() -> None:
    # 2,000 at 10/s over pages of 500, 100 s apart: 200 s of sending and three pauses. The full last
    # page is followed by one more pause (and a read that finds nothing), after the last recipient.
    walked = passes([(T0, 2000)], 2000, start=T0, rate=10, page=500, delay=100)
    assert finish(walked) == at(200 + 3 * 100)
    # A short last page ends the walk: 1,800 over four pages (450 each in the model) pause three times.
    assert finish(passes([(T0, 1800)], 1800, start=T0, rate=10, page=500, delay=100)) == at(180 + 300)


def test_a_group_ready_while_a_pass_runs_goes_out_on_its_later_pages_and_the_next_passes_earlier() -> None:
    # A (1,000) may receive now, B (1,000) from 150 s; four pages of 500, 250 of each group per page.
    walked = passes([(T0, 1000), (at(150), 1000)], 2000, start=T0, rate=10, page=500, delay=100)
    # Pages 0 and 1 (read at 0 and 125 s) send A's 250 each; B is ready when page 2 is read (250 s):
    # pages 2 and 3 send 500 each (150 s apart), and the full last page pauses before the pass ends at
    # 550 s; the second pass sends B's 250 on pages 0 and 1 (550 and 675 s): the last at 700 s.
    assert [(s.at, s.pages, s.per) for s in walked] == [(T0, 2, 250), (at(250), 2, 500), (at(550), 2, 250)]
    assert finish(walked) == at(700)
    b_first = min(s.at for s in walked if 1 in s.shares)
    assert b_first == at(250)  # not after A's whole pass, as a pass per group would have it (400 s)


def test_a_group_that_waits_past_the_pass_gets_a_pass_of_its_own_when_it_may() -> None:
    walked = passes([(T0, 100), (at(3600), 100)], 200, start=T0, rate=10, page=100, delay=0)
    assert [(s.at, s.pages, s.shares) for s in walked] == [(T0, 2, {0: 50}), (at(3600), 2, {1: 50})]
    assert finish(walked) == at(3610)


def test_nobody_ready_at_the_start_starts_the_walk_when_the_first_group_may() -> None:
    walked = passes([(at(600), 300)], 300, start=T0, rate=10, page=100, delay=5)
    assert walked[0].at == at(600) and finish(walked) == at(600 + 30 + 2 * 5)


def test_every_recipient_is_sent_exactly_once_whatever_the_groups() -> None:
    rng = random.Random(7)
    for _ in range(300):
        page = rng.choice([1, 50, 500, 1000])
        groups = sorted(
            (at(rng.uniform(0, 5000)), float(rng.randint(0, 3000))) for _ in range(rng.randint(1, 8))
        )
        n = int(sum(k for _, k in groups))
        walked = passes(groups, n, start=T0, rate=rng.uniform(5, 3000), page=page, delay=rng.choice([0, 60]))
        for g, (ready, k) in enumerate(groups):
            mine = [s for s in walked if g in s.shares]
            assert abs(sum(s.pages * s.shares[g] for s in mine) - k) < 1e-6 * max(k, 1)
            assert all(s.at >= ready for s in mine)
            assert abs(sum(sent_by(s, 1e9) * s.shares[g] / s.per for s in mine) - k) < 1e-6 * max(k, 1)


def test_sent_by_counts_each_pages_recipients_at_the_rate_from_its_read() -> None:
    [stretch] = passes([(T0, 1000)], 1000, start=T0, rate=10, page=500, delay=100)  # pages at 0 and 150 s
    assert [sent_by(stretch, s) for s in (0, 20, 50, 149, 160, 200, 1e6)] == [
        0,
        200,
        500,
        500,
        600,
        1000,
        1000,
    ]


def test_a_million_recipients_in_forty_groups_cost_what_a_thousand_do() -> None:
    groups = [(at(i * 97.0), 25_000.0) for i in range(40)]
    began = time.perf_counter()
    walked = passes(groups, 1_000_000, start=T0, rate=2500, page=1000, delay=60)
    elapsed = time.perf_counter() - began
    assert len(walked) <= 4 * len(groups) + 2, len(walked)
    assert elapsed < 0.5, elapsed
