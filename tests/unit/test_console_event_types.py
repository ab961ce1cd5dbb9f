"""The event webhooks screen offers exactly the event types the API accepts: its list
(``admin/src/webhooks.ts``'s ``EVENT_TYPES``) is written out for the checkboxes, so it is held equal to
``domain/webhook_events.py``'s, in order; a type added to the API without a checkbox fails here."""

from __future__ import annotations

import re
from pathlib import Path

from campaign_engine.domain.webhook_events import EVENT_TYPES

SCREEN = Path(__file__).resolve().parents[2] / "admin" / "src" / "webhooks.ts"


def test_the_screen_offers_every_event_type_the_api_accepts() -> None:
    listed = re.search(r"export const EVENT_TYPES = \[(.*?)\] as const;", SCREEN.read_text(), re.S)
    assert listed is not None, "webhooks.ts no longer declares EVENT_TYPES as this test reads it"
    assert tuple(re.findall(r'"([a-z_.]+)"', listed[1])) == EVENT_TYPES
