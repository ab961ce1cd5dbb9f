"""The done-when of live segments and guardian routing through ``make dev``'s processes: a live segment and
guardian routing on a generated fixture of families, checked against the real reference inbox and independent
Cypher counts.

    .venv/bin/python -m bench.audience_routing --profiles 100000

The fixture is ``--profiles`` profiles in families of six: two adult guardians, two minors and two adults
without children. The first guardian has both children (several children), the second only the younger
and has revoked consent in every third family; the elder child of every fifth family has no guardian;
the first guardian of every fourth family is also a member of the guardian-routed campaign. Tags:
``news`` on every childless adult and some guardians, ``grade7`` on both children and one childless
adult of every even family. One more adult, ``zzzz-late``, sorts last and is untagged.

Two campaigns, notify channel, paced waves:

- ``updates``: the live segment ``{"tag": "news"}``. ``zzzz-late`` is tagged once the dispatch has
  started: it must be in a later wave (delivered, though the preview did not count it).
- ``families``: the static audience of tag ``grade7`` with ``minors: "guardians"``: no announcement to a
  minor, exactly one per consenting adult guardian of a member and per adult member, whatever the
  number of their children, checked against the generator's own model and an independent Cypher count.

Every check raises on a mismatch; the figures (profiles, recipients, seconds) are printed.
``tests/e2e/test_segments_and_guardians_through_dev_processes.py`` runs it on a small fixture.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench._chaos_checks import inbox_recipients
from bench._chaos_stack import Stack
from bench.chaos import Api
from campaign_engine.api.auth import ADMIN_SCOPE, mint_token
from campaign_engine.config import Settings
from campaign_engine.graph.graph import open_graph
from campaign_engine.graph.rules.policy import policy_params

__all__ = ["Families", "families", "main", "run"]

ADULT, MINOR = "1980-01-01", "2014-05-01"
LATE = "zzzz-late"


@dataclass
class Families:
    """The generated rows and the recipients each campaign must reach, by the generator's own model."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    minors: set[str] = field(default_factory=set)
    news: set[str] = field(default_factory=set)
    routed: set[str] = field(default_factory=set)  # who the guardian-routed campaign must reach


