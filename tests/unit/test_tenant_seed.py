"""The tenant settings as the seed of tenant records (graph/tenants.py:seed_rows): pure, no graph."""

from __future__ import annotations

import json

import pytest

from campaign_engine.domain.frequency_cap import ChannelCap
from campaign_engine.graph.tenants import seed_rows

DAY = {"max": 1, "windowSeconds": 86400}
WEEK = {"max": 3, "windowSeconds": 604800}


def test_every_named_tenant_becomes_one_row_and_star_caps_become_the_default_tenants() -> None:
    rows = seed_rows(
        default_tenant="default",
        tenants={"acme": {"name": "Acme", "primaryColor": "#123"}},
        app_origins={"default": "https://app.example", "late": "https://late.example"},
        frequency_caps={
            "*": {"email": ChannelCap.model_validate(WEEK), "notify": ChannelCap.model_validate(WEEK)},
            "default": {"notify": ChannelCap.model_validate(DAY)},  # its own entry wins per channel
            "capped": {"email": ChannelCap.model_validate(DAY)},
        },
    )
    by_id = {row["tenantId"]: row for row in rows}
    assert [row["tenantId"] for row in rows] == ["acme", "capped", "default", "late"]
    assert {row["marker"] for row in rows} == {f"tenant_seed:{t}" for t in by_id}
    assert json.loads(by_id["default"]["props"]["frequencyCaps"]) == {"email": WEEK, "notify": DAY}
    assert json.loads(by_id["capped"]["props"]["frequencyCaps"]) == {"email": DAY}
    assert json.loads(by_id["acme"]["props"]["frequencyCaps"]) == {}  # falls back to the default tenant's
    assert (by_id["acme"]["props"]["name"], by_id["acme"]["props"]["primaryColor"]) == ("Acme", "#123")
    assert (by_id["late"]["props"]["name"], by_id["late"]["props"]["appOrigin"]) == (
        "late",
        "https://late.example",
    )
    assert by_id["acme"]["props"]["appOrigin"] is None


@pytest.mark.parametrize(
    ("tenants", "origins", "named"),
    [
        ({"acme": {"primaryColor": "red"}}, {}, "acme"),
        ({"acme": {"logoUrl": "http://acme.example/l.png"}}, {}, "acme"),
        ({}, {"Bad_Id": "https://x.example"}, "Bad_Id"),
        ({}, {"default": "http://app.example"}, "default"),
    ],
)
def test_a_setting_no_record_can_hold_is_refused_naming_its_tenant(
    tenants: dict[str, dict[str, str]], origins: dict[str, str], named: str
) -> None:
    with pytest.raises(ValueError, match=named):
        seed_rows(default_tenant="default", tenants=tenants, app_origins=origins, frequency_caps={})
