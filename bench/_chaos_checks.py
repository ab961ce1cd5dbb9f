"""The promises a chaos run checks at the end, each against what the receivers themselves recorded (the
reference inbox's sqlite file, the catcher's .eml files, the queue file's dead letters) and what the API
answers (every Dispatch of the campaign, ``campaigns.getStats``).

- lost: eligible recipients the inbox never stored (every recipient is eligible for notify).
- duplicate_emails: addresses with more than one message in the catcher's mailbox.
- counter_mismatches, one per broken equality:
  notify — the inbox holds a recipient twice, or one not in the audience; ``notified`` (getStats) and the
  sum of the notify Dispatches' ``acknowledged`` both equal the recipients the inbox stored.
  email — ``emailed`` (getStats) equals the sum of the email Dispatches' ``emailed``; the catcher holds
  only audience addresses; and ``emailed <= caught <= emailed + uncertain``: an accepted email is in the
  catcher, and the only emails the catcher may hold beyond them are ``uncertain`` ones (the connection
  died after the text was sent; never retried, so the catcher has it or not, and either is kept).
  Every email Dispatch's recipients are accounted: ``emailed + rejected + uncertain`` of the audience
  once the sweeper has counted abandoned claims (a killed worker's). Dead-lettered messages: every
  recipient is deliverable, so any dead letter is one mismatch.
- Each is checked per campaign (the bulk one and the critical one, whose emails carry their own subject)
  and summed (``merge``): a critical send that overtook the bulk walk under the faults loses, repeats and
  miscounts no one either.
- stuck: Dispatches neither ``completed`` nor ``stopped`` (a pause stops one; its successor completes).
  A run whose driver gave up waiting (the API did not answer, a Dispatch did not end in time) counts
  what the receivers' own files show and is ``stuck`` (``gave_up``): a broken promise with its RESULT
  line, never a traceback without a verdict.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from email.parser import BytesHeaderParser
from email.utils import parseaddr
from pathlib import Path
from typing import Any

__all__ = [
    "Result",
    "caught_addresses",
    "check",
    "dead_letters",
    "gave_up",
    "inbox_recipients",
    "inbox_resends",
    "merge",
]

_TERMINAL_OK = {"completed", "stopped"}


@dataclass
class Result:
    recipients: int
    lost: int = 0
    duplicate_emails: int = 0
    stuck: int = 0
    mismatches: list[str] = field(default_factory=list)
    critical: int = 0  # the critical campaign's recipients, when merged with its result

    def line(self, faults: int) -> str:
        return (
            f"RESULT faults={faults} recipients={self.recipients} lost={self.lost} "
            f"duplicate_emails={self.duplicate_emails} counter_mismatches={len(self.mismatches)} "
            f"stuck={self.stuck} critical={self.critical}"
        )

    @property
    def ok(self) -> bool:
        return not (self.lost or self.duplicate_emails or self.stuck or self.mismatches)


def inbox_recipients(db: Path, campaign_id: str) -> Counter[str]:
    """Rows per recipient of the campaign's real (not self-test) notifications, after the inbox's dedup."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    try:
        rows = conn.execute(
            "SELECT recipient FROM notifications WHERE campaign_id = ? AND test_id = ''", (campaign_id,)
        ).fetchall()
    finally:
        conn.close()
    return Counter(str(r[0]) for r in rows)


def inbox_resends(db: Path, campaign_id: str) -> int:
    """POSTs the inbox received again for a notification it already stored (its dedup at work): the
    evidence that the faults made the worker retry what had in fact arrived."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    try:
        row = conn.execute(
            "SELECT coalesce(sum(receive_count - 1), 0) FROM notifications WHERE campaign_id = ?",
            (campaign_id,),
        ).fetchone()
    finally:
        conn.close()
    return int(row[0])


def caught_addresses(mailbox: Path, *, subject: str | None = None) -> Counter[str]:
    """Messages per ``To`` address in the catcher's mailbox (finished files only), of one ``subject``."""
    parser = BytesHeaderParser()
    found: Counter[str] = Counter()
    for path in mailbox.glob("*.eml"):
        with path.open("rb") as file:
            headers = parser.parse(file)
        if subject is None or str(headers["Subject"]) == subject:
            found[parseaddr(str(headers["To"]))[1].lower()] += 1
    return found