def families(profiles: int) -> Families:
    out = Families()
    for f in range(max(1, -(-profiles // 6))):  # at least `profiles`
        g0, g1, k0, k1, a0, a1 = (f"f{f:07d}{s}" for s in ("g0", "g1", "k0", "k1", "a0", "a1"))
        even, revoked = f % 2 == 0, f % 3 == 0
        g0_tags = ["news", "grade7"] if f % 4 == 0 else []
        rows = [
            {"profileId": g0, "dob": ADULT, "tags": g0_tags},
            {"profileId": g1, "dob": ADULT, "tags": ["news"] if f % 3 == 1 else []},
            {"profileId": k0, "dob": MINOR, "tags": ["grade7"] if even else [],
             "guardians": [] if f % 5 == 1 else [{"profileId": g0, "consent": "granted"}]},
            {"profileId": k1, "dob": MINOR, "tags": ["grade7"] if even else [],
             "guardians": [{"profileId": g0, "consent": "granted"},
                           {"profileId": g1, "consent": "revoked" if revoked else "granted"}]},
            {"profileId": a0, "dob": ADULT, "tags": ["news", "grade7"] if even else ["news"]},
            {"profileId": a1, "dob": ADULT, "tags": ["news"]},
        ]  # fmt: skip
        out.rows += rows
        out.minors |= {k0, k1}
        out.news |= {str(r["profileId"]) for r in rows if "news" in r["tags"]}
        if even:  # members k0, k1 (routed), a0, and g0 where tagged: g0 guards both, g1 k1 if granted
            out.routed |= {a0, g0} | (set() if revoked else {g1})
    out.rows.append({"profileId": LATE, "dob": ADULT, "tags": []})
    out.news.add(LATE)
    return out


# Independent of the engine's statements: who the routed campaign must reach, read straight from the
# links (a member the age policy holds for a minor is replaced by their adult guardians with consent).
_ROUTED = """
MATCH (m:Profile)-[:IN_CAMPAIGN_AUDIENCE]->(:Campaign {ref: $ref})
WITH m, m.dob > $adultDob AS minor
OPTIONAL MATCH (g:Profile)-[l:GUARDIAN_OF]->(m)
  WHERE minor AND l.consent = 'granted' AND g.dob <= $adultDob
WITH CASE WHEN minor THEN g.profileId ELSE m.profileId END AS id
WHERE id IS NOT NULL
RETURN collect(DISTINCT id) AS ids
"""


def _wait(what: str, done: Callable[[], bool], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what} after {timeout:.0f} s")
        time.sleep(1)


_SETTLED = ("acknowledged", "rejected", "suppressed", "uncertain")


def _completed(admin: Api, campaign_id: str) -> bool:
    """Every dispatch completed and every enqueued notification answered: a notify dispatch completes
    when its walk ends, while its last wave may still await the receiver."""
    dispatches = admin.query("campaigns.listDispatches", {"campaignId": campaign_id})
    return bool(dispatches) and all(
        d["status"] == "completed" and sum(int(d.get(k) or 0) for k in _SETTLED) >= int(d["enqueued"] or 0)
        for d in dispatches
    )


def _send(admin: Api, campaign_id: str) -> dict[str, Any]:
    admin.mutate("campaigns.setStatus", {"campaignId": campaign_id, "status": "live"})
    preview = admin.query("campaigns.previewDispatch", {"campaignId": campaign_id})
    assert preview["blockedReason"] is None, preview
    admin.mutate(
        "campaigns.dispatch", {"campaignId": campaign_id, "expectedPreviewToken": preview["previewToken"]}
    )
    return dict(preview)


def run(
    work: Path,
    *,
    profiles: int,
    page_size: int,
    say: Callable[[str], None] = print,
    graph_uri: str | None = None,
) -> dict[str, Any]:
    """The whole check on a fresh stack under ``work``; its figures. ``graph_uri``: an empty running
    Neo4j to use instead of the stack's own (the test's)."""
    fixture = families(profiles)
    source = work / "families.jsonl"
    source.write_text("".join(json.dumps(row) + "\n" for row in fixture.rows))
    stack = Stack(work / "dev", page_size=page_size, delay_seconds=1, graph_uri=graph_uri)
    figures: dict[str, Any] = {"profiles": len(fixture.rows)}
    try:
        stack.start()
        started = time.monotonic()
        stack.cli("profiles", "import", str(source), timeout=3600)
        figures["import_s"] = round(time.monotonic() - started, 1)
        settings = Settings(_env_file=stack.env_file)  # type: ignore[call-arg]
        admin = Api(stack.api_url, mint_token(settings, profile_id="admin", scope=ADMIN_SCOPE), patience=120)
        with admin.client:
            figures |= _segment(stack, admin, fixture, say)
            figures |= _guardians(stack, admin, fixture, settings, say)
    finally:
        stack.stop()
    return figures


def _segment(stack: Stack, admin: Api, fixture: Families, say: Callable[[str], None]) -> dict[str, Any]:
    admin.mutate("campaigns.create", {
        "id": "updates", "name": "Updates", "channels": ["notify"], "segment": {"tag": "news"},
        "notification": {"title": "Term dates", "body": "The new term starts on Monday"},
    })  # fmt: skip
    started = time.monotonic()
    preview = _send(admin, "updates")
    assert preview["recipientCount"] == len(fixture.news) - 1, (preview["recipientCount"], len(fixture.news))
    # Tagged once the walk has begun: the preview did not count them, a later wave reaches them.
    admin.mutate("profiles.upsert", {"profiles": [{"profileId": LATE, "tags": ["news"]}]})
    _wait("the segment's dispatch", lambda: _completed(admin, "updates"), timeout=3600)
    seconds = time.monotonic() - started
    delivered = inbox_recipients(stack.inbox_db, "updates")
    assert set(delivered) == fixture.news, sorted(set(delivered) ^ fixture.news)[:10]
    assert max(delivered.values()) == 1, delivered.most_common(3)
    say(f"live segment: {len(delivered)} recipients in {seconds:.1f} s, {LATE} tagged after the dispatch "
        "started and reached by a later wave")  # fmt: skip
    return {"segment_recipients": len(delivered), "segment_s": round(seconds, 1)}


def _guardians(
    stack: Stack, admin: Api, fixture: Families, settings: Settings, say: Callable[[str], None]
) -> dict[str, Any]:
    admin.mutate("campaigns.create", {
        "id": "families", "name": "Families", "channels": ["notify"], "minors": "guardians",
        "notification": {"title": "Parents' evening", "body": "Thursday at 6 pm"},
    })  # fmt: skip
    admin.mutate(
        "campaigns.addAudience", {"campaignId": "families", "source": {"type": "tag", "slug": "grade7"}}
    )
    graph = open_graph(settings.model_copy(update={"neo4j_uri": stack.env["NEO4J_URI"]}))
    try:
        params = policy_params(datetime.now(UTC), settings.campaign_adult_age)
        independent = set(graph.run(_ROUTED, ref="families", **params)[0]["ids"])
    finally:
        graph.close()
    assert independent == fixture.routed, sorted(independent ^ fixture.routed)[:10]
    started = time.monotonic()
    preview = _send(admin, "families")
    _wait("the guardian-routed dispatch", lambda: _completed(admin, "families"), timeout=3600)
    seconds = time.monotonic() - started
    delivered = inbox_recipients(stack.inbox_db, "families")
    assert not set(delivered) & fixture.minors, sorted(set(delivered) & fixture.minors)[:10]
    assert set(delivered) == independent, sorted(set(delivered) ^ independent)[:10]
    assert max(delivered.values()) == 1, delivered.most_common(3)
    guardians = len(set(delivered) - {r["profileId"] for r in fixture.rows if "grade7" in r["tags"]})
    assert preview["guardianRecipientCount"] == guardians, (preview["guardianRecipientCount"], guardians)
    say(f"guardian routing: {len(delivered)} recipients ({guardians} reached as guardians, 0 minors) in "
        f"{seconds:.1f} s, equal to an independent Cypher count")  # fmt: skip
    return {"routed_recipients": len(delivered), "guardians": guardians, "routed_s": round(seconds, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--profiles", type=int, default=100_000)
    parser.add_argument("--page-size", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="audience-routing-") as tmp:
        figures = run(Path(tmp), profiles=args.profiles, page_size=args.page_size)
    print("RESULT " + " ".join(f"{k}={v}" for k, v in figures.items()))


if __name__ == "__main__":
    main()
