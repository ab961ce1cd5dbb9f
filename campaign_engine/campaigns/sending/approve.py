"""``campaigns.approveDispatch``: a second publisher approves exactly one preview (``approval.py``)."""

from __future__ import annotations

from datetime import datetime

from campaign_engine.campaigns.sending.approval import Approved, gated, record_approval
from campaign_engine.campaigns.sending.dispatch import compute_preview, reviewed
from campaign_engine.campaigns.sending.dispatch_settings import DispatchSettings
from campaign_engine.campaigns.sending.send_blocks import why_blocked
from campaign_engine.domain.errors import BadRequest, NotFound
from campaign_engine.domain.tenancy import campaign_ref
from campaign_engine.graph.audit import AuditContext
from campaign_engine.graph.graph import Graph, Tx
from campaign_engine.graph.locks import lock_campaign

__all__ = ["approve_dispatch"]


def approve_dispatch(
    graph: Graph,
    *,
    campaign_id: str,
    preview_token: str,
    approver: str,
    now: datetime,
    settings: DispatchSettings,
    audit: AuditContext | None = None,
    accept_fallback: bool = False,
) -> Approved:
    """Approve the send of exactly this preview (``approval.py``): under the campaign lock, so the
    preview the approver saw is the campaign's at the approval's commit. ``accept_fallback`` approves
    a ``missing_translation`` preview as it is (its readers get the base content) and is pinned."""

    def tx_fn(tx: Tx) -> Approved:
        locked = lock_campaign(tx, campaign_id)
        if locked is None:
            raise NotFound(f"campaign '{campaign_ref(campaign_id)}' not found")
        preview = compute_preview(tx, campaign_id=campaign_id, now=now, settings=settings).preview
        blocked = preview.blocked_reason
        fallback = blocked == "missing_translation"
        # A gated campaign's approval shows its revision in the app, whether or not it can be sent.
        if blocked is not None and not (accept_fallback and fallback) and (fallback or not gated(locked)):
            raise BadRequest(why_blocked(blocked))
        return record_approval(
            tx, graph, campaign=locked, preview_token=preview_token, current=reviewed(preview),
            accept_fallback=accept_fallback and blocked == "missing_translation", approver=approver,
            now=now, audit=audit,
        )  # fmt: skip

    return graph.write(tx_fn)
