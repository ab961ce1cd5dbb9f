"""The isolation matrix's harness: the shared-people world built once, B's answers and deliveries
snapshotted, and the credentials of tenant A every write path runs under.

``World.b_answers`` is everything B reads about the shared people (``previewDispatch`` with its locale
and guardian counts, ``profiles.get``, ``getAudience``, ``explainRecipient``, the recipients export, and
segment previews by each fact either tenant writes);
``World.b_deliveries`` sends B's campaign for real through the local queue and the worker and answers
what reached whom (receiver path and signing secret, address, language, variant). After a send, B's
campaign states are removed, so every read sees a campaign never sent (the preview counts everyone)
and the next send reaches everyone again.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from campaign_engine.api.auth import ADMIN_SCOPE, mint_token
from campaign_engine.config import Settings
from campaign_engine.graph.graph import Graph
from campaign_engine.wiring import Queues, build_worker
from tests.conftest import ADMIN_ID
from tests.support.api import TrpcClient, api_client, ok
from tests.support.delivery import StepClock, ThreadServer, delivery_settings, drain, local_queues
from tests.support.email import email_settings
from tests.support.postmark_standin import PostmarkStandin
from tests.support.shared_people import (
    CAMPAIGN_A,
    CAMPAIGN_B,
    CLUB_A,
    MARKERS,
    PEOPLE,
    SEGMENTS,
    A,
    B,
    Receiver,
    b_rows,
    campaign_definition,
    shared_rows,
)

__all__ = ["Credential", "World", "leaks", "reseed", "shared_world", "tenant_a_credentials"]

Headers = dict[str, str]
_EMAIL_FIELDS = ("To", "From", "Subject", "Headers", "TextBody")
_TOKEN = re.compile(r"token=[A-Za-z0-9%._-]+")  # a profile's link ids are random: a reseed draws new ones


@dataclass(frozen=True)
class Credential:
    """A caller of tenant A: its role there (None for a plain member) and whether it is an API key."""

    name: str
    role: str | None
    headers: Callable[[], Headers]
    api_key: bool = False


@dataclass
class World:
    api: TrpcClient
    graph: Graph
    settings: Settings
    queues: Queues
    receiver: Receiver
    receiver_url: str
    standin: PostmarkStandin
    clock: StepClock
    keys: dict[str, str] = field(default_factory=dict)
    prepare: Callable[[World], None] | None = None
    sent: list[dict[str, Any]] = field(default_factory=list)
    """The emails of the last send as the provider took them (links and all)."""
    """What a module needs of A before B's baseline (run again by ``reseed``)."""

    # --- credentials ---------------------------------------------------------------------------------

    def bearer(
        self, sub: str, *, tenant: str | None, roles: list[str] | None = None, scope: str = ""
    ) -> Headers:
        token = mint_token(self.settings, profile_id=sub, scope=scope, tenant_id=tenant, roles=roles)
        return {"authorization": f"Bearer {token}"}

    def platform(self, tenant: str) -> Headers:
        return self.bearer(ADMIN_ID, tenant=tenant, scope=ADMIN_SCOPE)

    def role(self, tenant: str, role: str) -> Headers:
        return self.bearer(f"{role}-{tenant}", tenant=tenant, roles=[role])

    # --- calls ---------------------------------------------------------------------------------------

    def call(self, path: str, data: Any, headers: Headers) -> Any:
        return self.api.http.post(f"/trpc/{path}", json=data, headers=headers)

    def read(self, path: str, data: Any, headers: Headers) -> Any:
        params = {} if data is None else {"input": json.dumps(data)}
        return ok(self.api.http.get(f"/trpc/{path}", params=params, headers=headers))

    # --- B's side ------------------------------------------------------------------------------------

    def b_answers(self) -> dict[str, Any]:
        """Every answer B's admin gets about the shared people, keyed by what was asked."""
        b = self.role(B, "admin")
        campaign = {"campaignId": CAMPAIGN_B}
        preview = self.read("campaigns.previewDispatch", campaign, b)
        preview.pop("previewToken")  # a hash of the graph's state; the counts it covers are compared
        answers: dict[str, Any] = {
            "previewDispatch": preview,
            "getAudience": self.read("campaigns.getAudience", campaign, b),
        }
        for pid in PEOPLE:
            answers[f"profiles.get {pid}"] = self.read("profiles.get", {"profileId": pid}, b)
            answers[f"explainRecipient {pid}"] = self.read(
                "campaigns.explainRecipient", {**campaign, "profileId": pid}, b
            )
        b_author = self.role(B, "author")
        for name, rule in SEGMENTS.items():
            matched = self.call("campaigns.previewSegment", {"segment": rule}, b_author)
            answers[f"previewSegment {name}"] = ok(matched)
        export = self.api.http.get(f"/exports/campaigns/{CAMPAIGN_B}/recipients.ndjson", headers=b)
        assert export.status_code == 200, export.text
        answers["recipients export"] = sorted(export.text.splitlines())
        return answers

    def b_deliveries(self) -> dict[str, Any]:
        """Sends B's campaign for real and answers what reached whom, in a stable order."""
        return self.send(CAMPAIGN_B, B)

    def send(self, ref: str, tenant: str) -> dict[str, Any]:
        """Dispatches ``ref`` as its tenant's publisher and drains both queues through a real worker."""
        publisher = self.role(tenant, "publisher")
        token = self.read("campaigns.previewDispatch", {"campaignId": ref}, publisher)["previewToken"]
        ok(self.call("campaigns.dispatch", {"campaignId": ref, "expectedPreviewToken": token}, publisher))
        worker = build_worker(
            self.settings, self.graph, queues=self.queues, clock=self.clock, sweep_every=None
        )
        try:
            drain(worker.handle, self.queues)
        finally:
            worker.close()
        if tenant == B:  # B's reads and next send meet a campaign never sent
            self.graph.run("MATCH (:Profile)-[s:CAMPAIGN_STATE]->(:Campaign {tenantId: $b}) DELETE s", b=B)
        emails = self.sent = self.standin.accepted[:]
        self.standin.reset()
        notes = self.receiver.take()
        return {
            "notify": sorted(notes, key=lambda n: json.dumps(n, sort_keys=True)),
            "email": sorted(
                (
                    json.loads(_TOKEN.sub("token=<t>", json.dumps({k: m.get(k) for k in _EMAIL_FIELDS})))
                    for m in emails
                ),
                key=lambda m: str(m["To"]),
            ),
        }


