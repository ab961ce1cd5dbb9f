"""The engine's own DID from the settings, checked at start by every edge that signs or serves it.

``CAMPAIGN_DID_KEY`` is required where a notification may go out in LearnCard's format: with
``NOTIFICATIONS_FORMAT=learncard`` outside local development a worker or API without it refuses to
start. Local development without it derives a key every process of the stack shares
(``EngineDid.local``); ``make dev`` writes a real one into its env file anyway.
"""

from __future__ import annotations

from campaign_engine.config import ConfigError, Settings
from campaign_engine.did.engine import EngineDid, default_did
from campaign_engine.did.keys import DidError

__all__ = ["engine_did"]


def engine_did(settings: Settings) -> EngineDid | None:
    """The engine's DID and key, or None where none is configured and none is needed."""
    did = (settings.campaign_did or "").strip() or default_did(settings.domain_name)
    raw = settings.campaign_did_key.get_secret_value().strip() if settings.campaign_did_key else ""
    if raw:
        try:
            return EngineDid.of(did, raw)
        except DidError as exc:  # its message names the setting, never the key
            raise ConfigError(str(exc)) from None
    if settings.campaign_local_development:
        return EngineDid.local(did)
    if settings.notifications_format == "learncard":
        raise ConfigError(
            "CAMPAIGN_DID_KEY must be set with NOTIFICATIONS_FORMAT=learncard: LearnCard's inbox "
            "authenticates the engine by its DID (docs/settings.md says how to make a key)"
        )
    return None
