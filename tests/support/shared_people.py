"""A world of two tenants sharing people, for the isolation matrix (``docs/people.md``).

Tenant B (``beta``) writes its own facts about the people it shares with tenant A (``alpha``) through its
own admin, runs a live segment campaign (notify and email, two languages, two variants, minors routed to
their guardians) and answers reads. Tenant A then writes about the same people, each value carrying a
marker (``MARKERS``) so any of it showing up in B's answers or deliveries is found by a text search.

- ``parent``: every fact written by B (emails, receiver and its secret, locale, zone, dob, tags,
  connections), so B reads only its own view;
- ``plain``: only shared facts (a platform write), so B reads the shared facts A must not touch either;
- ``minor``: B's managed member, whose guardians B recorded: ``guardian`` (granted), ``declined``
  (revoked); A flips both.

``Receiver`` is the loopback receiver of every notification: it records the path POSTed to and which
known secrets the signature verifies with, so a receiver URL or secret changed by A shows as a
different delivery.
"""

from __future__ import annotations

import base64
import json
import threading
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import Response

from campaign_engine.domain.webhook_signature import verify

__all__ = [
    "CAMPAIGN_A",
    "CAMPAIGN_B",
    "CLUB_A",
    "MARKERS",
    "PEOPLE",
    "SECRETS",
    "SEGMENTS",
    "A",
    "B",
    "Receiver",
    "a_rows",
    "b_rows",
    "campaign_definition",
    "shared_rows",
]

A, B = "alpha", "beta"
PARENT, PLAIN, MINOR, GUARDIAN, DECLINED = "parent", "plain", "minor", "guardian", "declined"
PEOPLE = (PARENT, PLAIN, MINOR, GUARDIAN, DECLINED)
A_ONLY = "a-only"  # a person only A holds: A's connections name them
CAMPAIGN_B, CAMPAIGN_A, CLUB_A = "news", "alpha-news", "alpha-club"


def _secret(seed: str) -> str:
    return "whsec_" + base64.b64encode(seed.encode().ljust(32, b"-")[:32]).decode()


SECRETS = {
    "beta": _secret("beta"),
    "shared": _secret("shared"),
    "alpha-marker": _secret("alpha-marker"),
    "alpha-marker-rotated": _secret("alpha-marker-rotated"),
}
"""The receivers' own secrets by owner; ``Receiver`` names which of them verify each POST."""

ADULT, MINOR_DOB = "1980-05-17", "2015-09-01"
A_ADULT, A_MINOR = "1944-04-04", "2016-06-16"  # A's dobs: a leak turns B's minor adult and B's adults minor
MARKERS = ("alpha-marker", "xq-ALPHA", "Pacific/Chatham", A_ADULT, A_MINOR, A_ONLY)
"""What only A writes: an address, receiver path and tag (``alpha-marker``), a locale, a zone, dobs and
a connection. None may appear in any answer B gets."""


SEGMENTS: dict[str, dict[str, Any]] = {
    "tag b-news": {"tag": "b-news"},
    "tag alpha-marker": {"tag": "alpha-marker"},
    "locale xq": {"locale": "xq"},
    "locale es": {"locale": "es"},
    "timeZone Pacific/Chatham": {"timeZone": "Pacific/Chatham"},
    "connectedTo a-only": {"connectedTo": A_ONLY},
    "connectedTo guardian": {"connectedTo": GUARDIAN},
    "ageBelow 18": {"ageBelow": 18},
}
"""B's segment previews: each counts B's people by a fact, B's or one A writes (none for B before)."""


def _email(address: str) -> list[dict[str, Any]]:
    return [{"address": address, "primary": True, "verified": True}]


def _hook(receiver: str, owner: str, pid: str) -> dict[str, Any]:
    return {"notificationsWebhook": f"{receiver}/{owner}/{pid}", "notificationsWebhookSecret": SECRETS[owner]}


def shared_rows(receiver: str) -> list[dict[str, Any]]:
    """The platform's write: every person in both tenants, with shared facts."""
    rows: list[dict[str, Any]] = [
        {"profileId": pid, "tenants": [A, B], "dob": ADULT, "locale": "en", **_hook(receiver, "shared", pid),
         "emails": _email(f"{pid}@shared.example")}
        for pid in PEOPLE
    ]  # fmt: skip
    plain = rows[PEOPLE.index(PLAIN)]
    plain.update(locale="es", tags=["b-news"], connections=[GUARDIAN])
    rows[PEOPLE.index(MINOR)].update(dob=MINOR_DOB, isManaged=True)
    rows.append({"profileId": A_ONLY, "tenants": [A], "dob": ADULT})
    return rows


