"""What delivery and the API know of tenants: the records, cached per process for a few seconds.

Every email page, preview, self-test and capped statement asks for a tenant's branding, app origin,
sender or frequency caps. Reading the graph for each would add a read per message; reading the records
once at start would make a ``tenants.update`` wait for a redeploy. So the directory loads all records
(a few hundred at most, one keyset read) and keeps them ``ttl_seconds`` (5 s): an edit reaches every
process within that, and a process that made the edit sees it at once (``invalidate``).

A tenant the cache has not seen is read again at once (``expect``, and every view's lookup): its
campaign can only be sent after its record was committed, so a worker that loaded the records a moment
before ``tenants.create`` must not send the new tenant's first wave with the default tenant's format,
sender and branding. A tenant without a record is looked for at most once a second
(``MISS_RELOAD_SECONDS``), so the lookups of a record-less tenant cost one small read a second, no more.

One directory per graph per process (``directory_for``), whichever composition root asks for it (the
API's ``create_app``, the worker's ``wiring/``), so they share the cache. The answers keep
the shapes the settings had (``CAMPAIGN_APP_ORIGINS``, ``CAMPAIGN_TENANTS``, ``CAMPAIGN_FREQUENCY_CAPS``
with ``"*"`` = the default tenant's caps) as live ``Mapping`` views, so the renderers and capped
statements read them unchanged. A tenant without a record, or a record without branding, gets the
default tenant's, as ``delivery/email/render.py`` did with the settings.

The settings seed (``graph/tenants.py``) runs before the first load, not when the directory is built:
building a worker never waits on the graph.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

from campaign_engine.config import Settings
from campaign_engine.domain.frequency_cap import DEFAULT_TENANT, CapChannel, ChannelCap
from campaign_engine.domain.tenant import TenantPublic, TenantSettings
from campaign_engine.domain.types import Clock, system_clock
from campaign_engine.graph.graph import Graph
from campaign_engine.graph.tenants import load_tenants, seed_tenants

__all__ = [
    "DEFAULT_TTL_SECONDS",
    "MISS_RELOAD_SECONDS",
    "TenantDirectory",
    "branding_entry",
    "directory_for",
    "tenants_of",
]

log = logging.getLogger(__name__)

DEFAULT_TTL_SECONDS = 5.0
MISS_RELOAD_SECONDS = 1.0

V = TypeVar("V")


class _LiveView(Mapping[str, V]):
    """A read-only mapping recomputed from the directory's current records on every access.

    Truthy without a load, so ``view or {}`` at construction reads nothing. A key of a tenant the
    records lack asks ``expect`` first (the records are read again if it may be new)."""

    def __init__(self, current: Callable[[], Mapping[str, V]], expect: Callable[[str], bool]) -> None:
        self._current = current
        self._expect = expect

    def __getitem__(self, key: str) -> V:
        current = self._current()
        if key not in current and self._expect(key):
            current = self._current()
        return current[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._current())

    def __len__(self) -> int:
        return len(self._current())

    def __bool__(self) -> bool:
        return True


class TenantDirectory:
    def __init__(
        self,
        graph: Graph,
        *,
        default_tenant: str,
        ttl_seconds: float = DEFAULT_TTL_SECONDS,
        monotonic: Callable[[], float] = time.monotonic,
        clock: Clock = system_clock,
    ) -> None:
        self._graph = graph
        self.default_tenant = default_tenant
        self._ttl = ttl_seconds
        self._monotonic = monotonic
        self._clock = clock
        self._lock = threading.Lock()
        self._records: dict[str, TenantPublic] | None = None
        self._loaded_at = 0.0
        self._missed: dict[str, float] = {}
        """tenant -> when a load last looked for it and did not find it (``MISS_RELOAD_SECONDS``)."""
        self._seed: list[dict[str, Any]] | None = None
        self.platform_from: str | None = None
        """EMAIL_FROM, the address a layout's sender name goes on when no record names one."""

    def seed_before_load(self, rows: list[dict[str, Any]]) -> None:
        """Seed these rows (``graph/tenants.py:settings_seed``) before the next load; no I/O now."""
        with self._lock:
            self._seed = rows
            self._records = None

    def seed_now(self, rows: list[dict[str, Any]]) -> list[str]:
        """Seed at once (API start); returns the tenants it created."""
        created = seed_tenants(self._graph, rows, now=self._clock())
        if created:
            log.info("tenants.seeded tenants=%s", ",".join(created))
        self.invalidate()
        return created

    def invalidate(self) -> None:
        """Forget the cached records: the next question reads the graph (after an edit in this process)."""
        with self._lock:
            self._records = None

    def records(self) -> Mapping[str, TenantPublic]:
        """Every tenant record by id, at most ``ttl_seconds`` old."""
        with self._lock:
            if self._records is None or self._monotonic() - self._loaded_at >= self._ttl:
                return self._load()
            return self._records

    def _load(self) -> dict[str, TenantPublic]:
        """Read every record now (under the lock): the settings seed first, if it has not run."""
        if self._seed is not None:
            created = seed_tenants(self._graph, self._seed, now=self._clock())
            if created:
                log.info("tenants.seeded tenants=%s", ",".join(created))
            self._seed = None
        self._records = load_tenants(self._graph)
        self._loaded_at = self._monotonic()
        self._missed = {t: at for t, at in self._missed.items() if self._loaded_at - at < MISS_RELOAD_SECONDS}
        return self._records

    def expect(self, tenant_id: str | None) -> bool:
        """Read the records again if they lack this tenant and no load has looked for it in the last
        ``MISS_RELOAD_SECONDS``; whether they were read again. Callers with a batch of tenants at hand
        call it before copying a view, so the copy holds a tenant created a moment ago."""
        if not tenant_id or tenant_id == DEFAULT_TENANT:  # "*" is the caps' name for the default tenant's
            return False
        with self._lock:
            if self._records is not None and tenant_id in self._records:
                return False
            now = self._monotonic()
            missed = self._missed.get(tenant_id)
            if missed is not None and now - missed < MISS_RELOAD_SECONDS:
                return False
            records = self._load()
            if tenant_id not in records:
                self._missed[tenant_id] = now
            return True

    def tenant(self, tenant_id: str | None) -> TenantPublic | None:
        """The tenant's record, else the default tenant's, else None."""
        self.expect(tenant_id)
        records = self.records()
        return records.get(tenant_id or self.default_tenant) or records.get(self.default_tenant)

    def email_from(self, tenant_id: str | None) -> str | None:
        """The sender of the tenant's email (its own, else the default tenant's); None = ``EMAIL_FROM``."""
        self.expect(tenant_id)
        records = self.records()
        for candidate in (tenant_id or self.default_tenant, self.default_tenant):
            record = records.get(candidate)
            if record is not None and record.email_from:
                return record.email_from
        return None

    def app_origins(self) -> Mapping[str, str]:
        """tenant -> app origin, as ``CAMPAIGN_APP_ORIGINS`` was (no fallback: a CTA must be the tenant's)."""
        return _LiveView(
            lambda: {t: r.app_origin for t, r in self.records().items() if r.app_origin}, self.expect
        )

    def names(self) -> Mapping[str, str]:
        """tenant -> display name (no fallback: a tenant without a record names no sender)."""
        return _LiveView(lambda: {t: r.name for t, r in self.records().items()}, self.expect)

    def branding(self) -> Mapping[str, Mapping[str, str | bool]]:
        """tenant -> ``{"name", "logoUrl"?, "primaryColor"?, "textColor"?, "emailFrom"?, "footerText"?,
        "footerAddress"?, "senderName"?, "platformFrom"?, "clickTracking"}``, the shape of a
        ``CAMPAIGN_TENANTS`` entry that ``render.py:branding_for`` reads (the senders for
        ``sender.py:sender_for``, the CTA's tracking for ``compose.py``)."""
        return _LiveView(
            lambda: {t: branding_entry(r, self.platform_from) for t, r in self.records().items()},
            self.expect,
        )

    def formats(self) -> Mapping[str, str]:
        """tenant -> the notification format its record sets (no entry: ``NOTIFICATIONS_FORMAT``)."""
        return _LiveView(
            lambda: {t: r.notification_format for t, r in self.records().items() if r.notification_format},
            self.expect,
        )

    def frequency_caps(self) -> Mapping[str, Mapping[CapChannel, ChannelCap]]:
        """tenant -> channel -> cap, with ``"*"`` = the default tenant's, as ``CAMPAIGN_FREQUENCY_CAPS``."""
        return _LiveView(self._caps, self.expect)

    def _caps(self) -> dict[str, Mapping[CapChannel, ChannelCap]]:
        records = self.records()
        caps: dict[str, Mapping[CapChannel, ChannelCap]] = {
            t: r.frequency_caps for t, r in records.items() if r.frequency_caps
        }
        default = records.get(self.default_tenant)
        if default is not None and default.frequency_caps:
            caps[DEFAULT_TENANT] = default.frequency_caps
        return caps


