"""Layouts per tenant over the real API, a real Neo4j and both real delivery paths.

A tenant's own admins edit its email layout (logo, colours, footer text and address, sender name) with
``tenants.updateLayout`` and see it first with ``tenants.previewLayout``; a dispatch through the real
worker carries it to the Postmark stand-in and to the SMTP catcher, its copy escaped and its sender name
quoted (RFC 5322) or encoded (RFC 2047) in the From header.
"""

from __future__ import annotations

import email
import email.policy
import json
from pathlib import Path
from typing import Any

import pytest

from campaign_engine.api.auth import mint_token
from campaign_engine.config import Settings
from campaign_engine.delivery.email.catcher import start_smtp_catcher
from campaign_engine.domain.tenant import LayoutPatch
from campaign_engine.graph.graph import Graph
from campaign_engine.graph.tenant_directory import tenants_of
from campaign_engine.graph.tenants import settings_seed, update_layout
from campaign_engine.wiring import build_worker
from tests.conftest import ADMIN_ID, free_port
from tests.support.api import TrpcClient, api_client, error_code, ok
from tests.support.delivery import NOW, drain, local_queues, start_dispatch
from tests.support.email import add_email_members, email_settings, make_email_campaign
from tests.support.postmark_standin import PostmarkStandin

SEED: dict[str, Any] = {
    "campaign_tenants": {
        "default": {"name": "Northside Schools"},
        "acme": {"name": "Acme Academy", "footerText": "Seeded footer"},
    },
    "campaign_app_origins": {"default": "https://app.example", "acme": "https://acme.example"},
}
HOSTILE = {
    "footerText": '<script>alert("x")</script> & "quoted"',
    "footerAddress": "1 O'Hare Way, <Springfield>",
    "senderName": 'Acme "News", Inc.',
}


def _headers(api: TrpcClient, profile_id: str, tenant: str, role: str) -> dict[str, str]:
    token = mint_token(api.settings, profile_id=profile_id, tenant_id=tenant, roles=[role])
    return {"authorization": f"Bearer {token}"}


def _preview(api: TrpcClient, data: dict[str, Any], headers: dict[str, str]) -> Any:
    return api.http.get("/trpc/tenants.previewLayout", params={"input": json.dumps(data)}, headers=headers)


def _record(graph: Graph, tenant_id: str) -> dict[str, Any]:
    return dict(graph.run("MATCH (t:Tenant {tenantId: $t}) RETURN t {.*} AS t", t=tenant_id)[0]["t"])


def test_a_tenant_admin_edits_and_previews_only_their_own_layout(
    base_settings: Settings, graph: Graph
) -> None:
    with api_client(base_settings.model_copy(update=SEED), graph) as api:
        admin = _headers(api, "acme-admin", "acme", "admin")
        # The seed carries layout copy a CAMPAIGN_TENANTS entry names.
        assert _record(graph, "acme")["footerText"] == "Seeded footer"

        stored = ok(_preview(api, {"tenantId": "acme"}, admin))
        assert "Seeded footer" in stored["html"] and stored["sender"] == api.settings.email_from

        proposed = ok(_preview(api, {"tenantId": "acme", "layout": HOSTILE}, admin))
        html = proposed["html"]
        assert "<script>" not in html and "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in html
        assert "1 O&#39;Hare Way, &lt;Springfield&gt;" in html
        assert "1 O'Hare Way, <Springfield>" in proposed["text"]  # plain text stays plain
        # A tenant's sender name goes only on an address it owns: EMAIL_FROM is the deployment's, and
        # acme's own (set by a platform admin) carries it, quoted.
        assert proposed["sender"] == api.settings.email_from
        own = {"tenantId": "acme", "emailFrom": "news@acme.example"}
        ok(api.mutate("tenants.update", own, as_=ADMIN_ID, admin=True))
        proposed = ok(_preview(api, {"tenantId": "acme", "layout": HOSTILE}, admin))
        assert proposed["sender"] == '"Acme \\"News\\", Inc." <news@acme.example>'
        assert _record(graph, "acme")["footerText"] == "Seeded footer"  # a preview writes nothing

        saved = ok(
            api.http.post("/trpc/tenants.updateLayout", json={"tenantId": "acme", **HOSTILE}, headers=admin)
        )
        assert (saved["footerText"], saved["senderName"]) == (HOSTILE["footerText"], HOSTILE["senderName"])
        assert saved["name"] == "Acme Academy" and saved["appOrigin"] == "https://acme.example"
        assert ok(_preview(api, {"tenantId": "acme"}, admin))["html"] == html  # stored = what was shown

        # Only the layout: the rest of the record, another tenant's layout, and lesser roles are refused.
        for data, code in [
            ({"tenantId": "acme", "appOrigin": "https://evil.example"}, "BAD_REQUEST"),
            ({"tenantId": "acme", "footerText": "two\nlines"}, "BAD_REQUEST"),
            ({"tenantId": "acme", "senderName": "x" * 101}, "BAD_REQUEST"),
            ({"tenantId": "acme", "logoUrl": "http://acme.example/logo.png"}, "BAD_REQUEST"),
            ({"tenantId": "default", "footerText": "Mine now"}, "FORBIDDEN"),
        ]:
            response = api.http.post("/trpc/tenants.updateLayout", json=data, headers=admin)
            assert error_code(response) == code, data
        publisher = _headers(api, "acme-pub", "acme", "publisher")
        refused = api.http.post("/trpc/tenants.updateLayout", json={"tenantId": "acme"}, headers=publisher)
        assert error_code(refused) == "FORBIDDEN"
        assert error_code(_preview(api, {"tenantId": "default"}, admin)) == "FORBIDDEN"
        assert error_code(_preview(api, {"tenantId": "acme", "layout": {"primaryColor": "red"}}, admin)) == (
            "BAD_REQUEST"
        )
        assert _record(graph, "acme")["footerText"] == HOSTILE["footerText"]  # the refusals wrote nothing
        assert "footerText" not in _record(graph, "default")

        # A platform admin may edit any tenant's layout; null clears a field.
        cleared = api.mutate(
            "tenants.updateLayout", {"tenantId": "acme", "senderName": None}, as_=ADMIN_ID, admin=True
        )
        assert ok(cleared)["senderName"] is None and "senderName" not in _record(graph, "acme")
        assert (
            error_code(api.mutate("tenants.updateLayout", {"tenantId": "nope"}, as_=ADMIN_ID, admin=True))
            == "NOT_FOUND"
        )


