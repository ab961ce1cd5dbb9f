"""LearnCard's InAppMessage: its fields are accepted as strictly as LearnCard's validators take them, and
a card carries ``message.id`` and leaves absent optional fields out."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from campaign_engine.campaigns.engagement.models import MyCampaign
from campaign_engine.domain.content import Message

LEARNCARD_MESSAGE: dict[str, Any] = {
    "id": "update-2026",
    "title": "A new version",
    "targeting": {"all": [{"platform": ["ios", "android"]}, {"not": {"role": ["admin"]}},
                          {"version": {"source": "capgo", "op": "lt", "value": "2.4.0"}}]},
    "actions": [
        {"label": "Update", "style": "primary", "action": {"type": "capgoUpdate"}, "closeOnComplete": False},
        {"label": "Store", "action": {"type": "appStore", "iosUrl": "https://apps.apple.com/app/x"}},
    ],
}  # fmt: skip


def test_learncard_fields_are_accepted_and_kept() -> None:
    message = Message.model_validate(LEARNCARD_MESSAGE)
    wire = message.model_dump(mode="json", by_alias=True)
    assert wire["id"] == "update-2026" and wire["targeting"] == LEARNCARD_MESSAGE["targeting"]
    update, store = wire["actions"]
    assert update == {"label": "Update", "style": "primary", "action": {"type": "capgoUpdate"},
                      "closeOnComplete": False}  # fmt: skip
    # LearnCard's defaults: a secondary button that closes the message; no null for the absent URLs.
    assert store["style"] == "secondary" and store["closeOnComplete"] is True
    assert store["action"] == {"type": "appStore", "iosUrl": "https://apps.apple.com/app/x"}


@pytest.mark.parametrize(
    "change",
    [
        {"extra": 1},
        {"targeting": {"platform": ["windows"]}},
        {"targeting": {"platform": ["ios"], "role": ["x"]}},  # one predicate per object, as LearnCard's
        {"targeting": {"rol": ["admin"]}},  # a typo fails closed instead of matching everyone
        {"targeting": {"version": {"source": "capgo", "op": "lt", "value": "1", "x": 1}}},
        {"actions": [{"label": "S", "action": {"type": "appStore", "iosUrl": "http://x.test"}}]},
        {"actions": [{"label": "U", "action": {"type": "capgoUpdate", "url": "https://x.test"}}]},
        {
            "targeting": {
                "not": {"not": {"not": {"not": {"not": {"not": {"not": {"not": {"role": ["a"]}}}}}}}}
            }
        },
    ],
    ids=["extra", "platform", "two", "typo", "version-extra", "http-store", "update-extra", "too-deep"],
)
def test_everything_else_is_refused(change: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        Message.model_validate({**LEARNCARD_MESSAGE, **change})


def test_a_card_names_its_message_and_omits_absent_fields() -> None:
    card = {"campaignId": "c1", "name": "n", "startsAt": None, "endsAt": None}
    plain = MyCampaign.model_validate({**card, "message": {"title": "Hi"}}).model_dump(
        mode="json", by_alias=True
    )
    assert plain["message"]["id"] == "c1"  # the campaign's id where the author gave none
    assert not {"body", "media", "emoji", "targeting"} & plain["message"].keys()
    assert None not in plain["message"].values()
    named = MyCampaign.model_validate({**card, "message": LEARNCARD_MESSAGE}).model_dump(by_alias=True)
    assert named["message"]["id"] == "update-2026"
