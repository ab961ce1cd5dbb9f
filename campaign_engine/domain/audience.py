"""Audience sources (who an admin targets) and the one definition of a profile's did:web alias.

A source is validated at the edge: explicit lists are capped at ``MAX_LIST`` entries so a single call
stays a handful of UNWIND queries. A DID names a profile either by the profile's stored ``did`` or by
the did:web alias this service mints for every profile (``did_web_for``); the inverse
(``profile_id_from_did_web``) lets the graph resolve an alias through the ``profileId`` index instead of
scanning for a computed string.
"""

from __future__ import annotations

from typing import Annotated, Literal
from urllib.parse import quote, unquote

from pydantic import ConfigDict, Field

from campaign_engine.domain.camel import CamelModel
from campaign_engine.domain.patterns import DidStr, ProfileIdStr, Slug

__all__ = [
    "MAX_LIST",
    "AllSource",
    "AudienceSource",
    "ConnectionsSource",
    "DidsSource",
    "ProfileIdsSource",
    "TagSource",
    "did_web_for",
    "profile_id_from_did_web",
    "source_label",
]

MAX_LIST = 10_000


class _Source(CamelModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DidsSource(_Source):
    type: Literal["dids"]
    dids: Annotated[list[DidStr], Field(min_length=1, max_length=MAX_LIST)]


class ProfileIdsSource(_Source):
    type: Literal["profileIds"]
    profile_ids: Annotated[list[ProfileIdStr], Field(min_length=1, max_length=MAX_LIST)]


class TagSource(_Source):
    type: Literal["tag"]
    slug: Slug


class ConnectionsSource(_Source):
    """Profiles connected with ``profileId`` (not the profile itself)."""

    type: Literal["connections"]
    profile_id: ProfileIdStr


class AllSource(_Source):
    type: Literal["all"]


AudienceSource = Annotated[
    DidsSource | ProfileIdsSource | TagSource | ConnectionsSource | AllSource, Field(discriminator="type")
]


def _domain_segment(domain: str) -> str:
    # did:web percent-encodes the port separator of the host (did:web:example.com%3A8443).
    return quote(domain.strip().lower(), safe=".-")


def did_web_for(profile_id: str, domain: str) -> str:
    """The did:web alias of a profile, as LearnCard writes it: ``did:web:<domain>:users:<profileId>``.

    The profileId is one path segment, percent-encoded (``:`` and ``/`` included) so the alias always
    parses back to exactly one profileId; the domain is lower-cased with its port colon as ``%3A``.
    """
    return f"did:web:{_domain_segment(domain)}:users:{quote(profile_id, safe='')}"


def profile_id_from_did_web(did: str, domain: str) -> str | None:
    """The profileId whose did:web alias is ``did``, or None when ``did`` is not such an alias. Both
    forms are read: ``did:web:<domain>:users:<profileId>`` and the older ``did:web:<domain>:<profileId>``."""
    prefix = f"did:web:{_domain_segment(domain)}:"
    if did[: len(prefix)].lower() != prefix.lower():  # host names are case-insensitive
        return None
    rest = did[len(prefix) :]
    segment = rest.removeprefix("users:") if rest.count(":") == 1 else rest
    if not segment or ":" in segment:
        return None
    profile_id = unquote(segment)
    # Only the canonical encoding is an alias, so a profile has exactly one did:web form of each kind.
    return profile_id if quote(profile_id, safe="") == segment else None


def source_label(source: DidsSource | ProfileIdsSource | TagSource | ConnectionsSource | AllSource) -> str:
    """What a membership records as its ``source``: the kind, plus the tag or anchor profile."""
    if isinstance(source, TagSource):
        return f"tag:{source.slug}"
    if isinstance(source, ConnectionsSource):
        return f"connections:{source.profile_id}"
    return source.type
