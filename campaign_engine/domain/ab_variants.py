"""A/B content variants of a campaign: their model, THE assignment of a recipient to
one, and the content a variant serves.

Not ``domain/variants.py``: that module is the *language* variant (``served_locale``). A
content variant is an arm of an A/B test, chosen per recipient; the language is chosen independently of
it, by the same rule as without variants, and the content variant then overrides whole channel fields
in that language.

The override rule (what an author can rely on):

- A variant may carry ``message``, ``notification`` and ``email``, each a *partial* copy: the fields it
  sets replace the campaign's, field by field (``domain/variant_copy.py``, the one merge every path
  reads copy through), so ``{"email": {"subject": ...}}`` alone tests a subject line. Its top-level
  fields are in the campaign's base ``locale``; its ``translations`` hold the same per language and name
  only languages the campaign has that channel in.
- In a language where the variant does not set a field, its readers read that language's base field:
  the language is never changed by a variant (``served_locale`` over the campaign's languages, as
  without variants), so a variant adds no untranslated reader. A variant with no field at all is the
  control arm.

Assignment is ``assigned_variant``: a keyed hash (BLAKE2b keyed by the campaign's storage id) of the
profile id gives a point in [0, 1) (``unit_point``), and the point falls in one variant's share of the
weights. Every path calls it (the in-app card, the notify payload, the email walk, the web view,
self-tests, the email preview, explainRecipient), so a recipient keeps their variant across retries,
re-dispatches, channels and devices. It depends on the variants' ids, order and weights only: editing
copy keeps everyone's arm; editing ids, order or weights may move readers (and voids a reviewed
dispatch preview, whose token digests the definition). A test wave draws its members
with ``unit_point(..., purpose="test-wave")``: independent of the variant draw, stable the same way.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, StringConstraints

from campaign_engine.domain.camel import CamelModel
from campaign_engine.domain.content import StrictModel, Translation, check_translated_action_list
from campaign_engine.domain.locale import normalized
from campaign_engine.domain.reasons import DecisionReason
from campaign_engine.domain.variant_copy import (
    EmailOverride,
    MessageOverride,
    NotificationOverride,
    TranslationOverride,
)
from campaign_engine.domain.variants import MAX_TRANSLATIONS, ContentField, LanguageTag

__all__ = [
    "MAX_DECIDE_AFTER_SECONDS",
    "MAX_VARIANTS",
    "MIN_VARIANTS",
    "Assignment",
    "ContentVariant",
    "Experiment",
    "Metric",
    "TestWave",
    "VariantId",
    "VariantRate",
    "assigned_variant",
    "check_variants",
    "decision_of",
    "in_test_wave",
    "served_variant",
    "unit_point",
    "variant_bounds",
    "wire_variant_id",
]

MIN_VARIANTS = 2
MAX_VARIANTS = 4
_FIELDS: tuple[ContentField, ...] = ("message", "notification", "email")

VariantId = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$")]
"""A variant's id: 1-32 letters, digits, ``_`` or ``-`` (``A``, ``B``, ``short-subject``)."""


class ContentVariant(StrictModel):
    """One arm of an A/B test: what it overrides of the campaign's content (see the module's rule)."""

    id: VariantId
    weight: Annotated[int, Field(ge=1, le=10_000)] | None = None
    """Its share of the recipients relative to the others' (absent: 1, so equal shares by default)."""
    message: MessageOverride | None = None
    notification: NotificationOverride | None = None
    email: EmailOverride | None = None
    translations: (
        Annotated[dict[LanguageTag, TranslationOverride], Field(max_length=MAX_TRANSLATIONS)] | None
    ) = None