def b_rows(receiver: str) -> list[dict[str, Any]]:
    """B's own facts, written by B's admin (who may set a receiver and its secret)."""
    return [
        {"profileId": PARENT, "emails": _email("parent@beta.example"), **_hook(receiver, "beta", PARENT),
         "locale": "es-MX", "timeZone": "Europe/Madrid", "dob": ADULT, "isManaged": False,
         "tags": ["b-news"], "connections": [GUARDIAN]},
        {"profileId": MINOR, "dob": MINOR_DOB, "isManaged": True, "tags": ["b-news"],
         "guardians": [{"profileId": GUARDIAN, "consent": "granted"},
                       {"profileId": DECLINED, "consent": "revoked"}]},
        {"profileId": GUARDIAN, "emails": _email("guardian@beta.example"),
         **_hook(receiver, "beta", GUARDIAN), "dob": ADULT, "locale": "en-GB"},
        {"profileId": DECLINED, "emails": _email("declined@beta.example"),
         **_hook(receiver, "beta", DECLINED), "dob": ADULT},
    ]  # fmt: skip


def a_rows(receiver: str, *, route: bool = True) -> list[dict[str, Any]]:
    """What A writes about each shared person: every field marked, B's choices reversed (B's minor made
    an adult, B's adults minors, B's granted guardian revoked and its revoked one granted, B's segment
    tag dropped). ``route``: with a receiver and its secret (an admin's write)."""
    rows: list[dict[str, Any]] = []
    for pid in PEOPLE:
        row: dict[str, Any] = {
            "profileId": pid, "emails": _email(f"{pid}@alpha-marker.example"), "locale": "xq-ALPHA",
            "timeZone": "Pacific/Chatham", "dob": A_MINOR, "isManaged": True, "tags": ["alpha-marker"],
            "connections": [A_ONLY],
        }  # fmt: skip
        if route:
            row.update(_hook(receiver, "alpha-marker", pid))
        rows.append(row)
    minor = rows[PEOPLE.index(MINOR)]
    minor.update(dob=A_ADULT, isManaged=False)
    minor["guardians"] = [
        {"profileId": DECLINED, "consent": "granted"},
        {"profileId": GUARDIAN, "consent": "revoked"},
    ]
    for pid in (GUARDIAN, DECLINED):
        rows[PEOPLE.index(pid)]["dob"] = A_ADULT  # a guardian must be an adult for A's link to be written
    return rows


def _copy(tag: str) -> dict[str, Any]:
    return {
        "notification": {"title": f"Push {tag}", "body": f"Body {tag}"},
        "email": {
            "subject": f"Subject {tag}",
            "title": f"Title {tag}",
            "body": f"Text {tag}",
            "ctaLabel": "Open",
        },
    }


def campaign_definition(ref: str, name: str, **extra: Any) -> dict[str, Any]:
    """notify and email in English and Spanish, two variants (B overrides both languages)."""
    return {
        "id": ref, "name": name, "channels": ["notify", "email"], "locale": "en", **_copy(f"{ref} en A"),
        "translations": {"es": _copy(f"{ref} es A")},
        "variants": [{"id": "A"},
                     {"id": "B", **_copy(f"{ref} en B"), "translations": {"es": _copy(f"{ref} es B")}}],
        **extra,
    }  # fmt: skip


@dataclass
class Receiver:
    """Every notification POST: the path it reached, the known secrets its signature verifies with, and
    what it carried."""

    posts: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def app(self) -> FastAPI:
        app = FastAPI()

        @app.post("/{owner}/{pid}")
        async def hook(owner: str, pid: str, request: Request) -> Response:
            body = await request.body()
            headers = request.headers
            stamp = headers.get("webhook-timestamp", "")
            signed_by = sorted(
                name
                for name, secret in SECRETS.items()
                if stamp.isdigit()
                and verify(secret, msg_id=headers.get("webhook-id", ""), timestamp=stamp,
                           signature_header=headers.get("webhook-signature", ""), body=body, now=int(stamp))
            )  # fmt: skip
            payload = json.loads(body)
            meta = payload.get("metadata", {})
            record = {
                "path": f"/{owner}/{pid}", "signedBy": signed_by, "recipient": payload.get("recipient"),
                "sender": payload.get("sender"), "title": payload.get("title"), "body": payload.get("body"),
                "locale": meta.get("locale"), "variantId": meta.get("variantId"),
                "audience": meta.get("audience"),
            }  # fmt: skip
            with self.lock:
                self.posts.append(record)
            return Response(b'{"sent": true}', media_type="application/json")

        return app

    def take(self) -> list[dict[str, Any]]:
        with self.lock:
            taken, self.posts = self.posts, []
        return taken
