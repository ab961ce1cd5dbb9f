"""Every recipient in their own language, end to end through ``make dev``'s processes: the local Neo4j
launcher, the reference inbox, the SMTP catcher, the worker and the API as OS processes wired by
``dev_stack.child_env`` (``bench/_chaos_stack.py``, here without faults), driven over HTTP as a user drives
them.

A campaign with ``en`` base content and ``es`` and ``ar`` translations goes to readers of locales
``en-GB``, ``es-MX``, ``es``, ``ar``, ``fr``, ``zz`` and none. Each reader's inbox payload, email (read from
the catcher's mailbox) and ``getMyCampaigns`` card is in the expected language; the Arabic email and its
web view are right-to-left; the review's per-language counts are what was delivered."""

from __future__ import annotations

import json
import re
import sqlite3
from collections import Counter
from email import policy
from email.message import EmailMessage
from email.parser import BytesParser
from email.utils import parseaddr
from functools import partial
from pathlib import Path
from typing import Any, cast

import httpx
import pytest

from bench._chaos_stack import Stack
from bench.chaos import Api
from campaign_engine.api.auth import mint_token
from campaign_engine.config import Settings
from tests.integration.campaigns.test_translations import CAMPAIGN, COPY, EXPECTED, READERS
from tests.support.concurrency import wait_for

pytestmark = pytest.mark.e2e

DEADLINE = 180.0
_wait = partial(wait_for, timeout=DEADLINE, every=0.2)


def _profiles(path: Path) -> None:
    with path.open("w") as out:
        for pid, locale in READERS.items():
            email = {"address": f"{pid}@example.com", "verified": True, "primary": True}
            row: dict[str, Any] = {"profileId": pid, "dob": "1990-01-01", "emails": [email]}
            if locale is not None:
                row["locale"] = locale
            out.write(json.dumps(row) + "\n")


def _mail(mailbox: Path) -> dict[str, EmailMessage]:
    found: dict[str, EmailMessage] = {}
    for path in mailbox.glob("*.eml"):
        message = cast(EmailMessage, BytesParser(policy=policy.default).parsebytes(path.read_bytes()))
        found[parseaddr(str(message["To"]))[1].split("@")[0]] = message
    return found


def _inbox(db: Path) -> dict[str, dict[str, Any]]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    try:
        rows = conn.execute(
            "SELECT recipient, payload FROM notifications WHERE campaign_id = 'spring' AND test_id = ''"
        ).fetchall()
    finally:
        conn.close()
    return {str(r[0]): json.loads(r[1]) for r in rows}


def test_each_reader_gets_their_language_on_every_channel_through_the_dev_processes(
    dev_stack: Stack, dev_admin: Api
) -> None:
    _profiles(dev_stack.work / "readers.jsonl")
    dev_stack.cli("profiles", "import", str(dev_stack.work / "readers.jsonl"))
    settings = Settings(_env_file=dev_stack.env_file)  # type: ignore[call-arg]
    dev_admin.mutate("campaigns.create", CAMPAIGN)
    dev_admin.mutate("campaigns.addAudience", {"campaignId": "spring", "source": {"type": "all"}})
    dev_admin.mutate("campaigns.setStatus", {"campaignId": "spring", "status": "live"})

    preview = dev_admin.query("campaigns.previewDispatch", {"campaignId": "spring"})
    served = Counter(EXPECTED.values())
    assert preview["localeCounts"] == {"notify": served, "email": served}
    assert preview["untranslated"] == {"fr": 1, "zz": 1}
    assert preview["blockedReason"] == "missing_translation"
    refused = dev_admin.client.post(
        "/trpc/campaigns.dispatch",
        json={"campaignId": "spring", "expectedPreviewToken": preview["previewToken"]},
    )
    assert refused.status_code == 400 and "acceptFallback" in refused.text
    dev_admin.mutate(
        "campaigns.dispatch",
        {"campaignId": "spring", "expectedPreviewToken": preview["previewToken"], "acceptFallback": True},
    )

    _wait("every reader notified", lambda: len(_inbox(dev_stack.inbox_db)) == len(READERS))
    _wait("every reader emailed", lambda: len(_mail(dev_stack.mailbox)) == len(READERS))
    inbox, mail = _inbox(dev_stack.inbox_db), _mail(dev_stack.mailbox)
    delivered: dict[str, Counter[str]] = {"notify": Counter(), "email": Counter()}
    for pid, lang in EXPECTED.items():
        title, _, subject, cta = COPY[lang]
        payload = inbox[pid]
        assert (payload["title"], payload["metadata"]["locale"]) == (title, lang), pid
        delivered["notify"][payload["metadata"]["locale"]] += 1

        message = mail[pid]
        assert str(message["Subject"]) == subject, pid
        assert str(message["List-ID"]) == "Spring <spring.default.127.0.0.1>", message["List-ID"]
        html_part = message.get_body(("html",))
        text_part = message.get_body(("plain",))
        assert html_part is not None and text_part is not None
        html, text = html_part.get_content(), text_part.get_content()
        rtl = "rtl" if lang == "ar" else "ltr"
        assert f'<html lang="{lang}" dir="{rtl}">' in html and cta in html and title in text, pid
        delivered["email"][lang] += 1

        # The web view of exactly this email: the same language and direction, the strict headers.
        link = re.search(r'href="(http[^"]+/campaigns/view\?token=[^"]+)"', html)
        assert link is not None, pid
        view = httpx.get(link.group(1).replace("&amp;", "&"), timeout=30)
        assert view.status_code == 200, pid
        assert f'lang="{lang}"' in view.text and f'dir="{rtl}"' in view.text and title in view.text, pid
        assert (
            view.headers["referrer-policy"] == "no-referrer"
            and "default-src 'none'" in view.headers["content-security-policy"]
        )

        bearer = {"authorization": f"Bearer {mint_token(settings, profile_id=pid)}"}
        mine = httpx.get(f"{dev_stack.api_url}/trpc/campaigns.getMyCampaigns", headers=bearer, timeout=30)
        assert mine.status_code == 200, mine.text
        [card] = mine.json()["result"]["data"]["campaigns"]
        assert (card["message"]["title"], card["locale"]) == (title, lang), pid

    assert delivered == preview["localeCounts"]  # the review counted what was delivered
    assert 'dir="rtl"' in mail["r-ar"].get_body(("html",)).get_content()  # type: ignore[union-attr]
