"""A tenant's ``senderName`` goes only on a From address that tenant owns (``sender.sender_for``): its
record's own ``emailFrom``, or EMAIL_FROM for the default tenant; never on an address it borrows."""

from __future__ import annotations

from typing import Any

from campaign_engine.delivery.email.sender import sender_for

PLATFORM = "news@platform.test"


def _tenants(**records: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Entries as ``TenantDirectory.branding()`` gives them: ``platformFrom`` where a name is set."""
    return {t: {**r, **({"platformFrom": PLATFORM} if "senderName" in r else {})} for t, r in records.items()}


def test_a_tenant_names_its_own_address() -> None:
    tenants = _tenants(default={"name": "D"}, river={"senderName": "Riverside", "emailFrom": "r@river.test"})
    assert sender_for(tenants, "river", "default") == "Riverside <r@river.test>"


def test_the_default_tenant_owns_email_from() -> None:
    tenants = _tenants(default={"senderName": "Northside"})
    assert sender_for(tenants, "default", "default") == f"Northside <{PLATFORM}>"
    assert sender_for(tenants, "elsewhere", "default") == f"Northside <{PLATFORM}>"  # no record: default's


def test_a_borrowed_address_never_carries_the_borrowers_name() -> None:
    on_defaults = _tenants(
        default={"name": "D", "emailFrom": "Northside <n@north.test>"}, river={"senderName": "Riverside"}
    )
    assert sender_for(on_defaults, "river", "default") == "Northside <n@north.test>"
    on_platform = _tenants(default={"name": "D"}, river={"senderName": "Riverside"})
    assert sender_for(on_platform, "river", "default") is None  # the provider's EMAIL_FROM, as configured
