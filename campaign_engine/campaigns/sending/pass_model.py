"""The page walk as the forecast and a deadline's verdict model it: passes over the audience's pages.

The worker (``delivery/readiness.py``) walks the audience page by page. Each page sends the members
ready at the instant it is read, and a page that sent is followed by the wave delay if it was full (a
short page ends the pass; a full last page is followed by one more read that finds nothing). A pass
that ends with members deferred starts again at the first page when the earliest of them may receive.
So a group of recipients whose quiet hours end while a pass runs is sent on that pass's later pages,
and on the next pass's earlier ones: never in a pass of its own after the group before it.

``passes`` replays that walk for groups of recipients (each with the instant it may first receive),
each group spread evenly over the pages, and answers it as ``Stretch``es: runs of consecutive pages of
one pass that send the same recipients per page. Their number grows with the groups (at most two
changes per group per pass), never with the pages, so a walk of a 1,000,000-recipient audience costs
what a walk of 1,000 does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta

__all__ = ["Stretch", "finish", "passes", "sent_by"]

_WAITING, _FIRST, _PREFIX, _DONE = range(4)


@dataclass(frozen=True)
class Stretch:
    """``pages`` pages read from ``at``, ``cycle`` seconds apart, each sending ``per`` recipients at
    ``rate`` (recipients/s) of which ``shares[g]`` are group ``g``'s."""

    at: datetime
    pages: int
    per: float
    rate: float
    cycle: float
    shares: dict[int, float]

    @property
    def last_sent(self) -> datetime:
        return self.at + timedelta(seconds=(self.pages - 1) * self.cycle + self.per / self.rate)


def sent_by(stretch: Stretch, seconds: float) -> float:
    """Recipients the stretch sent ``seconds`` after it began; each page's at ``rate`` from its read."""
    if seconds <= 0:
        return 0.0
    full = min(stretch.pages, math.floor(seconds / stretch.cycle))
    if full >= stretch.pages:
        return stretch.pages * stretch.per
    return full * stretch.per + min(stretch.per, (seconds - full * stretch.cycle) * stretch.rate)


def finish(stretches: list[Stretch]) -> datetime | None:
    """When the walk's last recipient is sent (the pause after the last page is not part of it)."""
    return max((s.last_sent for s in stretches), default=None)


def passes(
    groups: list[tuple[datetime, float]], n: int, *, start: datetime, rate: float, page: int, delay: float
) -> list[Stretch]:
    """The stretches of a walk from ``start`` over an audience of ``n`` whose ``groups`` (the instant each
    may first receive, its recipients) are spread evenly over its ``ceil(n / page)`` pages."""
    pages = math.ceil(n / page) if n else 0
    if not pages or not groups:
        return []
    share = [k / pages for _, k in groups]
    ready = [at for at, _ in groups]
    state = [_WAITING] * len(groups)
    began = [0] * len(groups)  # the page a group's first ready pass began sending at
    full_last = n % page == 0
    out: list[Stretch] = []
    t = start
    for _ in range(2 * len(groups) + 2):  # a group sends in at most two passes; waiting passes send none
        j = 0
        while j < pages:
            for g, at in enumerate(ready):
                if state[g] == _WAITING and at <= t:
                    state[g], began[g] = _FIRST, j
            sending = {g: share[g] for g, s in enumerate(state)
                       if share[g] and (s == _FIRST or (s == _PREFIX and j < began[g]))}  # fmt: skip
            ends = [began[g] for g, s in enumerate(state) if s == _PREFIX and began[g] > j]
            upto = min([pages, *ends])
            if not sending:
                j = upto  # pages read and nothing sent: no time passes, no one becomes ready
                continue
            per = sum(sending.values())
            cycle = per / rate + delay
            due = [at for g, at in enumerate(ready) if state[g] == _WAITING]
            count = upto - j
            if due:  # pages read before the next group becomes ready
                count = min(count, max(1, math.ceil((min(due) - t).total_seconds() / cycle)))
            out.append(Stretch(at=t, pages=count, per=per, rate=rate, cycle=cycle, shares=sending))
            t += timedelta(seconds=count * cycle)
            j += count
            if j == pages and not full_last:
                t -= timedelta(seconds=delay)  # a short last page ends the pass without a pause
        for g, s in enumerate(state):
            if s == _PREFIX or (s == _FIRST and began[g] == 0):
                state[g] = _DONE
            elif s == _FIRST:
                state[g] = _PREFIX
        if all(s == _DONE for s in state):
            return out
        if _PREFIX not in state:  # nobody ready is left: the next pass starts when the next group may
            t = max(t, min(at for g, at in enumerate(ready) if state[g] == _WAITING))
    raise AssertionError("a walk ends within two passes per group")  # pragma: no cover
