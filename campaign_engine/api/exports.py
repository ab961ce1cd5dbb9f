"""Streamed exports: ``GET /exports/campaigns/{campaignId}/recipients.csv`` (and
``.ndjson``) and ``GET /exports/audit.csv?from=&to=``.

Everything that can refuse (the credential, the role, the campaign, the range) is decided before the first
byte, so a refusal is a whole tRPC error envelope with its status; after that the rows stream in keyset pages
(``campaigns/audience/exports.py``), the header at once, memory one page whatever the size. A read that fails
mid-stream aborts the response rather than ending it early, so a client never takes a cut
file for a whole one. Authorization is the equivalent procedure's: getAudience's role for recipients,
audit.list's for the audit trail, in the caller's tenant.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import TypeAdapter, ValidationError
from starlette.concurrency import run_in_threadpool

from campaign_engine.api.context import Context, Services
from campaign_engine.api.errors import envelope_for
from campaign_engine.api.routers.audience import ACCESS as AUDIENCE_ACCESS
from campaign_engine.api.routers.audit import ACCESS as AUDIT_ACCESS
from campaign_engine.api.trpc import request_context_async
from campaign_engine.campaigns.audience.exports import (
    AUDIT_COLUMNS,
    RECIPIENT_COLUMNS,
    audit_rows,
    recipient_rows,
)
from campaign_engine.domain.campaign import UtcDatetime
from campaign_engine.domain.errors import BadRequest, CampaignError, NotFound
from campaign_engine.domain.tenancy import campaign_ref
from campaign_engine.graph.rules.policy import Policy

__all__ = ["exports_router"]

_INSTANT: TypeAdapter[datetime] = TypeAdapter(UtcDatetime)
# A cell a spreadsheet would run as a formula (OWASP "CSV injection") is written as text.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_ROWS_PER_CHUNK = 500
_MEDIA = {"csv": "text/csv; charset=utf-8", "ndjson": "application/x-ndjson"}


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        value = json.dumps(value, separators=(",", ":"), sort_keys=True)
    text = str(value)
    return "'" + text if text.startswith(_FORMULA_START) else text


def _csv(rows: Iterable[dict[str, Any]], columns: Sequence[str]) -> Iterator[bytes]:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")  # RFC 4180
    writer.writerow(columns)
    yield buffer.getvalue().encode()
    buffer.seek(0), buffer.truncate()
    for count, row in enumerate(rows, start=1):
        writer.writerow([_cell(row.get(column)) for column in columns])
        if count % _ROWS_PER_CHUNK == 0:
            yield buffer.getvalue().encode()
            buffer.seek(0), buffer.truncate()
    if buffer.tell():
        yield buffer.getvalue().encode()


def _ndjson(rows: Iterable[dict[str, Any]], columns: Sequence[str]) -> Iterator[bytes]:
    lines: list[str] = []
    for row in rows:
        lines.append(json.dumps({c: row.get(c) for c in columns}, separators=(",", ":")))
        if len(lines) == _ROWS_PER_CHUNK:
            yield ("\n".join(lines) + "\n").encode()
            lines = []
    if lines:
        yield ("\n".join(lines) + "\n").encode()


def _stream(
    rows: Iterable[dict[str, Any]], columns: Sequence[str], kind: str, filename: str
) -> StreamingResponse:
    body = _csv(rows, columns) if kind == "csv" else _ndjson(rows, columns)
    headers = {"content-disposition": f'attachment; filename="{filename}"', "cache-control": "no-store"}
    return StreamingResponse(body, media_type=_MEDIA[kind], headers=headers)


def _refused(exc: CampaignError, procedure: str) -> JSONResponse:
    status, body = envelope_for(exc, path=procedure)
    return JSONResponse(body, status_code=status, headers={"cache-control": "no-store"})


def _instant(name: str, text: str | None) -> datetime | None:
    if text is None:
        return None
    try:
        return _INSTANT.validate_python(text)
    except ValidationError:
        raise BadRequest(
            f"'{name}' must be an RFC 3339 instant with an offset",
            issues=[{"path": [name], "message": "bad"}],
        ) from None


def exports_router(services: Services) -> APIRouter:
    router = APIRouter()

    async def context(request: Request, procedure: str) -> Context:
        return replace(await request_context_async(services, request), procedure=procedure)

    @router.get("/exports/campaigns/{campaign_id}/recipients.{kind}", response_class=Response)
    async def recipients(request: Request, campaign_id: str, kind: str) -> Response:
        """Every member of the campaign with what happened on each channel (CSV or NDJSON)."""
        procedure = "exports.recipients"
        try:
            if kind not in _MEDIA:
                raise NotFound("exports are recipients.csv or recipients.ndjson")
            ctx = await context(request, procedure)
            await ctx.require_async(AUDIENCE_ACCESS["getAudience"])
            storage_id = await run_in_threadpool(ctx.campaign, campaign_id)  # NOT_FOUND for another tenant's
        except CampaignError as exc:
            return _refused(exc, procedure)
        policy = Policy.of(services.settings, services.clock())
        rows = recipient_rows(services.graph, campaign_id=storage_id, policy=policy)
        ref = campaign_ref(storage_id)
        return _stream(rows, RECIPIENT_COLUMNS, kind, f"{ref}-recipients.{kind}")

    @router.get("/exports/audit.csv", response_class=Response)
    async def audit(request: Request) -> Response:
        """The tenant's audit trail, newest first, ``from`` inclusive and ``to`` exclusive."""
        procedure = "exports.audit"
        try:
            ctx = await context(request, procedure)
            await ctx.require_async(AUDIT_ACCESS["list"])
            since = _instant("from", request.query_params.get("from"))
            until = _instant("to", request.query_params.get("to"))
            if since is not None and until is not None and since >= until:
                raise BadRequest("'from' must be earlier than 'to'")
        except CampaignError as exc:
            return _refused(exc, procedure)
        rows = audit_rows(services.graph, tenant_id=ctx.tenant_id, since=since, until=until)
        return _stream(rows, AUDIT_COLUMNS, "csv", f"audit-{ctx.tenant_id}.csv")

    return router
