"""Frequency caps across campaigns: how many announcements one profile receives per
channel within a rolling window, whichever campaigns they come from.

``CAMPAIGN_FREQUENCY_CAPS`` maps tenant -> channel -> ``{"max", "windowSeconds"}``; the tenant ``"*"`` is
the default for campaigns of a tenant without an entry for that channel. The setting is parsed and
validated once (``config.py``); this module only turns it into the parameters the capped statements
read (``notify_recheck.cypher`` with its cap fragments, ``email_page.cypher``; ``cypher/delivery/``),
which evaluate it in the graph under the profile lock at delivery time.

The log a cap counts lives on the Profile (``notifyCapLog`` / ``emailCapLog``: timestamps of counted
sends): it is the recipient's experience, shared by every tenant's campaigns; each campaign's tenant
decides the limit it is held to. Every write prunes the log to the longest window configured for the
channel and keeps at most the largest ``max`` newest entries, which is all any check can look at.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any, Literal

from pydantic import ConfigDict, Field

from campaign_engine.domain.camel import CamelModel
from campaign_engine.domain.types import format_ts

__all__ = ["DEFAULT_TENANT", "CapChannel", "ChannelCap", "FrequencyCaps", "cap_params", "caps_channel"]

CapChannel = Literal["notify", "email"]
DEFAULT_TENANT = "*"


class ChannelCap(CamelModel):
    """At most ``max`` announcements per ``windowSeconds`` on one channel."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max: int = Field(ge=1, le=1000)  # the log keeps this many entries at most: bounded per profile
    window_seconds: int = Field(ge=1, le=366 * 86_400)


FrequencyCaps = dict[str, dict[CapChannel, ChannelCap]]
"""tenant (or ``"*"``) -> channel -> cap."""


def caps_channel(caps: Mapping[str, Mapping[CapChannel, ChannelCap]], channel: CapChannel) -> bool:
    """Whether any tenant caps ``channel``: its statements carry the cap's steps only then."""
    return any(channel in by_channel for by_channel in caps.values())


def cap_params(
    caps: Mapping[str, Mapping[CapChannel, ChannelCap]], channel: CapChannel, *, now: datetime
) -> dict[str, Any]:
    """The parameters of a capped statement for ``channel`` at ``now``: ``caps`` (tenant -> ``{max,
    since}``, None when nobody caps the channel, so the statement skips every cap step), ``capKeepSince``
    and ``capKeep`` (how the log is pruned on write)."""
    if not caps_channel(caps, channel):
        return {"caps": None, "capKeepSince": None, "capKeep": 0}
    per_tenant = {tenant: by_channel[channel] for tenant, by_channel in caps.items() if channel in by_channel}
    since = {t: format_ts(now - timedelta(seconds=c.window_seconds)) for t, c in per_tenant.items()}
    longest = max(c.window_seconds for c in per_tenant.values())
    return {
        "caps": {t: {"max": c.max, "since": since[t]} for t, c in per_tenant.items()},
        "capKeepSince": format_ts(now - timedelta(seconds=longest)),
        "capKeep": max(c.max for c in per_tenant.values()),
    }
