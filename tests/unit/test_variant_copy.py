"""The one merge of a variant's copy (``domain/variant_copy.py``): field by field over the base copy of
the reader's language, the same on the parsed definition and on its stored JSON, and a language the
variant leaves out reads its own base copy, never another language's."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import ValidationError

from campaign_engine.domain.campaign import CampaignPublic
from campaign_engine.domain.variant_copy import overridden, wire_variant_copy
from campaign_engine.domain.variants import ContentField

EMAIL = {"subject": "Spring", "title": "Spring days", "body": "News of spring", "ctaLabel": "Open"}
ES_EMAIL = {"subject": "Primavera", "title": "Días", "body": "Noticias", "ctaLabel": "Abrir"}
FR_EMAIL = {"subject": "Printemps", "title": "Jours", "body": "Nouvelles", "ctaLabel": "Ouvrir"}


def _campaign(**extra: Any) -> dict[str, Any]:
    return {
        "id": "spring", "name": "Spring", "channels": ["inApp", "notify", "email"], "locale": "en",
        "message": {"title": "Card", "presentation": "banner"},
        "notification": {"title": "Push", "body": "Body"}, "email": EMAIL,
        "translations": {"es": {"email": ES_EMAIL, "notification": {"title": "Aviso", "body": "Cuerpo"}},
                         "fr": {"email": FR_EMAIL}},
        "variants": [
            {"id": "A"},
            {"id": "B", "email": {"subject": "Last days"}, "message": {"title": "Hurry"},
             "translations": {"es": {"email": {"subject": "Últimos días"}}}},
        ],
        "status": "live", "tenantId": None, "createdAt": "x", "updatedAt": "x", "revision": 1, **extra,
    }  # fmt: skip


def test_a_subject_only_variant_keeps_every_other_field_of_each_languages_base_copy() -> None:
    campaign = CampaignPublic.model_validate(_campaign())
    tag, email = campaign.content("email", "en-GB", "B")
    assert tag == "en" and (email.subject, email.title, email.body, email.cta_label) == (
        "Last days", "Spring days", "News of spring", "Open"
    )  # fmt: skip
    tag, email = campaign.content("email", "es", "B")
    assert tag == "es" and (email.subject, email.body) == ("Últimos días", "Noticias")
    # No French override: B's French readers read the French base copy, not B's English subject.
    tag, email = campaign.content("email", "fr", "B")
    assert tag == "fr" and email.model_dump(by_alias=True, exclude_none=True) == FR_EMAIL
    assert campaign.content("email", "es", "A")[1].model_dump(by_alias=True, exclude_none=True) == ES_EMAIL
    _, card = campaign.content("message", "en", "B")
    assert (card.title, card.presentation) == ("Hurry", "banner")  # the base's presentation stays
    _, push = campaign.content("notification", "es", "B")
    assert (push.title, push.body) == ("Aviso", "Cuerpo")  # B overrides no notification


def test_the_stored_json_and_the_parsed_definition_merge_alike() -> None:
    campaign = CampaignPublic.model_validate(_campaign())
    stored = json.loads(json.dumps(campaign.wire()))
    fields: tuple[ContentField, ...] = ("message", "notification", "email")
    for field in fields:
        for tag in campaign.languages(field):
            for variant_id in ("A", "B", None):
                parsed = campaign.content(field, tag, variant_id)[1]
                wire = parsed.model_dump(mode="json", by_alias=True, exclude_none=True)
                assert wire_variant_copy(stored, field, tag, variant_id) == wire, (field, tag, variant_id)
    assert overridden(stored, "email", "en", "B") == ["subject"]
    assert overridden(stored, "email", "fr", "B") == [] == overridden(stored, "email", "en", "A")


def test_a_variant_may_target_other_devices_and_name_its_own_message() -> None:
    """LearnCard's ``targeting`` and ``id`` are message fields like the others: a variant may override
    them alone, and keeps every other field of the base card."""
    targeting = {"platform": ["ios"]}
    b = {"id": "B", "message": {"targeting": targeting, "id": "spring-b"}}
    campaign = CampaignPublic.model_validate(_campaign(variants=[{"id": "A"}, b]))
    stored = json.loads(json.dumps(campaign.wire()))
    card = wire_variant_copy(stored, "message", "en", "B")
    assert card == {**campaign.wire()["message"], "targeting": targeting, "id": "spring-b"}
    assert card["title"] == "Card" and "targeting" not in wire_variant_copy(stored, "message", "en", "A")
    assert overridden(stored, "message", "en", "B") == ["id", "targeting"]


@pytest.mark.parametrize(
    "variant",
    [
        {
            "id": "B",
            "message": {
                "targeting": {
                    "not": {
                        "not": {
                            "not": {"not": {"not": {"not": {"not": {"not": {"not": {"platform": ["ios"]}}}}}}}
                        }
                    }
                }
            },
        },  # nests past its depth
        {"id": "B", "message": {"id": ""}},
        {"id": "B", "email": {}},  # overrides nothing
        {"id": "B", "email": {"subject": ""}},  # the field's own limits
        {"id": "B", "email": {"subject": "x" * 151}},
        {"id": "B", "email": {"heroImageUrl": "http://cdn.example/a.png"}},
        {"id": "B", "email": {"sender": "me"}},  # not a field of the email
        {"id": "B", "translations": {"fr": {"notification": {"title": "Hé"}}}},  # fr has no notification
        {"id": "B", "translations": {"de": {"email": {"subject": "Frühling"}}}},  # no de translation
    ],
)
def test_a_variant_override_is_refused_where_its_field_would_be(variant: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        CampaignPublic.model_validate(_campaign(variants=[{"id": "A"}, variant]))


OPEN = {"label": "Open", "action": {"type": "externalLink", "url": "https://example.com/open"}}
SHOP = {"label": "Shop", "action": {"type": "externalLink", "url": "https://example.com/shop"}}


def _buttons(variant: dict[str, Any]) -> dict[str, Any]:
    es = {"message": {"title": "Tarjeta", "actions": [{**OPEN, "label": "Abrir"}]}, "email": ES_EMAIL}
    return _campaign(message={"title": "Card", "actions": [OPEN]}, translations={"es": es},
                     variants=[{"id": "A"}, variant])  # fmt: skip


def test_a_variants_buttons_in_a_language_are_its_own_with_only_the_labels_translated() -> None:
    """A variant testing another button translates that button's label; a translation that points a
    button elsewhere than the variant's own (or, without its own, the campaign's) is refused."""
    spanish_shop = {"message": {"actions": [{**SHOP, "label": "Comprar"}]}}
    campaign = CampaignPublic.model_validate(
        _buttons({"id": "B", "message": {"actions": [SHOP]}, "translations": {"es": spanish_shop}})
    )
    tag, message = campaign.content("message", "es-MX", "B")
    assert (tag, [(a.label, str(a.action.url)) for a in message.actions]) == (
        "es",
        [("Comprar", "https://example.com/shop")],
    )
    for variant in (
        {"id": "B", "message": {"actions": [SHOP]}, "translations": {"es": {"message": {"actions": [OPEN]}}}},
        {"id": "B", "translations": {"es": spanish_shop}},  # no buttons of its own: the campaign's
    ):
        with pytest.raises(ValidationError, match=r"translations\['es'\]\.message\.actions\[0\]"):
            CampaignPublic.model_validate(_buttons(variant))