def _mails(directory: Path) -> list[email.message.EmailMessage]:
    parsed = [
        email.message_from_bytes(p.read_bytes(), policy=email.policy.default) for p in directory.glob("*.eml")
    ]
    return [m for m in parsed if isinstance(m, email.message.EmailMessage)]


def _body(message: email.message.EmailMessage, subtype: str) -> str:
    part = message.get_body(preferencelist=(subtype,))
    assert part is not None
    return str(part.get_content())  # type: ignore[attr-defined]


@pytest.mark.parametrize("provider", ["postmark", "smtp"])
def test_a_dispatched_email_carries_the_tenants_layout_escaped(
    base_settings: Settings, graph: Graph, tmp_path: Path, provider: str
) -> None:
    members = ["m1", "m2"]
    port = free_port()
    catcher = start_smtp_catcher("127.0.0.1", port, tmp_path / "mail")
    try:
        with PostmarkStandin() as postmark:
            settings = email_settings(
                base_settings,
                postmark.url,
                postmark.token,
                campaign_email_provider=provider,
                smtp_host="127.0.0.1",
                smtp_port=port,
                campaign_tenants={"default": {"name": "Northside Schools"}},
            )
            tenants_of(graph, settings).seed_now(settings_seed(settings))
            layout = {"tenantId": "default", **HOSTILE, "senderName": "École Nord", "primaryColor": "#7a1f5c"}
            update_layout(graph, patch=LayoutPatch.model_validate(layout), now=NOW, audit=None)
            make_email_campaign(graph)
            add_email_members(graph, "c1", members)
            queues = local_queues(tmp_path / "q.sqlite3")
            start_dispatch(graph, queues.dispatch)
            worker = build_worker(settings, graph, queues=queues, sweep_every=None)
            try:
                drain(worker.handle, queues)
            finally:
                worker.close()
            if provider == "postmark":
                sent = [(m["From"], m["HtmlBody"], m["TextBody"]) for m in postmark.accepted]
            else:
                sent = [
                    (str(m["From"]), _body(m, "html"), _body(m, "plain")) for m in _mails(tmp_path / "mail")
                ]
    finally:
        catcher.stop()
    assert len(sent) == len(members)
    for sender, html, text in sent:
        if provider == "postmark":
            assert sender == "=?utf-8?q?=C3=89cole_Nord?= <news@campaigns.test>"  # RFC 2047, as sent
        else:
            assert sender == "École Nord <news@campaigns.test>"  # as a mail reader decodes it
        assert "<script>" not in html and "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in html
        assert "1 O&#39;Hare Way, &lt;Springfield&gt;" in html and "#7a1f5c" in html
        assert HOSTILE["footerText"] in text and HOSTILE["footerAddress"] in text