def branding_entry(record: TenantSettings, platform_from: str | None) -> dict[str, str | bool]:
    """One tenant's entry of ``branding()``: what the renderer and ``compose.py`` read of its layout."""
    entry: dict[str, str | bool | None] = {
        "name": record.name,
        "logoUrl": record.logo_url,
        "primaryColor": record.primary_color,
        "textColor": record.text_color,
        "emailFrom": record.email_from,
        "footerText": record.footer_text,
        "footerAddress": record.footer_address,
        "senderName": record.sender_name,
        "platformFrom": platform_from if record.sender_name else None,
        "clickTracking": record.click_tracking,
    }
    return {k: v for k, v in entry.items() if v is not None}


_directories: weakref.WeakKeyDictionary[Graph, dict[str, TenantDirectory]] = weakref.WeakKeyDictionary()
_registry_lock = threading.Lock()


def directory_for(graph: Graph, *, default_tenant: str) -> TenantDirectory:
    """This process's directory of ``graph`` (one cache per graph, shared by every composition root)."""
    with _registry_lock:
        by_default = _directories.setdefault(graph, {})
        if default_tenant not in by_default:
            by_default[default_tenant] = TenantDirectory(graph, default_tenant=default_tenant)
        return by_default[default_tenant]


def tenants_of(graph: Graph, settings: Settings) -> TenantDirectory:
    """``directory_for`` with the default tenant these settings name (and their EMAIL_FROM)."""
    directory = directory_for(graph, default_tenant=settings.campaign_default_tenant_id)
    directory.platform_from = settings.email_from
    return directory
