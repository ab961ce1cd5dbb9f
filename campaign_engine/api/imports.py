"""``POST /imports/profiles``: a CSV file of profiles in, a report of every row out.

The body is ``text/csv`` and streamed: it is decoded as it arrives (UTF-8, a byte-order mark allowed)
into a temporary file that stays in memory up to 1 MiB and spills to disk past it, so a large file costs disk,
not memory, and a body that is not UTF-8 is refused before anything is written. The import itself
(``campaigns/profiles/csv_import.py``) then runs on a worker thread. ``?dryRun=true`` validates and counts
without writing. The same credential and role as ``profiles.upsert`` (author in the caller's tenant);
errors are the tRPC envelope with the same codes, so a client reads them one way.

``POST /imports/roster?format=oneroster|sds&dryRun=&consentCollected=`` is its twin for a
school's roster (``campaigns/profiles/roster_import.py``): the same body rules, credential and report shape.
"""

from __future__ import annotations

import io
import tempfile
from dataclasses import replace
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from campaign_engine.api.auth import Caller
from campaign_engine.api.context import Context, Services
from campaign_engine.api.errors import envelope_for
from campaign_engine.api.routers.profiles import ACCESS as PROFILE_ACCESS
from campaign_engine.api.trpc import request_context_async
from campaign_engine.campaigns.profiles.csv_import import CsvImportReport, import_csv
from campaign_engine.campaigns.profiles.import_text import Utf8Check
from campaign_engine.campaigns.profiles.roster_import import RosterFormat, RosterImportReport, import_roster
from campaign_engine.domain.errors import BadRequest, CampaignError, PayloadTooLarge, UnsupportedMediaType

__all__ = ["MAX_IMPORT_BYTES", "imports_router"]

MAX_IMPORT_BYTES = 256 * 1024 * 1024  # 100,000 rows are ~10 MB; past this a file is split, not streamed
_SPOOL_BYTES = 1024 * 1024
_PROCEDURE = "imports.profiles"
_ROSTER = "imports.roster"
_NO_STORE = {"cache-control": "no-store"}


def _answer(status: int, body: Any) -> JSONResponse:
    return JSONResponse(body, status_code=status, headers=_NO_STORE)


async def _spooled_text(request: Request) -> io.TextIOWrapper:
    """The body as a text file of its lines; BAD_REQUEST at the first byte that is not UTF-8, and
    PAYLOAD_TOO_LARGE past ``MAX_IMPORT_BYTES``, both before the import reads a row."""
    spool = tempfile.SpooledTemporaryFile(max_size=_SPOOL_BYTES)  # noqa: SIM115 - handed to the caller
    check = Utf8Check()
    size = 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > MAX_IMPORT_BYTES:
                raise PayloadTooLarge(f"the file is over {MAX_IMPORT_BYTES // (1024 * 1024)} MiB; split it")
            if (bad := check.feed(chunk)) is not None:
                raise BadRequest(f"the file is not UTF-8 at byte {bad}; nothing was imported")
            spool.write(chunk)
        if (bad := check.end()) is not None:
            raise BadRequest(f"the file ends inside a UTF-8 character (byte {bad}); nothing was imported")
    except BaseException:
        spool.close()
        raise
    spool.seek(0)
    # newline="": the csv reader sees each line's own ending, and quoted fields may hold line breaks.
    # Plain utf-8: import_csv drops a byte-order mark itself, the one place that rule lives.
    return io.TextIOWrapper(spool, encoding="utf-8", newline="")


async def _csv_upload(ctx: Context, request: Request) -> tuple[Caller, io.TextIOWrapper]:
    """What both imports check first: the caller may upsert profiles, the body is CSV; then the body,
    spooled and checked to be UTF-8 before any row is read."""
    caller = await ctx.require_async(PROFILE_ACCESS["upsert"])  # roles: off the loop
    assert caller is not None  # not a public route
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media not in ("text/csv", "application/csv"):
        raise UnsupportedMediaType("Content-Type must be text/csv")
    return caller, await _spooled_text(request)


def imports_router(services: Services) -> APIRouter:
    router = APIRouter()

    @router.post("/imports/profiles", response_model=CsvImportReport, response_model_by_alias=True)
    async def import_profiles(request: Request, dryRun: bool = False) -> JSONResponse:
        ctx: Context | None = None
        try:
            ctx = replace(await request_context_async(services, request), procedure=_PROCEDURE)
            caller, text = await _csv_upload(ctx, request)
            with text:
                report = await run_in_threadpool(
                    import_csv,
                    services.graph,
                    text,
                    tenant_id=ctx.tenant_id,
                    platform=caller.is_admin,
                    dry_run=dryRun,
                    audit=None if dryRun else ctx.audit(),
                    clock=services.clock,
                    secrets=services.secret_box,
                    adult_age=services.settings.campaign_adult_age,
                )
        except CampaignError as exc:
            return _answer(*envelope_for(exc, path=_PROCEDURE))
        return _answer(200, report.model_dump(by_alias=True))

    @router.post("/imports/roster", response_model=RosterImportReport, response_model_by_alias=True)
    async def import_roster_file(
        request: Request, format: RosterFormat, dryRun: bool = False, consentCollected: bool = False
    ) -> JSONResponse:
        ctx: Context | None = None
        try:
            ctx = replace(await request_context_async(services, request), procedure=_ROSTER)
            caller, text = await _csv_upload(ctx, request)
            with text:
                report = await run_in_threadpool(
                    import_roster,
                    services.graph,
                    text,
                    format=format,
                    tenant_id=ctx.tenant_id,
                    platform=caller.is_admin,
                    consent_collected=consentCollected,
                    dry_run=dryRun,
                    audit=None if dryRun else ctx.audit(),
                    clock=services.clock,
                    adult_age=services.settings.campaign_adult_age,
                )
        except CampaignError as exc:
            return _answer(*envelope_for(exc, path=_ROSTER))
        return _answer(200, report.model_dump(by_alias=True))

    return router
