"""The Cypher twin of the age policy agrees with the Python one (over the shared facts and over a
tenant's view of them), and the birthday boundary holds end to end (previewAudience the day before and
on the 18th birthday)."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from campaign_engine.config import Settings
from campaign_engine.domain.age_policy import adult_dob_cutoff, campaign_allows, email_allows
from campaign_engine.graph.graph import Graph
from campaign_engine.graph.rules.policy import CAMPAIGN_AGE_OK, EMAIL_AGE_OK, TENANT_VIEW, policy_params
from tests.conftest import ADMIN_ID
from tests.support.api import api_client, ok

# (profileId, dob, isManaged, isServiceProfile); dob is written raw so malformed values reach the graph.
PROFILES = [
    ("adult", "2000-06-15", False, False),
    ("birthday-today", "2008-03-01", False, False),
    ("birthday-tomorrow", "2008-03-02", False, False),
    ("leap-born", "2008-02-29", False, False),
    ("minor", "2015-01-01", False, False),
    ("unknown", None, False, False),
    ("managed-unknown", None, True, False),
    ("managed-adult", "1990-01-01", True, False),
    ("managed-minor", "2014-01-01", True, False),
    ("service-adult", "1990-01-01", True, True),
    ("service-unknown", None, True, True),
    ("malformed", "01/02/1990", False, False),
    ("malformed-managed", "1990-1-1", True, False),
]


# A tenant's view over the shared facts (docs/people.md): each profile's facts above are also written as
# tenant `v`'s view of a person whose shared facts say otherwise; a campaign of `v` reads the view's
# value where it holds one and the shared value where it does not (the dob of `unknown` and such).
SHARED = ("2000-06-15", False)


@pytest.mark.parametrize("today", [date(2026, 3, 1), date(2026, 2, 28), date(2028, 2, 29)])
def test_python_and_cypher_policies_agree(graph: Graph, today: date) -> None:
    for pid, dob, managed, service in PROFILES:
        graph.run(
            "CREATE (:Profile {profileId: $pid, dob: $dob, isManaged: $m, isServiceProfile: $s})",
            pid=pid,
            dob=dob,
            m=managed,
            s=service,
        )
        graph.run(
            "CREATE (:Profile {profileId: 'v-' + $pid, dob: $sd, isManaged: $sm, isServiceProfile: $s})"
            "-[:HAS_VIEW]->(:TenantView {tenantId: 'v', profileId: 'v-' + $pid, dob: $dob, isManaged: $m})",
            pid=pid, dob=dob, m=managed, s=service, sd=SHARED[0], sm=SHARED[1],
        )  # fmt: skip
    graph.run(
        "CREATE (:Campaign {id: 'strict', excludeMinors: true}), "
        "(:Campaign {id: 'open', excludeMinors: false}), "
        "(:Campaign {id: 'v-strict', excludeMinors: true, tenantId: 'v'})"
    )
    rows = graph.run(
        "MATCH (p:Profile), (c:Campaign) "
        "WHERE coalesce(c.tenantId = 'v', false) = (p.profileId STARTS WITH 'v-') "
        f"{TENANT_VIEW} RETURN p.profileId AS pid, c.id AS cid, "
        # As a WHERE filter, null means "excluded": compare the filter outcome (EMAIL_AGE_OK is null
        # when dob is absent, which a WHERE treats as false).
        f"coalesce({CAMPAIGN_AGE_OK}, false) AS campaignOk, coalesce({EMAIL_AGE_OK}, false) AS emailOk",
        **policy_params(datetime.combine(today, datetime.min.time(), tzinfo=UTC), 18),
    )
    assert len(rows) == 3 * len(PROFILES)
    cutoff = adult_dob_cutoff(today, 18)
    table = {pid: (dob, managed, service) for pid, dob, managed, service in PROFILES}
    for row in rows:
        dob, managed, service = table[row["pid"].removeprefix("v-")]
        if row["pid"].startswith("v-"):  # the view's fact, else the shared one
            dob = SHARED[0] if dob is None else dob
        expected = campaign_allows(
            dob=dob, is_managed=managed, exclude_minors=row["cid"].endswith("strict"), cutoff=cutoff
        )
        assert row["campaignOk"] is expected, (today, row)
        assert row["emailOk"] is email_allows(
            dob=dob, is_managed=managed, is_service_profile=service, cutoff=cutoff
        ), (today, row)


def test_birthday_boundary_through_preview(base_settings: Settings, graph: Graph) -> None:
    graph.run("CREATE (:Profile {profileId: 'b', dob: '2008-03-01', isManaged: false})")
    graph.run("CREATE (:Campaign {id: 'c1', status: 'draft', excludeMinors: true})")
    source = {"campaignId": "c1", "source": {"type": "profileIds", "profileIds": ["b"]}}
    counts = []
    for moment in (datetime(2026, 2, 28, 23, 59, 59, tzinfo=UTC), datetime(2026, 3, 1, 0, 0, tzinfo=UTC)):
        with api_client(base_settings, graph, clock=lambda moment=moment: moment) as api:
            counts.append(
                ok(api.mutate("campaigns.previewAudience", source, as_=ADMIN_ID, admin=True))["count"]
            )
    assert counts == [0, 1]


def test_adult_age_is_configurable(base_settings: Settings, graph: Graph) -> None:
    graph.run("CREATE (:Profile {profileId: 'x', dob: '2006-01-01', isManaged: false})")
    graph.run("CREATE (:Campaign {id: 'c1', status: 'draft', excludeMinors: true})")
    source = {"campaignId": "c1", "source": {"type": "all"}}
    settings = base_settings.model_copy(update={"campaign_adult_age": 21})
    with api_client(settings, graph, clock=lambda: datetime(2026, 3, 1, tzinfo=UTC)) as api:
        assert ok(api.mutate("campaigns.previewAudience", source, as_=ADMIN_ID, admin=True))["count"] == 0
