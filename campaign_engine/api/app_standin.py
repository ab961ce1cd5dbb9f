"""``make dev``'s stand-in for the organisation's app: the in-app message a ``/m/<campaignId>`` link opens.

Every email's button leads (through the click redirect) to ``<app origin>/m/<campaignId>``, where the
real app opens the campaign's in-app message. ``make dev``'s app origin is the API itself, which had no
such page, so a click from a real email ended on a 404. Under ``CAMPAIGN_LOCAL_DEVELOPMENT`` only, the
API serves this page: the message as the campaign defines it (title, body, media, action labels), for
the default tenant's campaign of that id. It reads no profile and records nothing (the click was
counted by the redirect). Plain HTML under a policy with no script.
"""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import HTMLResponse
from markupsafe import Markup, escape

from campaign_engine.campaigns.definitions import get_campaign
from campaign_engine.campaigns.tenants.tenancy import campaign_in_tenant
from campaign_engine.domain.content import ExternalLink, InternalLink, Message
from campaign_engine.domain.errors import NotFound
from campaign_engine.graph.graph import Graph

__all__ = ["app_standin_router"]

_CSP = "default-src 'none'; img-src https: data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
_HEADERS = {"Content-Security-Policy": _CSP, "Cache-Control": "no-store", "Referrer-Policy": "no-referrer"}


def _page(title: str, body: Markup) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1"><link rel="icon" href="data:,">'
        f"<title>{escape(title)} · the app (make dev stand-in)</title></head><body>"
        "<header><p>The app, as <code>make dev</code> stands in for it: what a link here opens.</p>"
        f"</header><main>{body}</main></body></html>\n"
    )


def _message(message: Message) -> Markup:
    parts = [Markup("<h1>{}{}</h1>").format(f"{message.emoji} " if message.emoji else "", message.title)]
    if message.media is not None and message.media.type != "youtube":
        parts.append(
            Markup('<p><img src="{}" alt="{}"></p>').format(message.media.url, message.media.alt or "")
        )
    parts.extend(
        Markup("<p>{}</p>").format(line) for line in (message.body or "").split("\n\n") if line.strip()
    )
    for action in message.actions:
        target = action.action
        if isinstance(target, ExternalLink):
            parts.append(Markup('<p><a href="{}">{}</a></p>').format(target.url, action.label))
        else:
            where = (
                f" (opens {target.path} in the app)" if isinstance(target, InternalLink) else " (closes it)"
            )
            parts.append(Markup("<p><strong>{}</strong>{}</p>").format(action.label, where))
    return Markup("").join(parts)


def app_standin_router(*, graph: Graph, tenant_id: str) -> APIRouter:
    """``GET /m/{ref}``: the in-app message of ``tenant_id``'s campaign ``ref``."""
    router = APIRouter(include_in_schema=False)

    @router.get("/m/{ref}")
    def message(ref: str) -> HTMLResponse:
        try:
            campaign = get_campaign(graph, campaign_in_tenant(graph, tenant_id=tenant_id, ref=ref))
        except NotFound:
            body = Markup("<h1>No such campaign</h1><p>This app has no campaign '{}'.</p>").format(ref)
            return HTMLResponse(_page("No such campaign", body), status_code=404, headers=_HEADERS)
        if campaign.message is None:
            body = Markup("<h1>{}</h1><p>This campaign has no in-app message.</p>").format(campaign.name)
            return HTMLResponse(_page(campaign.name, body), headers=_HEADERS)
        return HTMLResponse(_page(campaign.message.title, _message(campaign.message)), headers=_HEADERS)

    return router
