"""The content an admin authors for each channel: the in-app message, the notification copy, the email
copy and a translation of them. Split out of ``domain/campaign.py`` so the definition's shape (audience
rules, variants, routing) and the content's limits each have a module of their own."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationInfo,
    model_validator,
)

from campaign_engine.domain.camel import CamelModel
from campaign_engine.domain.patterns import INTERNAL_PATH_PATTERN

__all__ = [
    "OMIT_ABSENT",
    "STORED",
    "Action",
    "AppStoreAction",
    "CapgoUpdateAction",
    "EmailCopy",
    "HttpsUrl",
    "Message",
    "MessageId",
    "NotificationCopy",
    "StrictModel",
    "Targeting",
    "Text",
    "Translation",
    "absent",
    "check_translated_action_list",
    "check_translated_actions",
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


def absent(value: object) -> bool:
    """Whether an optional field holds nothing: such a field is left out on the wire."""
    return value is None


# An optional field left out stays out on the wire (a card, a stored definition): never ``null``,
# which LearnCard's validators refuse where they expect a string or an object.
OMIT_ABSENT = Field(default=None, exclude_if=absent)


class StrictCamel(StrictModel, CamelModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Media(StrictModel):
    type: Literal["image", "gif", "youtube"]
    url: HttpsUrl
    aspect: Annotated[str, StringConstraints(pattern=r"^\d{1,2}:\d{1,2}$")] | None = OMIT_ABSENT
    alt: Annotated[Text, Field(max_length=300)] | None = OMIT_ABSENT


class InternalLink(StrictModel):
    type: Literal["internalLink"]
    path: Annotated[str, StringConstraints(max_length=500), AfterValidator(_internal_path)]


class ExternalLink(StrictModel):
    type: Literal["externalLink"]
    url: HttpsUrl


class AppStoreAction(StrictCamel):
    """This app's store page, resolved per platform by the app; the URLs override its own links."""

    type: Literal["appStore"]
    ios_url: HttpsUrl | None = OMIT_ABSENT
    android_url: HttpsUrl | None = OMIT_ABSENT
    web_url: HttpsUrl | None = OMIT_ABSENT


class CapgoUpdateAction(StrictModel):
    """The app checks for, downloads and applies its over-the-air update."""

    type: Literal["capgoUpdate"]


class DismissAction(StrictModel):
    type: Literal["dismiss"]


class Action(StrictCamel):
    label: Annotated[Text, Field(min_length=1, max_length=40)]
    style: Literal["primary", "secondary", "positive", "dismiss"] = "secondary"  # LearnCard's default
    action: Annotated[
        InternalLink | ExternalLink | AppStoreAction | CapgoUpdateAction | DismissAction,
        Field(discriminator="type"),
    ]
    close_on_complete: bool = True
    """The message closes once the action has run (LearnCard's default)."""


class EveryDays(StrictModel, CamelModel):
    every_days: Annotated[int, Field(ge=1, le=365)]

    model_config = ConfigDict(extra="forbid", frozen=True)


# LearnCard's targeting predicates, evaluated on the device (platform, role, app version), strict like
# LearnCard's own: a typo fails at save instead of matching everyone. Bounded in breadth and depth.
_TARGETING_DEPTH = 8
_Listed = Annotated[
    list[Annotated[str, StringConstraints(min_length=1, max_length=100)]], Field(min_length=1, max_length=50)
]


class PlatformPredicate(StrictModel):
    platform: Annotated[list[Literal["ios", "android", "web"]], Field(min_length=1, max_length=3)]


class RolePredicate(StrictModel):
    role: _Listed


class VersionCheck(StrictModel):
    source: Literal["native", "web", "capgo"]
    op: Literal["lt", "lte", "eq", "gte", "gt"]
    value: Annotated[str, StringConstraints(min_length=1, max_length=50)]


class VersionPredicate(StrictModel):
    version: VersionCheck


