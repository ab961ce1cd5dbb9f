"""``/c``: the email CTA's first-party click redirect, two hops.

``GET /c?token=`` verifies the click token (``unsubscribe/click_tokens.py:ClickTokens``, no graph read) and
answers a 302 to our own ``/c/go?token=`` (the same token), recording nothing. ``GET /c/go?token=`` hands the
click to the ``ClickRecorder`` (``campaigns/engagement/email_clicks.py``, which writes it later on its own
thread) and answers a 302 to the URL the token pins; nothing else can be a destination. So a link scanner that
fetches the link without following the redirect is never counted, nor is any ``HEAD`` (both paths answer it as
GET would, recording nothing), and the redirect answers at once whether the
graph is up or not. A self-test email's token redirects and records nothing.

A missing, tampered or foreign token (another secret, another kind, a URL changed) is the web view's
translated "invalid link" page, 404. Every answer carries ``no-store``, ``no-referrer`` (the destination
never sees the token in a ``Referer``) and ``noindex``; the token, like every token, never reaches a
log (the access line drops query strings).

Plain routes, not tRPC, like the unsubscribe and web-view pages: anonymous, the signed token is their
only authority, so they have no ``ACCESS`` row.
"""

from __future__ import annotations

from urllib.parse import quote

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from campaign_engine.campaigns.engagement.email_clicks import ClickHit, ClickRecorder
from campaign_engine.domain.types import Clock, format_ts
from campaign_engine.unsubscribe.click_tokens import CLICK_CONFIRM_PATH, CLICK_PATH, ClickTokens
from campaign_engine.unsubscribe.i18n import choose_language
from campaign_engine.unsubscribe.pages import page_headers, render_page

__all__ = ["clicks_router"]

_REDIRECT_HEADERS = {
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
    "X-Robots-Tag": "noindex, nofollow",
    "X-Content-Type-Options": "nosniff",
}


def _redirect(location: str) -> Response:
    return Response(status_code=302, headers={**_REDIRECT_HEADERS, "Location": location})


def _invalid(request: Request) -> Response:
    language = choose_language(request.headers.get("accept-language"))
    headers = {**page_headers(language), "X-Robots-Tag": "noindex, nofollow"}
    return HTMLResponse(render_page("view_invalid", language=language), status_code=404, headers=headers)


def clicks_router(*, tokens: ClickTokens, recorder: ClickRecorder, clock: Clock) -> APIRouter:
    router = APIRouter(include_in_schema=False)

    @router.api_route(CLICK_PATH, methods=["GET", "HEAD"])
    async def click(request: Request) -> Response:
        token = request.query_params.get("token", "")
        if tokens.read(token) is None:
            return _invalid(request)
        root = request.scope.get("root_path", "")
        return _redirect(f"{root}{CLICK_CONFIRM_PATH}?token={quote(token, safe='')}")

    @router.api_route(CLICK_CONFIRM_PATH, methods=["GET", "HEAD"])
    async def confirm(request: Request) -> Response:
        found = tokens.read(request.query_params.get("token", ""))
        if found is None:
            return _invalid(request)
        if request.method == "GET" and not found.test:
            recorder.record(
                ClickHit(
                    found.unsubscribe_id, found.campaign_id, found.campaign_created_at, format_ts(clock())
                )
            )
        return _redirect(found.url)

    return router