def check_variants(
    variants: Sequence[ContentVariant], *, base: Mapping[str, object], translations: Mapping[str, Translation]
) -> None:
    """The rules across a variant and its campaign (``ValueError`` naming the variant and field):
    unique ids (case-insensitively), an overridden field exists in the campaign, and a variant's
    translation names a language the campaign has that field in. ``base``: the campaign's own fields by
    wire name. A language the variant leaves out reads its base copy (module docstring)."""
    seen: set[str] = set()
    campaign_tags = {normalized(tag): tag for tag in translations}
    for variant in variants:
        where = f"variants['{variant.id}']"
        if variant.id.lower() in seen:
            raise ValueError(f"{where}: variant ids must be unique")
        seen.add(variant.id.lower())
        own = {normalized(tag): content for tag, content in (variant.translations or {}).items()}
        if len(own) != len(variant.translations or {}):
            raise ValueError(f"{where}.translations: a language repeats")
        for tag in own:
            if tag not in campaign_tags:
                raise ValueError(f"{where}.translations: the campaign has no '{tag}' translation")
            _check_buttons(variant, own[tag], base.get("message"), f"{where}.translations['{tag}']")
        for field in _FIELDS:
            has = {tag for tag, content in translations.items() if getattr(content, field) is not None}
            overridden = {campaign_tags[tag] for tag, content in own.items() if getattr(content, field)}
            if base.get(field) is None and (getattr(variant, field) is not None or overridden):
                raise ValueError(f"{where}.{field}: the campaign has no {field} content to override")
            if not overridden <= has:
                extra = ", ".join(sorted(overridden - has))
                raise ValueError(f"{where}.translations: the campaign has no {field} in {extra}")


def _check_buttons(variant: ContentVariant, override: TranslationOverride, base: object, where: str) -> None:
    """A variant's buttons in a language are its own (else the campaign's ``base`` message's), with
    only their labels translated (``check_translated_action_list``)."""
    translated = override.message.actions if override.message is not None else None
    if translated is None:
        return
    mine = variant.message.actions if variant.message is not None else None
    buttons = mine if mine is not None else getattr(base, "actions", None) or []
    check_translated_action_list(buttons, translated, f"{where}.message.actions")


def unit_point(campaign_id: str, profile_id: str, *, purpose: str = "variant") -> float:
    """A point in [0, 1) fixed by (campaign, profile, purpose): BLAKE2b keyed by the campaign's storage
    id, personalised by ``purpose``, over the profile id. Uniform across profiles, independent between
    campaigns and purposes, and the same in every process and on every path."""
    hasher = _keyed(campaign_id, purpose).copy()
    hasher.update(profile_id.encode())
    return int.from_bytes(hasher.digest(), "big") / 2.0**64


@lru_cache(maxsize=1024)
def _keyed(campaign_id: str, purpose: str) -> Any:
    """The keyed, personalised BLAKE2b state of a campaign before any input, copied per profile (half
    the cost of keying it again). The key is a digest of the storage id, so any id length fits
    BLAKE2b's 64-byte key."""
    key = hashlib.blake2b(campaign_id.encode(), digest_size=32).digest()
    return hashlib.blake2b(key=key, person=purpose.encode()[:16], digest_size=8)


def variant_bounds(variants: Sequence[Mapping[str, Any]]) -> list[tuple[str, float, float]]:
    """Each variant's share of [0, 1) as (id, start, end), in the order the author listed them."""
    weights = [int(v.get("weight") or 1) for v in variants]
    total = sum(weights)
    bounds: list[tuple[str, float, float]] = []
    start = 0
    for variant, weight in zip(variants, weights, strict=True):
        bounds.append((str(variant["id"]), start / total, (start + weight) / total))
        start += weight
    return bounds


Metric = Literal["clicked", "shown", "emailClicked"]
MAX_DECIDE_AFTER_SECONDS = 7 * 24 * 3600


class Experiment(StrictModel, CamelModel):
    """A test wave, as ``dispatch`` and ``scheduleDispatch`` accept it: ``testShare`` of
    the recipients (drawn by ``in_test_wave``) get their assigned variant first; after
    ``decideAfterSeconds`` the variant with the highest rate of ``metric`` over its test recipients wins,
    and everyone else gets only the winner."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    test_share: Annotated[float, Field(ge=0.05, le=0.5)]
    metric: Metric
    decide_after_seconds: Annotated[int, Field(ge=1, le=MAX_DECIDE_AFTER_SECONDS)]


@dataclass(frozen=True)
class TestWave:
    """A campaign's test wave as the serving paths need it: who is in it, and the winner once decided.
    Stored on the Campaign as ``abTest`` (JSON) by the confirmation and the decision, so every reader
    (walks, in-app cards, web view, explain, export) reads the same state off the node it already reads."""

    __test__ = False  # not a pytest class

    share: float
    winner: str | None = None

    @classmethod
    def of(cls, stored: str | Mapping[str, Any] | None) -> TestWave | None:
        """From the Campaign's ``abTest`` property (None: no test wave)."""
        if not stored:
            return None
        data = json.loads(stored) if isinstance(stored, str) else stored
        return cls(share=float(data["testShare"]), winner=data.get("winner"))