class AllPredicate(StrictModel):
    all: Annotated[list[Predicate], Field(max_length=50)]


class AnyPredicate(StrictModel):
    any: Annotated[list[Predicate], Field(max_length=50)]


class NotPredicate(StrictModel):
    not_: Predicate = Field(alias="not")

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


Predicate = PlatformPredicate | RolePredicate | VersionPredicate | AllPredicate | AnyPredicate | NotPredicate


def _depth(predicate: Predicate) -> int:
    if isinstance(predicate, AllPredicate | AnyPredicate):
        kids = predicate.all if isinstance(predicate, AllPredicate) else predicate.any
        return 1 + max((_depth(k) for k in kids), default=0)
    if isinstance(predicate, NotPredicate):
        return 1 + _depth(predicate.not_)
    return 1


def _shallow(predicate: Predicate) -> Predicate:
    if _depth(predicate) > _TARGETING_DEPTH:
        raise ValueError(f"targeting nests at most {_TARGETING_DEPTH} levels")
    return predicate


Targeting = Annotated[Predicate, AfterValidator(_shallow)]
"""Who the app shows a message to, on the device: LearnCard's targeting predicate, nested at most
``_TARGETING_DEPTH`` levels."""
MessageId = Annotated[str, StringConstraints(min_length=1, max_length=100)]


class Message(StrictCamel):
    """The in-app message: LearnCard's InAppMessage. Limits keep it renderable as a toast on a small
    phone. ``id`` names it for the app's dismissal and frequency state (a card carries the campaign's
    id when the author gave none, ``CampaignCard``)."""

    id: MessageId | None = OMIT_ABSENT
    title: Annotated[Text, Field(min_length=1, max_length=120)]
    body: Annotated[str, Field(max_length=2000)] | None = OMIT_ABSENT
    presentation: Literal["modal", "banner", "toast"] = "modal"
    dismissible: bool = True
    frequency: Literal["once", "session", "always"] | EveryDays = "once"
    priority: Annotated[int, Field(ge=0, le=1000)] = 0
    media: Media | None = OMIT_ABSENT
    emoji: Annotated[str, Field(max_length=16)] | None = OMIT_ABSENT
    actions: Annotated[list[Action], Field(max_length=3)] = []
    targeting: Targeting | None = OMIT_ABSENT
    """Who the app shows it to, on the device (omitted: everyone the campaign reaches)."""
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


def check_translated_actions(base: Message | None, translated: Message, where: str) -> None:
    """A translation's in-app actions are the base message's (``check_translated_action_list``)."""
    check_translated_action_list(base.actions if base is not None else [], translated.actions, where)


def check_translated_action_list(own: Sequence[Action], translated: Sequence[Action], where: str) -> None:
    """Translated actions are ``own``, in the same order, with only their labels translated: the same
    number, and at each position the same target, style and closing. A reader's language may change
    what a button says, never what it does (``ValueError`` naming the position)."""
    if len(translated) != len(own):
        raise ValueError(
            f"{where}: a translation has the base message's {len(own)} action(s), in the same order, "
            f"with their labels translated (it has {len(translated)})"
        )
    for i, (mine, theirs) in enumerate(zip(translated, own, strict=True)):
        if mine.model_dump(exclude={"label"}) != theirs.model_dump(exclude={"label"}):
            raise ValueError(
                f"{where}[{i}]: only the label is translated; the action, style and closeOnComplete "
                "are the base message's"
            )


STORED = {"stored": True}
"""Validation context of a definition read back from the graph: the rules on a translation's and the
guardian copy's buttons came after campaigns were stored without them, so a stored campaign is read as
written; a write (a create, or an update, which validates the patched whole) must meet them."""


def stored(info: ValidationInfo) -> bool:
    """Validating a definition read back from the graph (``STORED``), not a write."""
    return isinstance(info.context, dict) and info.context.get("stored") is True
