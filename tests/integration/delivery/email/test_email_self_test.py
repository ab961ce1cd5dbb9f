"""sendTestToMe, email part: the admin gets the real email; audience and status are bypassed, nothing else."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from campaign_engine.api.app import create_app
from campaign_engine.campaigns.self_test import send_test_to_me
from campaign_engine.config import Settings
from campaign_engine.delivery.email.self_test import EmailSelfTester
from campaign_engine.domain.errors import BadRequest
from campaign_engine.graph.graph import Graph
from campaign_engine.wiring import build_email_self_tester
from tests.conftest import ADMIN_ID
from tests.support.delivery import NOW, StepClock
from tests.support.email import add_email_members, address_of, email_settings, make_email_campaign
from tests.support.postmark_standin import PostmarkStandin


@pytest.fixture
def postmark() -> Iterator[PostmarkStandin]:
    with PostmarkStandin() as server:
        yield server


@pytest.fixture
def settings(base_settings: Settings, postmark: PostmarkStandin) -> Settings:
    return email_settings(base_settings, postmark.url, postmark.token)


@pytest.fixture
def tester(settings: Settings, graph: Graph) -> Iterator[EmailSelfTester]:
    built = build_email_self_tester(settings, graph, clock=StepClock())
    assert built is not None
    yield built
    built._provider.close()


def test_admin_gets_the_email_without_audience_status_claims_or_stats(
    graph: Graph, tester: EmailSelfTester, postmark: PostmarkStandin
) -> None:
    make_email_campaign(graph, status="draft")
    add_email_members(graph, "c1", [ADMIN_ID], member=False)
    result = send_test_to_me(graph, admin_id=ADMIN_ID, campaign_id="c1", now=NOW, testers={"email": tester})
    assert result.channels == ["email"]
    [message] = postmark.accepted
    assert message["To"] == address_of(ADMIN_ID) and message["Subject"] == "[Test] Big news"
    assert message["Metadata"]["campaignTestId"] == result.test_id
    assert {h["Name"] for h in message["Headers"]} >= {"List-Unsubscribe", "List-Unsubscribe-Post"}
    assert graph.run("MATCH ()-[s:CAMPAIGN_STATE]->() RETURN count(s) AS n")[0]["n"] == 0
    assert graph.run("MATCH (d:Dispatch) RETURN count(d) AS n")[0]["n"] == 0
    # A second test uses a fresh id and sends again (tests are not production claims).
    again = send_test_to_me(graph, admin_id=ADMIN_ID, campaign_id="c1", now=NOW, testers={"email": tester})
    assert again.test_id != result.test_id and len(postmark.accepted) == 2


@pytest.mark.parametrize(
    ("props", "reason"),
    [
        ({"announcementEmailOptOut": True}, "opted out"),
        ({"dob": "2015-01-01"}, "age policy"),
        ({"dob": None}, "age policy"),
        ({"emails": [{"value": "a@example.com", "isPrimary": True, "isVerified": False}]}, "verified"),
    ],
)
def test_email_eligibility_and_preferences_still_apply(
    graph: Graph, tester: EmailSelfTester, postmark: PostmarkStandin, props: dict[str, object], reason: str
) -> None:
    make_email_campaign(graph)
    add_email_members(graph, "c1", [ADMIN_ID], member=False, **props)  # type: ignore[arg-type]
    with pytest.raises(BadRequest, match=reason):
        send_test_to_me(graph, admin_id=ADMIN_ID, campaign_id="c1", now=NOW, testers={"email": tester})
    assert postmark.accepted == [] and postmark.batch_calls == 0


def test_create_app_wires_the_email_tester_when_email_is_configured(settings: Settings, graph: Graph) -> None:
    app = create_app(settings, graph=graph)
    testers = app.state.services.self_test_testers
    assert isinstance(testers.get("email"), EmailSelfTester)
    testers["email"]._provider.close()
    plain = create_app(settings.model_copy(update={"campaign_email_provider": "none"}), graph=graph)
    assert "email" not in plain.state.services.self_test_testers
