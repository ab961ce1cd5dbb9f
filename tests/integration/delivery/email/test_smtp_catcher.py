"""The dev SMTP catcher stores what the SMTP provider sends, so a developer can read it."""

from __future__ import annotations

import email
import email.policy
from pathlib import Path

from campaign_engine.delivery.email.catcher import start_smtp_catcher
from campaign_engine.delivery.email.provider import OutgoingEmail
from campaign_engine.delivery.email.smtp import SmtpProvider
from tests.conftest import free_port


def test_catcher_stores_each_message_as_eml(tmp_path: Path) -> None:
    port = free_port()
    catcher = start_smtp_catcher("127.0.0.1", port, tmp_path / "mail")
    try:
        provider = SmtpProvider(host="127.0.0.1", port=port, sender="news@campaigns.test", starttls="off")
        message = OutgoingEmail(
            key="p1",
            to="p1@example.com",
            subject="Big news",
            html="<p>Hello</p>",
            text="Hello",
            headers={"List-Unsubscribe": "<https://campaigns.test/campaigns/unsubscribe?token=t>"},
        )
        [result] = provider.send_batch([message])
        assert result.outcome == "accepted"
    finally:
        catcher.stop()
    [stored] = list((tmp_path / "mail").glob("*.eml"))
    parsed = email.message_from_bytes(stored.read_bytes(), policy=email.policy.default)
    assert parsed["Subject"] == "Big news" and parsed["To"] == "p1@example.com"
    assert parsed["List-Unsubscribe"] == "<https://campaigns.test/campaigns/unsubscribe?token=t>"
