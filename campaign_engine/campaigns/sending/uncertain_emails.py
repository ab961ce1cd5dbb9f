"""``campaigns.listUncertainEmails``: the recipients of an email Dispatch whose fate is unknown.

An ``uncertain`` email (a timeout after the request left, an answer we cannot read, a claim abandoned by
a killed worker) is never retried blindly: a second attempt could send the announcement twice. An
operator looks at these recipients instead, in pages keyed by profileId (never an offset). The query
seeks ``campaign_state_email_outcome`` (emailOutcome, emailClaimedAt), so it costs the uncertain
recipients (rare by design), never the audience. Addresses are not returned: the profile id is the handle.
"""

from __future__ import annotations

from campaign_engine.domain.camel import CamelModel
from campaign_engine.domain.errors import NotFound
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Graph, Tx

__all__ = ["UncertainEmail", "UncertainEmailPage", "list_uncertain_emails"]


_LIST = "uncertain_emails_list"  # cypher/sending/uncertain_emails_list.cypher


class UncertainEmail(CamelModel):
    profile_id: str
    reason: str | None = None
    claimed_at: str | None = None
    outcome_at: str | None = None


class UncertainEmailPage(CamelModel):
    items: list[UncertainEmail]
    next_after: str | None = None
    """Pass as ``after`` for the next page; null when this page is the last."""


def list_uncertain_emails(
    graph: Graph, *, dispatch_id: str, after: str | None = None, limit: int = 100
) -> UncertainEmailPage:
    def read(tx: Tx) -> tuple[bool, list[dict[str, object]]]:
        record = tx.run(statement(_LIST), dispatchId=dispatch_id, after=after or "", limit=limit).single(
            strict=True
        )
        return bool(record["found"]), list(record["items"] or [])

    found, rows = graph.read(read)
    if not found:
        raise NotFound(f"dispatch '{dispatch_id}' not found")
    items = [UncertainEmail.model_validate(row) for row in rows]
    return UncertainEmailPage(items=items, next_after=items[-1].profile_id if len(items) == limit else None)