def dead_letters(queue: Path) -> int:
    conn = sqlite3.connect(f"file:{queue}?mode=ro", uri=True, timeout=30)
    try:
        return int(conn.execute("SELECT count(*) FROM dead_letters").fetchone()[0])
    finally:
        conn.close()


def check(
    *,
    audience: dict[str, str],
    inbox: Counter[str],
    caught: Counter[str],
    dispatches: list[dict[str, Any]],
    stats: dict[str, Any],
    dead: int,
) -> Result:
    """``audience``: profileId → email address, every one eligible for both channels."""
    result = Result(recipients=len(audience))
    mismatch = result.mismatches.append
    stored = set(inbox)
    result.lost = len(set(audience) - stored)
    if twice := [r for r, n in inbox.items() if n > 1]:
        mismatch(f"the inbox holds {len(twice)} recipients more than once")
    if strangers := stored - set(audience):
        mismatch(f"the inbox holds {len(strangers)} recipients outside the audience")
    notify = [d for d in dispatches if d["channel"] == "notify"]
    email = [d for d in dispatches if d["channel"] == "email"]
    acknowledged = sum(int(d["acknowledged"]) for d in notify)
    if int(stats["notified"]) != len(stored):
        mismatch(f"notified={stats['notified']} but the inbox stored {len(stored)}")
    if acknowledged != len(stored):
        mismatch(f"notify dispatches acknowledged={acknowledged} but the inbox stored {len(stored)}")

    result.duplicate_emails = sum(1 for n in caught.values() if n > 1)
    emailed = sum(int(d["emailed"]) for d in email)
    uncertain = sum(int(d["uncertain"]) for d in email)
    rejected = sum(int(d["rejected"]) for d in email)
    if int(stats["emailed"]) != emailed:
        mismatch(f"getStats emailed={stats['emailed']} but the email dispatches say {emailed}")
    if outsiders := set(caught) - {a.lower() for a in audience.values()}:
        mismatch(f"the catcher holds {len(outsiders)} addresses outside the audience")
    if not emailed <= len(caught) <= emailed + uncertain:
        mismatch(f"the catcher holds {len(caught)} addresses; emailed={emailed} uncertain={uncertain}")
    if emailed + uncertain + rejected != len(audience):
        mismatch(
            f"email outcomes emailed={emailed} uncertain={uncertain} rejected={rejected} != {len(audience)}"
        )
    if dead:
        mismatch(f"{dead} messages dead-lettered (every recipient was deliverable)")
    result.stuck = sum(1 for d in dispatches if d["status"] not in _TERMINAL_OK)
    if {"notify", "email"} - {d["channel"] for d in dispatches if d["status"] == "completed"}:
        mismatch("no completed dispatch for every channel")
    return result


def gave_up(
    *,
    audience: dict[str, str],
    inbox_db: Path,
    mailbox: Path,
    campaign_id: str | None,
    dispatches: Callable[[], list[dict[str, Any]]] | None,
    subject: str | None,
    why: str,
) -> Result:
    """The verdict of a run whose driver timed out: what the receivers hold, and ``stuck``: the
    Dispatches not ended, or 1 when they cannot be read (something did not end while the driver waited)."""
    stuck = 1
    if dispatches is not None:
        with contextlib.suppress(TimeoutError, RuntimeError):
            stuck = max(1, sum(1 for d in dispatches() if d["status"] not in _TERMINAL_OK))
    inbox: Counter[str] = Counter()
    if campaign_id is not None:
        with contextlib.suppress(sqlite3.Error):  # no table before the first notification
            inbox = inbox_recipients(inbox_db, campaign_id)
    result = Result(recipients=len(audience), stuck=stuck, mismatches=[why])
    result.lost = len(set(audience) - set(inbox))
    result.duplicate_emails = sum(1 for n in caught_addresses(mailbox, subject=subject).values() if n > 1)
    return result


def merge(bulk: Result, critical: Result) -> Result:
    """The two campaigns' verdicts as one: the promises summed, the critical one's mismatches named."""
    return Result(
        recipients=bulk.recipients,
        lost=bulk.lost + critical.lost,
        duplicate_emails=bulk.duplicate_emails + critical.duplicate_emails,
        stuck=bulk.stuck + critical.stuck,
        mismatches=bulk.mismatches + [f"critical campaign: {m}" for m in critical.mismatches],
        critical=critical.recipients,
    )
