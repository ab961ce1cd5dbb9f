"""HTTP edge of unsubscribing: the RFC 8058 one-click endpoint and the browser page.

``POST /campaigns/unsubscribe?token=`` is what a mail client calls after the user pressed its own
unsubscribe button: no login, cookies, redirects or script, body ``List-Unsubscribe=One-Click`` sent as
``application/x-www-form-urlencoded`` or ``multipart/form-data`` (RFC 8058 section 3.2). A GET of the same
URL never changes anything (link scanners and prefetchers fetch it): it renders the confirmation form,
which posts to the browser page. Every answer is the same whether or not the token's profile still
exists, and none carries profile data. A link names the tenant whose email carried it: the pages name
that tenant (its display name, read from the cached tenant directory; the page still answers without it
when the graph is down) and the opt-out is that tenant's unless the form sends ``scope=all`` ("from
every organisation"); a link that names no tenant (sent before per-tenant opt-outs) is deployment-wide,
as it always was. The token lives in the query string, so access logs must not
record it (see ``redaction.py``).

When the graph cannot record an opt-out (an outage: ``ServiceUnavailable``), both POSTs answer 503 with
``Retry-After`` and the same headers as every other answer (CSP, no-store, no-referrer), the browser
one with a translated "try again" page: nothing changed, and the link still works later. The GETs
never need the graph (the tenant's name comes from the directory's cache, or is left out), so they keep
answering during an outage.
"""

from __future__ import annotations

import email.policy
import logging
from collections.abc import Callable
from email.message import EmailMessage
from email.parser import BytesParser
from urllib.parse import parse_qsl, quote

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response

from campaign_engine.domain.errors import ServiceUnavailable
from campaign_engine.domain.types import Clock
from campaign_engine.graph.graph import Graph
from campaign_engine.unsubscribe.i18n import choose_language
from campaign_engine.unsubscribe.optout import Scope, opt_out_by_unsubscribe_id
from campaign_engine.unsubscribe.pages import PageKind, page_headers, render_page
from campaign_engine.unsubscribe.tokens import InvalidUnsubscribeToken, UnsubscribeLink, UnsubscribeTokens

__all__ = ["BROWSER_PATH", "ONE_CLICK_PATH", "unsubscribe_router"]

ONE_CLICK_PATH = "/campaigns/unsubscribe"
BROWSER_PATH = "/campaigns/unsubscribe/browser"
_MAX_BODY_BYTES = 16 * 1024
_ONE_CLICK_FIELD, _ONE_CLICK_VALUE = "List-Unsubscribe", "One-Click"
_RETRY_AFTER_SECONDS = "60"
_SCOPE_FIELD = "scope"

TenantName = Callable[[str], "str | None"]
"""A tenant's display name (None when unknown); may raise while the graph is down."""

log = logging.getLogger(__name__)


def _headers(language: str, status: int) -> dict[str, str]:
    headers = page_headers(language)
    if status == 503:
        headers["Retry-After"] = _RETRY_AFTER_SECONDS
    return headers


def _plain(text: str, *, status: int) -> Response:
    return PlainTextResponse(text + "\n", status_code=status, headers=_headers("en", status))


def _page(
    kind: PageKind,
    *,
    language: str,
    status: int,
    action: str | None = None,
    link: UnsubscribeLink | None = None,
    tenant_name: str | None = None,
    scope: Scope = "tenant",
) -> Response:
    named = link is not None and link.tenant_id is not None
    html = render_page(
        kind, language=language, action=action, tenant_name=tenant_name, named=named, scope_all=scope == "all"
    )
    return HTMLResponse(html, status_code=status, headers=_headers(language, status))


def _scope(fields: dict[str, str]) -> Scope | None:
    """The form's ``scope``: ``tenant`` when absent; None for anything else (refused)."""
    value = fields.get(_SCOPE_FIELD, "tenant")
    return "all" if value == "all" else "tenant" if value == "tenant" else None