def leaks(answer: Any) -> list[str]:
    """The markers of A's writes that ``answer`` holds."""
    text = json.dumps(answer, sort_keys=True, default=str)
    return [marker for marker in MARKERS if marker in text]


def tenant_a_credentials(world: World, *, subject: str | None = None) -> list[Credential]:
    """Every role of tenant A and an API key of A; ``subject`` signs the people's tokens as that person
    (a teacher in A who is a parent in B), for procedures that act on the caller."""

    def person(role: str | None) -> Callable[[], Headers]:
        sub = subject or f"{role}-{A}"
        return lambda: world.bearer(sub, tenant=A, roles=None if role is None else [role])

    people = [
        Credential(f"{role} of A", role, person(role)) for role in ("viewer", "author", "publisher", "admin")
    ]
    if subject is not None:
        people.insert(0, Credential("member of A", None, person(None)))
    key = Credential(
        "API key of A", "admin", lambda: {"authorization": f"Bearer {world.keys['a']}"}, api_key=True
    )
    return [*people, key]


def reseed(world: World) -> None:
    """The world as it was before any row wrote (after a row that failed)."""
    world.receiver.take()
    world.standin.reset()
    _seed(world)
    if world.prepare is not None:
        world.prepare(world)


def _seed(world: World) -> None:
    world.graph.run("MATCH (n) DETACH DELETE n")
    a, b = world.platform(A), world.platform(B)
    for tenant, name, headers in ((A, "Alpha School", a), (B, "Beta School", b)):
        ok(world.call("tenants.create", {"tenantId": tenant, "name": name,
                                         "appOrigin": f"https://{tenant}.example"}, headers))  # fmt: skip
    ok(world.call("profiles.upsert", {"profiles": shared_rows(world.receiver_url)}, a))
    ok(world.call("profiles.upsert", {"profiles": b_rows(world.receiver_url)}, world.role(B, "admin")))
    b_author = world.role(B, "author")
    news = campaign_definition(CAMPAIGN_B, "Beta news", segment={"tag": "b-news"}, minors="guardians")
    ok(world.call("campaigns.create", news, b_author))
    ok(
        world.call(
            "campaigns.setStatus", {"campaignId": CAMPAIGN_B, "status": "live"}, world.role(B, "publisher")
        )
    )
    a_author, a_publisher = world.role(A, "author"), world.role(A, "publisher")
    ok(world.call("campaigns.create", campaign_definition(CAMPAIGN_A, "Alpha news"), a_author))
    members = {"type": "profileIds", "profileIds": list(PEOPLE)}
    ok(world.call("campaigns.addAudience", {"campaignId": CAMPAIGN_A, "source": members}, a_author))
    club = campaign_definition(CLUB_A, "Alpha club", discoverable=True)
    ok(world.call("campaigns.create", club, a_author))
    for ref in (CAMPAIGN_A, CLUB_A):
        ok(world.call("campaigns.setStatus", {"campaignId": ref, "status": "live"}, a_publisher))
    key = ok(
        world.call(
            "apiKeys.create", {"tenantId": A, "name": "matrix", "role": "admin"}, world.role(A, "admin")
        )
    )
    world.keys["a"] = key["key"]


@contextmanager
def shared_world(
    base: Settings,
    graph: Graph,
    standin: PostmarkStandin,
    folder: Path,
    *,
    prepare: Callable[[World], None] | None = None,
) -> Iterator[World]:
    """The world, seeded; the caller snapshots B before its first write."""
    standin.reset()
    settings = email_settings(delivery_settings(base), standin.url, standin.token)
    settings = settings.model_copy(update={"campaign_admin_profile_ids": ADMIN_ID})
    receiver = Receiver()
    clock = StepClock()
    queues = local_queues(folder / "queue.sqlite3")
    with ExitStack() as stack:
        server = stack.enter_context(ThreadServer(receiver.app()))
        api = stack.enter_context(api_client(settings, graph, clock=clock, dispatch_queue=queues.dispatch))
        world = World(api=api, graph=graph, settings=settings, queues=queues, receiver=receiver,
                      receiver_url=server.url, standin=standin, clock=clock, prepare=prepare)  # fmt: skip
        reseed(world)
        yield world
