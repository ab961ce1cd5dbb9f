"""The preview's one pass over the audience, in keyset pages: the token's entries and the counts.

Each page is one statement (``cypher/sending/dispatch_preview.cypher``); memory stays one page whatever the
audience, and the entries are a function of the recipient sets alone (profile order, notify before
email), so page boundaries never change the digest. With translations each entry names the
language its reader is served, so a reader whose variant changes voids the preview, and the counts say
which languages go out and who falls back to the base content.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from campaign_engine.domain.ab_variants import Assignment, in_test_wave
from campaign_engine.domain.dispatch import TokenDigest
from campaign_engine.domain.errors import BadRequest
from campaign_engine.domain.guardian_copy import guardian_source, routes_guardians
from campaign_engine.domain.locale import language_of
from campaign_engine.domain.variants import ContentField, served_locale, wire_languages
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Statements
from campaign_engine.graph.rules.policy import policy_params
from campaign_engine.graph.rules.routing import routed_query
from campaign_engine.graph.rules.segment import compile_for
from campaign_engine.graph.rules.segment_statements import segment_query

__all__ = ["PREVIEW_PAGE", "Tally", "pinned"]


# Members per preview page (one record each): memory stays bounded by a page whatever the audience.
PREVIEW_PAGE = 10_000


@dataclass
class Tally:
    audience: int = 0
    notified: int = 0
    notify: int = 0
    email: int = 0
    recipients: int = 0  # distinct profiles across notify and email
    in_app: int = 0  # members who see the in-app card (campaigns with one; sending/approval_publish.py)
    locales: dict[str, Counter[str]] = field(
        default_factory=lambda: {"notify": Counter(), "email": Counter()}
    )
    untranslated: Counter[str] = field(default_factory=Counter)  # by the reader's language, distinct readers
    zones: dict[str, Counter[str]] = field(
        default_factory=lambda: {"notify": Counter(), "email": Counter()}
    )  # per channel, the recipients' time zone ('' = none) -> recipients: the forecast's quiet hours
    test_share: float | None = None
    """With an experiment asked about: its share, and ``test_wave`` counts its members."""
    test_wave: Counter[str] = field(default_factory=Counter)  # test-wave recipients by assigned variant
    # Guardians routed in place of excluded members, per channel and distinct across
    # both (the ids are held only while both channels route someone: bounded by max_recipients).
    guardian_notify: int = 0
    guardian_email: int = 0
    guardians: set[str] = field(default_factory=set)
    # The routed guardians by the language of the copy they are served (guardian_copy.py), per channel,
    # and who among them reads another language than the one served (also in ``untranslated``).
    guardian_locales: dict[str, Counter[str]] = field(
        default_factory=lambda: {"notify": Counter(), "email": Counter()}
    )
    guardian_untranslated: Counter[str] = field(default_factory=Counter)
    guardians_fell_back: set[str] = field(default_factory=set)
    shown: TokenDigest | None = None
    """With an in-app card: the token of who sees it alone, which a ``publish`` request pins
    (``approval_publish.py``): a send in flight changes the whole preview, never this one."""


@dataclass(frozen=True)
class _Languages:
    """A campaign's languages per channel, and the one rule that picks a reader's
    (``domain/campaign.py:served_locale``)."""

    definition: dict[str, Any]

    @property
    def translated(self) -> bool:
        return bool(self.definition.get("translations"))

    def serve(self, field: ContentField, locale: str | None) -> str:
        return served_locale(wire_languages(self.definition, field), locale)

    def guardian_serve(self, field: ContentField, locale: str | None) -> str:
        """A routed guardian's language: over the guardian copy's languages where it has ``field``."""
        source, _ = guardian_source(self.definition, field)
        return served_locale(wire_languages(source, field), locale)

    def untranslated(self, locale: str | None, served: str) -> str | None:
        """The reader's language when they get the base content though they read another one."""
        base = self.definition.get("locale", "en")
        if not locale or served != base or language_of(locale) == language_of(base):
            return None
        return language_of(locale)


def _count_test_wave(tally: Tally, campaign: dict[str, Any], profiles: list[str]) -> None:
    """The test wave's recipients among ``profiles`` by their variant (``in_test_wave``, ``assigned``)."""
    assert tally.test_share is not None
    assignment = Assignment.of(json.loads(campaign.get("abVariants") or "[]"))
    for pid in profiles:
        if in_test_wave(campaign["id"], pid, tally.test_share):
            tally.test_wave[str(assignment.assigned(campaign_id=campaign["id"], profile_id=pid))] += 1