def in_test_wave(campaign_id: str, profile_id: str, share: float) -> bool:
    """THE test-wave membership: a point of its own (``purpose="test-wave"``), independent of the
    variant draw, below ``share``."""
    return unit_point(campaign_id, profile_id, purpose="test-wave") < share


@dataclass(frozen=True)
class Assignment:
    """A campaign's variants' shares (and its test wave, if any), computed once: what the hot paths hold
    (one per campaign version) so a recipient costs one or two keyed hashes and a scan of at most four
    bounds."""

    bounds: tuple[tuple[str, float, float], ...]
    wave: TestWave | None = None

    @classmethod
    def of(cls, variants: Sequence[Mapping[str, Any]] | None, wave: TestWave | None = None) -> Assignment:
        return cls(tuple(variant_bounds(variants or ())), wave if variants else None)

    def assigned(self, *, campaign_id: str, profile_id: str) -> str | None:
        """The variant the hash assigns ``profile_id`` (None: no variants), whatever the test wave."""
        if not self.bounds:
            return None
        point = unit_point(campaign_id, profile_id)
        return next((vid for vid, _, end in self.bounds if point < end), self.bounds[-1][0])

    def waiting(self, *, campaign_id: str, profile_id: str) -> bool:
        """``profile_id`` is outside an undecided test wave: nothing is served to them yet."""
        wave = self.wave
        return (
            wave is not None and wave.winner is None and not in_test_wave(campaign_id, profile_id, wave.share)
        )

    def variant_of(self, *, campaign_id: str, profile_id: str) -> str | None:
        """THE variant ``profile_id`` is served in ``campaign_id`` (None: the campaign has no variants, or
        the reader waits for an undecided test wave, ``waiting``): a test-wave member (or anyone, without
        a test wave) their assigned one forever; everyone else the winner once decided."""
        if not self.bounds:
            return None
        wave = self.wave
        if wave is None or in_test_wave(campaign_id, profile_id, wave.share):
            return self.assigned(campaign_id=campaign_id, profile_id=profile_id)
        return wave.winner


def served_variant(
    variants: Sequence[Mapping[str, Any]] | None,
    wave: TestWave | None,
    *,
    campaign_id: str,
    profile_id: str,
) -> str | None:
    """THE variant a recipient is served (``Assignment.variant_of``), for one-off reads."""
    return Assignment.of(variants, wave).variant_of(campaign_id=campaign_id, profile_id=profile_id)


@dataclass(frozen=True)
class VariantRate:
    """One variant's rate of the test's metric over its test recipients."""

    variant_id: str
    numerator: int
    denominator: int

    @property
    def rate(self) -> float:
        return self.numerator / self.denominator if self.denominator else 0.0

    def wire(self) -> dict[str, Any]:
        return {"variantId": self.variant_id, "numerator": self.numerator, "denominator": self.denominator,
                "rate": self.rate}  # fmt: skip


def decision_of(rates: Sequence[VariantRate]) -> tuple[str, DecisionReason]:
    """The winner of a test wave by its rates (``rates`` in definition order) and why
    (``domain/reasons.py:DecisionReason``). Arms that cannot be told apart are said so, and the first
    of them is sent: with no metric event in any arm, or an arm the send reached nobody in, nothing
    distinguishes them (``insufficient_evidence``, the first variant); equal best rates are a ``tie``
    (the first of the tied). Otherwise the highest rate wins (``highest_rate``)."""
    if not any(r.numerator for r in rates) or any(not r.denominator for r in rates):
        return rates[0].variant_id, "insufficient_evidence"
    best = max(r.rate for r in rates)
    tied = [r for r in rates if r.rate == best]
    return tied[0].variant_id, "tie" if len(tied) > 1 else "highest_rate"


def assigned_variant(
    variants: Sequence[Mapping[str, Any]] | None, *, campaign_id: str, profile_id: str
) -> str | None:
    """The variant the hash assigns ``profile_id`` in ``campaign_id`` (None: the campaign has no
    variants), by ``Assignment``, whatever a test wave says (what is *served* is ``served_variant``).
    ``variants`` in wire form (``id``, ``weight``), as stored."""
    return Assignment.of(variants).assigned(campaign_id=campaign_id, profile_id=profile_id)


def wire_variant_id(definition: Mapping[str, Any], *, campaign_id: str, profile_id: str) -> str | None:
    """``assigned_variant`` for a stored definition's wire JSON (the hot reads keep definitions unparsed)."""
    return assigned_variant(definition.get("variants"), campaign_id=campaign_id, profile_id=profile_id)