async def _capped_body(request: Request) -> bytes | None:
    """The request body, or None when it exceeds ``_MAX_BODY_BYTES`` (the RFC body is 26 bytes)."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > _MAX_BODY_BYTES:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def _form_fields(content_type: str, body: bytes) -> dict[str, str]:
    media = content_type.split(";")[0].strip().lower()
    if media == "application/x-www-form-urlencoded":
        try:
            return dict(parse_qsl(body.decode("ascii"), keep_blank_values=True))
        except (UnicodeDecodeError, ValueError):
            return {}
    if media == "multipart/form-data":
        head = f"Content-Type: {content_type}\r\nMIME-Version: 1.0\r\n\r\n".encode("latin-1", "replace")
        message = BytesParser(_class=EmailMessage, policy=email.policy.HTTP).parsebytes(head + body)
        if not message.is_multipart():
            return {}
        fields: dict[str, str] = {}
        for part in message.iter_parts():
            name = part.get_param("name", header="content-disposition")
            payload = part.get_payload(decode=True)
            if isinstance(name, str) and isinstance(payload, bytes):
                fields[name] = payload.decode("utf-8", "replace").strip()
        return fields
    return {}


def unsubscribe_router(
    *,
    graph: Graph,
    tokens: UnsubscribeTokens,
    clock: Clock,
    tenant_name: TenantName = lambda _tenant: None,
) -> APIRouter:
    """Routes for the app factory, which builds ``tokens`` once from ``CAMPAIGN_UNSUBSCRIBE_SECRET``
    and ``tenant_name`` from its tenant directory."""
    router = APIRouter(include_in_schema=False)

    def read_token(request: Request) -> UnsubscribeLink | None:
        try:
            return tokens.read_link(request.query_params.get("token", ""))
        except InvalidUnsubscribeToken:
            return None

    async def name_of(link: UnsubscribeLink) -> str | None:
        """The link's tenant's display name; None when it names none or the directory cannot say now."""
        if link.tenant_id is None:
            return None
        try:
            return await run_in_threadpool(tenant_name, link.tenant_id)
        except ServiceUnavailable:
            log.warning("unsubscribe.tenant_name_unavailable")
            return None

    async def opt_out(link: UnsubscribeLink, scope: Scope, procedure: str) -> bool:
        """False when the graph cannot record it now. Whether a profile was found is deliberately
        ignored: answers must not reveal it."""
        try:
            await run_in_threadpool(
                lambda: opt_out_by_unsubscribe_id(
                    graph,
                    link.unsubscribe_id,
                    now=clock(),
                    tenant_id=link.tenant_id,
                    scope=scope,
                    campaign=link.campaign,
                    procedure=procedure,
                )
            )
        except ServiceUnavailable:
            log.warning("unsubscribe.graph_unavailable")
            return False
        return True

    async def confirm_page(request: Request) -> Response:
        language = choose_language(request.headers.get("accept-language"))
        link = read_token(request)
        if link is None:
            return _page("invalid", language=language, status=400)
        token = request.query_params["token"]
        action = f"{request.scope.get('root_path', '')}{BROWSER_PATH}?token={quote(token, safe='')}"
        name = await name_of(link)
        return _page("confirm", language=language, status=200, action=action, link=link, tenant_name=name)

    @router.get(ONE_CLICK_PATH)
    async def one_click_page(request: Request) -> Response:
        return await confirm_page(request)

    @router.post(ONE_CLICK_PATH)
    async def one_click(request: Request) -> Response:
        link = read_token(request)
        if link is None:
            return _plain("This unsubscribe link is not valid.", status=400)
        body = await _capped_body(request)
        if body is None:
            return _plain("Request body too large.", status=413)
        fields = _form_fields(request.headers.get("content-type", ""), body)
        scope = _scope(fields)
        if fields.get(_ONE_CLICK_FIELD) != _ONE_CLICK_VALUE:
            return _plain("Expected the form body List-Unsubscribe=One-Click.", status=400)
        if scope is None:
            return _plain("The scope must be tenant or all.", status=400)
        if not await opt_out(link, scope, "unsubscribe.oneClick"):
            return _plain(
                "Unsubscribing is unavailable right now; nothing changed. Try again later.", status=503
            )
        if link.tenant_id is not None and scope == "tenant":
            name = await name_of(link) or "this sender"
            return _plain(f"You are unsubscribed from announcement emails from {name}.", status=200)
        return _plain("You are unsubscribed from announcement emails.", status=200)

    @router.get(BROWSER_PATH)
    async def browser_page(request: Request) -> Response:
        return await confirm_page(request)

    @router.post(BROWSER_PATH)
    async def browser_confirm(request: Request) -> Response:
        language = choose_language(request.headers.get("accept-language"))
        link = read_token(request)
        if link is None:
            return _page("invalid", language=language, status=400)
        body = await _capped_body(request)
        scope = _scope(_form_fields(request.headers.get("content-type", ""), body or b""))
        if body is None or scope is None:
            return _page("invalid", language=language, status=400)
        if not await opt_out(link, scope, "unsubscribe.page"):
            return _page("unavailable", language=language, status=503)
        name = await name_of(link)
        return _page("done", language=language, status=200, link=link, tenant_name=name, scope=scope)

    return router
