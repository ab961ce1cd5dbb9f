"""``GET /campaigns/view?token=``: the web view of one announcement email as one recipient got it.

The token (``unsubscribe/tokens.py:WebViewTokens``) names the recipient's durable
``campaignUnsubscribeId`` and the campaign; it is the page's only authority. The page is the campaign's
email (under an approval policy its approved revision, ``campaigns/sending/approval_publish.py``)
rendered by the worker's own code in the variant the recipient's *current* profile locale is
served (``served_locale``, as at send time; a profile that changed its locale since reads its new
language, one that is gone reads the base content, so the answer says nothing about whether it
exists). It carries no per-recipient link: no unsubscribe link (a view link is forwarded and shared; it
must never unsubscribe anyone, and a page holding an unsubscribe token could leak it) and no link to
itself. Anything that is not a valid view token of an existing campaign with email content gets the
same "invalid link" page, 404, in the reader's ``Accept-Language``.

Every answer carries the unsubscribe pages' headers (``unsubscribe/pages.py:page_headers``: no-store,
no-referrer, nosniff, frame-ancestors 'none', ...); the policy admits exactly the email's own inline
``style`` attributes (by hash) and the https origins of its images, nothing else: no script, no form.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from html.parser import HTMLParser
from typing import Any
from urllib.parse import urlsplit

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from campaign_engine.config import Settings
from campaign_engine.delivery.email.compose import email_content_for
from campaign_engine.delivery.email.render import EmailConfigError
from campaign_engine.domain.ab_variants import TestWave, served_variant
from campaign_engine.domain.campaign import campaign_from_node
from campaign_engine.domain.errors import ServiceUnavailable
from campaign_engine.graph.cypher import statement
from campaign_engine.graph.graph import Graph, Tx
from campaign_engine.graph.tenant_directory import tenants_of
from campaign_engine.unsubscribe.i18n import choose_language
from campaign_engine.unsubscribe.pages import PageKind, content_security_policy, page_headers, render_page
from campaign_engine.unsubscribe.tokens import WEB_VIEW_PATH, UnsubscribeTokens

__all__ = ["policy_for", "render_web_view", "web_view_router"]

log = logging.getLogger(__name__)

# Both lookups are by unique constraint (campaignUnsubscribeId, Campaign.id); either may be missing.
_READ = "web_view_read"  # cypher/delivery/email/web_view_read.cypher


class _Resources(HTMLParser):
    """The ``style`` attribute values and https image origins of a rendered email, for its policy."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.styles: set[str] = set()
        self.images: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name == "style" and value is not None:
                self.styles.add(value)
            elif tag == "img" and name == "src" and value:
                parts = urlsplit(value)
                if parts.scheme == "https" and parts.netloc and _plain_origin(parts.netloc):
                    self.images.add(f"https://{parts.netloc.lower()}")


def _plain_origin(netloc: str) -> bool:
    """A host[:port] that cannot end or widen a CSP directive (no space, quote, ``;``, ``,`` or ``*``)."""
    return all(ch.isalnum() or ch in ".-:[]" for ch in netloc)


def policy_for(html: str) -> str:
    found = _Resources()
    found.feed(html)
    found.close()
    return content_security_policy(style_attributes=found.styles, image_origins=found.images)


def _read(
    tx: Tx, unsubscribe_id: str, campaign_id: str
) -> tuple[str | None, str | None, dict[str, Any] | None, bool]:
    record = tx.run(statement(_READ), unsubscribeId=unsubscribe_id, campaignId=campaign_id).single()
    if record is None:
        return None, None, None, False
    campaign = record["campaign"]
    return (
        record["locale"],
        record["profileId"],
        None if campaign is None else dict(campaign),
        record["routed"],
    )


def render_web_view(
    graph: Graph, settings: Settings, unsubscribe_id: str, campaign_id: str
) -> tuple[str, str] | None:
    """(html, language) of the recipient's view; None when there is nothing to show (no such campaign,
    no email content, a tenant without an app origin). ``ServiceUnavailable`` when the graph is down."""
    locale, profile_id, node, routed = graph.read(_read, unsubscribe_id, campaign_id)
    if node is None:
        return None
    if node.get("shownDefinition"):  # under an approval policy: the approved revision, not a held edit
        node = {**node, "definition": node["shownDefinition"]}
    tenants = tenants_of(graph, settings)
    campaign = campaign_from_node(node)
    try:
        content = email_content_for(
            campaign,
            origins=tenants.app_origins(),
            tenants=tenants.branding(),
            default_tenant=settings.campaign_default_tenant_id,
            locale=locale,
            # The reader's own content variant, as their email was; a reader who is gone gets
            # one drawn from the token's id, so the page still says nothing about whether they exist.
            variant_id=served_variant(
                [{"id": v.id, "weight": v.weight} for v in campaign.variants or ()],
                TestWave.of(node.get("abTest")),
                campaign_id=campaign_id,
                profile_id=profile_id or unsubscribe_id,
            )
            or campaign.variant_of(profile_id or unsubscribe_id),  # waiting for a test: no email yet
            guardian=routed,  # a guardian's email was the guardian copy
        )
    except EmailConfigError:
        return None
    return content.web_view().html, content.locale


def web_view_router(*, graph: Graph, tokens: UnsubscribeTokens, settings: Settings) -> APIRouter:
    """The route for the app factory; ``tokens`` are the unsubscribe tokens (their ``web_view`` share
    ``CAMPAIGN_UNSUBSCRIBE_SECRET``)."""
    router = APIRouter(include_in_schema=False)

    @router.get(WEB_VIEW_PATH)
    async def web_view(request: Request) -> Response:
        reader = choose_language(request.headers.get("accept-language"))
        ids = tokens.web_view.read(request.query_params.get("token", ""))
        if ids is None:
            return _page("view_invalid", reader, status=404)
        try:
            shown = await run_in_threadpool(render_web_view, graph, settings, *ids)
        except ServiceUnavailable:
            log.warning("web_view.graph_unavailable")
            return _page("view_unavailable", reader, status=503, extra={"Retry-After": "60"})
        if shown is None:
            return _page("view_invalid", reader, status=404)
        html, language = shown
        headers = {**page_headers(language, policy=policy_for(html)), "X-Robots-Tag": "noindex, nofollow"}
        return HTMLResponse(html, headers=headers)

    return router


def _page(kind: PageKind, language: str, *, status: int, extra: Mapping[str, str] | None = None) -> Response:
    headers = {**page_headers(language), **(extra or {})}
    return HTMLResponse(render_page(kind, language=language), status_code=status, headers=headers)
