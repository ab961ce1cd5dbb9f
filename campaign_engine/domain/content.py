"""The content an admin authors for each channel: the in-app message, the notification copy, the email
copy and a translation of them. Split out of ``domain/campaign.py`` so the definition's shape (audience
rules, variants, routing) and the content's limits each have a module of their own."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints, model_validator

from campaign_engine.domain.camel import CamelModel
from campaign_engine.domain.patterns import INTERNAL_PATH_PATTERN

__all__ = [
    "Action",
    "EmailCopy",
    "HttpsUrl",
    "Message",
    "NotificationCopy",
    "StrictModel",
    "Text",
    "Translation",
]

_INTERNAL_PATH = re.compile(INTERNAL_PATH_PATTERN)


def _https(url: str) -> str:
    if not url.startswith("https://") or len(url) <= len("https://"):
        raise ValueError("must be an https:// URL")
    return url


def _internal_path(path: str) -> str:
    """Resolved against any origin, a path this accepts keeps that origin (``INTERNAL_PATH_PATTERN``)."""
    if not _INTERNAL_PATH.fullmatch(path):
        raise ValueError(
            "must be an app path: one leading '/' not followed by '/', then only RFC 3986 path, query and"
            " fragment characters (no backslash, whitespace or control characters; percent-encode others)"
        )
    return path


Text = Annotated[str, StringConstraints(strip_whitespace=True)]
HttpsUrl = Annotated[str, StringConstraints(max_length=2048), AfterValidator(_https)]


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Media(StrictModel):
    type: Literal["image", "gif", "youtube"]
    url: HttpsUrl
    aspect: Annotated[str, StringConstraints(pattern=r"^\d{1,2}:\d{1,2}$")] | None = None
    alt: Annotated[Text, Field(max_length=300)] | None = None


class InternalLink(StrictModel):
    type: Literal["internalLink"]
    path: Annotated[str, StringConstraints(max_length=500), AfterValidator(_internal_path)]


class ExternalLink(StrictModel):
    type: Literal["externalLink"]
    url: HttpsUrl


class DismissAction(StrictModel):
    type: Literal["dismiss"]


class Action(StrictModel):
    label: Annotated[Text, Field(min_length=1, max_length=40)]
    style: Literal["primary", "secondary", "positive", "dismiss"] = "primary"
    action: Annotated[InternalLink | ExternalLink | DismissAction, Field(discriminator="type")]


class EveryDays(StrictModel, CamelModel):
    every_days: Annotated[int, Field(ge=1, le=365)]

    model_config = ConfigDict(extra="forbid", frozen=True)


class Message(StrictModel):
    """The in-app message. Limits keep it renderable as a toast on a small phone."""

    title: Annotated[Text, Field(min_length=1, max_length=120)]
    body: Annotated[str, Field(max_length=2000)] | None = None
    presentation: Literal["modal", "banner", "toast"] = "modal"
    dismissible: bool = True
    frequency: Literal["once", "session", "always"] | EveryDays = "once"
    priority: Annotated[int, Field(ge=0, le=1000)] = 0
    media: Media | None = None
    emoji: Annotated[str, Field(max_length=16)] | None = None
    actions: Annotated[list[Action], Field(max_length=3)] = []
    enabled: bool = True


class NotificationCopy(StrictModel):
    """Inbox/push copy: push banners truncate around 65/240 characters."""

    title: Annotated[Text, Field(min_length=1, max_length=65)]
    body: Annotated[Text, Field(min_length=1, max_length=240)]


class EmailCopy(StrictModel, CamelModel):
    subject: Annotated[Text, Field(min_length=1, max_length=150)]
    title: Annotated[Text, Field(min_length=1, max_length=200)]
    body: Annotated[str, Field(min_length=1, max_length=20_000)]
    cta_label: Annotated[Text, Field(min_length=1, max_length=40)]
    hero_image_url: HttpsUrl | None = None

    model_config = ConfigDict(extra="forbid", frozen=True)


class Translation(StrictModel):
    """One language's content; a channel it leaves out falls back as a missing translation does (to a
    less specific tag that has it, else the base content). Same models, so same limits and URL rules."""

    message: Message | None = None
    notification: NotificationCopy | None = None
    email: EmailCopy | None = None

    @model_validator(mode="after")
    def _some_content(self) -> Translation:
        if self.message is None and self.notification is None and self.email is None:
            raise ValueError("a translation has message, notification or email content")
        return self