def pinned(
    tx: Statements,
    *,
    campaign: dict[str, Any],
    now: datetime,
    adult_age: int,
    max_recipients: int,
    tally: Tally,
) -> Iterator[str]:
    """The token's entries, one keyset page of members at a time, in ascending profileId and for each
    profile its notify entry before its email entry: a function of the two recipient sets alone, so
    page boundaries never change the digest. Counts go to ``tally`` as pages are read."""
    channels = campaign.get("channels") or []
    languages = _Languages(json.loads(campaign["definition"]))
    segment = compile_for(tx, campaign)  # a live segment is evaluated now; the token pins what it matched
    text = statement("dispatch_preview") if segment is None else segment_query("dispatch_preview", segment)
    extra = segment.params(now) if segment else {}
    cursor = ""
    while True:
        row = tx.run(
            text,
            campaignId=campaign["id"],
            cursor=cursor,
            limit=PREVIEW_PAGE,
            notify="notify" in channels,
            email="email" in channels,
            **policy_params(now, adult_age),
            **extra,
        ).single()
        assert row is not None  # an aggregation always returns one record
        if row["read"] == 0:
            return
        notify_locales: dict[str, str | None] = {str(pid): loc for pid, loc in row["notifyRows"]}
        addresses: dict[str, str] = {str(pid): str(address) for pid, address, _ in row["emailRows"]}
        email_locales: dict[str, str | None] = {str(pid): loc for pid, _, loc in row["emailRows"]}
        tally.audience += int(row["read"])
        tally.zones["notify"].update(row["notifyZones"])
        tally.zones["email"].update(row["emailZones"])
        tally.notified += int(row["notified"])
        tally.notify += len(notify_locales)
        tally.email += len(addresses)
        profiles = sorted(notify_locales.keys() | addresses.keys())
        tally.recipients += len(profiles)
        _check_cap(tally, max_recipients)
        routed: list[tuple[str, str, str]] = []
        if routes_guardians(languages.definition):
            routed = _routed_entries(
                tx.run(
                    routed_query("guardian_preview", segment),
                    campaignId=campaign["id"],
                    cursor=cursor,
                    limit=PREVIEW_PAGE,
                    notify="notify" in channels,
                    email="email" in channels,
                    **policy_params(now, adult_age),
                    **extra,
                ).single(),
                languages,
                tally,
            )
            _check_cap(tally, max_recipients)
        # With an in-app message, who sees its card joins the digest: an approval pins that audience too.
        in_app = {str(pid) for pid in row["visibleRows"]} if campaign.get("hasInAppMessage") else set()
        tally.in_app += len(in_app)
        if tally.test_share is not None:
            _count_test_wave(tally, campaign, profiles)
        # A guardian's entries sit after the entries of the first child routed to them (that child is in
        # this page), so the order, like the sets, is the same whatever the page boundaries.
        entries = iter(sorted(routed))
        pending = next(entries, None)
        for pid in sorted(in_app.union(profiles)):
            while pending is not None and pending[0] < pid:
                yield pending[2]
                pending = next(entries, None)
            if pid in in_app:
                yield f"inApp\x1f{pid}"
                if tally.shown is not None:
                    tally.shown.add(pid)
            fell_back: str | None = None
            if pid in notify_locales:
                served = languages.serve("notification", notify_locales[pid])
                tally.locales["notify"][served] += 1
                fell_back = fell_back or languages.untranslated(notify_locales[pid], served)
                # With translations, the served language joins the digest: a reader's locale that now
                # picks another variant is a new preview.
                yield f"{pid}\x1f{served}" if languages.translated else pid
            if pid in addresses:
                served = languages.serve("email", email_locales[pid])
                tally.locales["email"][served] += 1
                fell_back = fell_back or languages.untranslated(email_locales[pid], served)
                # Email destinations (profile and address) join the digest: a changed address is a new
                # preview.
                entry = f"email\x1f{pid}\x1f{addresses[pid]}"
                yield f"{entry}\x1f{served}" if languages.translated else entry
            if fell_back is not None:
                tally.untranslated[fell_back] += 1
        while pending is not None:
            yield pending[2]
            pending = next(entries, None)
        if row["read"] < PREVIEW_PAGE:
            return
        cursor = row["last"]


def _check_cap(tally: Tally, max_recipients: int) -> None:
    """The cap counts people, not sends: a member on both channels is one, and so is a guardian
    routed for several children (routed guardians are never members, ``graph/rules/routing.py``), so
    a notify and email campaign never confirms more than ``max_recipients`` people."""
    if tally.recipients + len(tally.guardians) > max_recipients:
        raise BadRequest(
            f"more than {max_recipients} eligible recipients; raise CAMPAIGN_PREVIEW_MAX_RECIPIENTS to send"
        )


def _routed_entries(row: Any, languages: _Languages, tally: Tally) -> list[tuple[str, str, str]]:
    """The token's entries for one page's routed guardians (``cypher/sending/guardian_preview.cypher``), each
    keyed by the first child routed to them: (that child, the entry's own order, the entry). A guardian's
    entry names the children it was routed for, so a consent or membership change voids the preview."""
    if row is None:  # an empty page
        return []
    out: list[tuple[str, str, str]] = []
    for pid, locale, via in row["notifyRows"]:
        served = languages.guardian_serve("notification", locale)
        tally.notify += 1
        tally.guardian_notify += 1
        tally.locales["notify"][served] += 1
        tally.guardian_locales["notify"][served] += 1
        tally.guardians.add(str(pid))
        _guardian_fell_back(tally, languages, str(pid), locale, served)
        entry = f"guardian\x1f{pid}\x1fnotify\x1f{served}\x1f{','.join(via)}"
        out.append((str(min(via)), f"{pid}\x1f0", entry))
    for pid, address, locale, via in row["emailRows"]:
        served = languages.guardian_serve("email", locale)
        tally.email += 1
        tally.guardian_email += 1
        tally.locales["email"][served] += 1
        tally.guardian_locales["email"][served] += 1
        tally.guardians.add(str(pid))
        _guardian_fell_back(tally, languages, str(pid), locale, served)
        entry = f"guardian\x1f{pid}\x1femail\x1f{address}\x1f{served}\x1f{','.join(via)}"
        out.append((str(min(via)), f"{pid}\x1f1", entry))
    return out


def _guardian_fell_back(
    tally: Tally, languages: _Languages, pid: str, locale: str | None, served: str
) -> None:
    """A guardian served the base guardian copy though they read another language is an untranslated
    reader, whatever the campaign's own translations hold: counted once, by their language."""
    fell_back = languages.untranslated(locale, served)
    if fell_back is None or pid in tally.guardians_fell_back:
        return
    tally.guardians_fell_back.add(pid)
    tally.untranslated[fell_back] += 1
    tally.guardian_untranslated[fell_back] += 1
