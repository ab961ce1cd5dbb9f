"""Live segments: a rule tree a campaign's audience is evaluated against at send time.

A rule node is exactly one of: ``all`` / ``any`` (a list of rules), ``not`` (a rule), or one condition
(``tag``, ``connectedTo``, ``locale``, ``timeZone``, ``ageAtLeast``, ``ageBelow``, ``memberOf``,
``engaged``). A condition may carry ``not: true`` to negate it, so "those who did not see it" reads
``{"engaged": {"campaignId": "launch", "event": "shown"}, "not": true}``. Campaign ids are the tenant's
refs, resolved in the campaign's own tenant whenever the segment is evaluated.

The model checks shape and the limits a rule carries alone (``LIMITS``: depth, nodes, conditions);
the limits that need the graph (``memberOf`` expansion, compiled size) are ``segment_check.py``'s. Each
refusal names its limit. They bound what one author can make the graph plan: Neo4j plans every
condition (and every seek of an ``any``) of the statements a segment is read with, and a rule within
the old limits planned for minutes. What needs the graph (referenced campaigns
exist in the tenant, no ``memberOf`` cycle) is ``graph/rules/segment.py:check_segment``, and the rule
needs a positive condition to seek on (``seek_paths``): the cost of a page grows with the segment,
never with all profiles, so a segment that could only be found by reading every profile is refused.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Literal, NoReturn

from pydantic import AfterValidator, ConfigDict, Field, StringConstraints, model_validator

from campaign_engine.domain.camel import CamelModel
from campaign_engine.domain.content import StrictModel
from campaign_engine.domain.errors import BadRequest
from campaign_engine.domain.patterns import ProfileIdStr, Slug
from campaign_engine.domain.schedule import ZONE_NAME_PATTERN

__all__ = [
    "CONDITIONS",
    "ENGAGED_PROPERTY",
    "LIMITS",
    "MAX_COMPILED_BYTES",
    "MAX_CONDITIONS",
    "MAX_DEPTH",
    "MAX_INLINED",
    "MAX_NODES",
    "Engaged",
    "EngagedEvent",
    "Segment",
    "SegmentPreview",
    "SegmentRule",
    "campaign_refs",
    "check_limits",
    "condition_of",
    "conditions_in",
    "minor_only",
    "over_limit",
    "refuse",
    "seekable",
    "walk",
]

MAX_DEPTH = 4  # levels of all / any / not
MAX_NODES = 50  # rules of any kind
MAX_CONDITIONS = 6  # leaf conditions, counting those of the memberOf campaigns' segments inlined
MAX_INLINED = 2  # memberOf campaigns whose own segments join one compiled rule
MAX_COMPILED_BYTES = 2_700  # the compiled rule's text: its predicate and its seeks with what they test

LIMITS: dict[str, int] = {
    "depth": MAX_DEPTH,
    "rules": MAX_NODES,
    "conditions": MAX_CONDITIONS,
    "memberOf expansion": MAX_INLINED,
    "compiled size": MAX_COMPILED_BYTES,
}
"""Every limit by the name a refusal gives it (docs/segments.md)."""

EngagedEvent = Literal["notified", "emailed", "shown", "clicked", "dismissed", "emailClicked"]

# The CAMPAIGN_STATE property each event sets (emailClickedAt: email click tracking, branch `clicks`).
ENGAGED_PROPERTY: dict[str, str] = {
    "notified": "notifiedAt",
    "emailed": "emailedAt",
    "shown": "shownFirstAt",
    "clicked": "clickedFirstAt",
    "dismissed": "dismissedFirstAt",
    "emailClicked": "emailClickedAt",
}

CampaignRefIn = Annotated[str, StringConstraints(pattern=r"^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$")]
LocalePrefix = Annotated[str, StringConstraints(min_length=1, max_length=35, pattern=r"^[A-Za-z0-9-]+$")]
ZonePattern = Annotated[str, StringConstraints(max_length=64, pattern=ZONE_NAME_PATTERN)]
Age = Annotated[int, Field(ge=0, le=130)]

CONDITIONS = (
    "tag",
    "connected_to",
    "locale",
    "time_zone",
    "age_at_least",
    "age_below",
    "member_of",
    "engaged",
)


class Engaged(StrictModel, CamelModel):
    # Only ``campaignId`` on the wire, as before the shared base (which also takes field names).
    model_config = ConfigDict(populate_by_name=False)

    campaign_id: CampaignRefIn
    event: EngagedEvent


class Segment(StrictModel, CamelModel):
    """One rule of a live segment: exactly one of ``all`` / ``any`` (rules), ``not`` (a rule) or one
    condition; ``not: true`` beside a condition negates it. Campaign ids are the tenant's own."""

    all: Annotated[list[Segment], Field(min_length=1, max_length=MAX_NODES)] | None = None
    any: Annotated[list[Segment], Field(min_length=1, max_length=MAX_NODES)] | None = None
    not_: Annotated[Segment | bool | None, Field(alias="not")] = None
    tag: Slug | None = None
    connected_to: ProfileIdStr | None = None
    locale: Annotated[LocalePrefix | None, Field(description="a language tag prefix: en matches en-GB")] = (
        None
    )
    time_zone: ZonePattern | None = None
    age_at_least: Age | None = None
    age_below: Age | None = None
    member_of: CampaignRefIn | None = None
    engaged: Engaged | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> Segment:
        kinds = [name for name in ("all", "any", *CONDITIONS) if getattr(self, name) is not None]
        nested_not = isinstance(self.not_, Segment)
        if nested_not and kinds:
            raise ValueError("'not' holding a rule stands alone; to negate a condition use not: true")
        if not nested_not and len(kinds) != 1:
            raise ValueError(
                "a rule is exactly one of all, any, not, tag, connectedTo, locale, timeZone, ageAtLeast,"
                f" ageBelow, memberOf, engaged (found {len(kinds)})"
            )
        return self

    @property
    def negated(self) -> bool:
        return self.not_ is True

    def wire(self) -> dict[str, object]:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class SegmentPreview(StrictModel):
    model_config = StrictModel.model_config | {"populate_by_name": True}

    matches: int = Field(description="profiles of the caller's tenant the segment matches now")


def condition_of(node: Segment) -> str | None:
    """The condition field a leaf node holds (``None`` for all / any / not)."""
    return next((name for name in CONDITIONS if getattr(node, name) is not None), None)


def walk(node: Segment, path: tuple[str | int, ...] = ()) -> Iterator[tuple[tuple[str | int, ...], Segment]]:
    """Every node with its path below ``segment`` (depth first, the tree's own order)."""
    yield path, node
    for key in ("all", "any"):
        children: list[Segment] | None = getattr(node, key)
        for i, child in enumerate(children or []):
            yield from walk(child, (*path, key, i))
    if isinstance(node.not_, Segment):
        yield from walk(node.not_, (*path, "not"))


def conditions_in(segment: Segment) -> int:
    return sum(1 for _, node in walk(segment) if condition_of(node) is not None)


def over_limit(limit: str, found: int, what: str) -> str:
    """The one wording of a refusal: the limit by name, its value and what the rule has."""
    return f"{what} (found {found}); limit '{limit}' is {LIMITS[limit]}"


def refuse(path: tuple[str | int, ...], message: str) -> NoReturn:
    """BAD_REQUEST naming where in the rule (``segment.all.0.memberOf``) and why."""
    where = ".".join(str(part) for part in ("segment", *path))
    raise BadRequest(f"{where}: {message}", issues=[{"path": ["segment", *path], "message": message}])


def check_limits(segment: Segment) -> None:
    """Depth, size and conditions: a segment compiles into one statement per read, planned by Neo4j."""
    nodes = list(walk(segment))
    if len(nodes) > MAX_NODES:
        raise ValueError(over_limit("rules", len(nodes), f"a segment has at most {MAX_NODES} rules"))
    depth = max(sum(1 for part in path if isinstance(part, str)) for path, _ in nodes) + 1
    if depth > MAX_DEPTH:
        raise ValueError(over_limit("depth", depth, f"a segment nests at most {MAX_DEPTH} levels"))
    conditions = conditions_in(segment)
    if conditions > MAX_CONDITIONS:
        raise ValueError(
            over_limit("conditions", conditions, f"a segment has at most {MAX_CONDITIONS} conditions")
        )


def campaign_refs(segment: Segment) -> Iterator[tuple[tuple[str | int, ...], str]]:
    """Each campaign a segment names (``memberOf``, ``engaged``), with the path naming it."""
    for path, node in walk(segment):
        if node.member_of is not None:
            yield (*path, "memberOf"), node.member_of
        if node.engaged is not None:
            yield (*path, "engaged", "campaignId"), node.engaged.campaign_id


def _checked(segment: Segment) -> Segment:
    check_limits(segment)
    if not seekable(segment):
        raise ValueError(
            "a segment needs a condition outside any 'not' that every match must meet (a tag, connectedTo,"
            " locale, timeZone, an age, memberOf or engaged): it is what evaluation seeks, so it never"
            " reads every profile"
        )
    return segment


SegmentRule = Annotated[Segment, AfterValidator(_checked)]
"""A whole segment as a campaign carries it: the shape, the limits and a condition to seek on."""


def minor_only(
    node: Segment, path: tuple[str | int, ...] = (), *, adult_age: int = 0, negated: bool = False
) -> Iterator[tuple[tuple[str | int, ...], Segment]]:
    """Each ``ageBelow`` condition outside any ``not`` (each only matches known minors when its age is
    at most the adult age; the caller compares), with its path."""
    if isinstance(node.not_, Segment):
        yield from minor_only(node.not_, (*path, "not"), adult_age=adult_age, negated=not negated)
        return
    for key in ("all", "any"):
        for i, child in enumerate(getattr(node, key) or []):
            yield from minor_only(child, (*path, key, i), adult_age=adult_age, negated=negated)
    if node.age_below is not None and not negated and not node.negated and node.age_below <= adult_age:
        yield (*path, "ageBelow"), node


def seekable(node: Segment) -> bool:
    """Whether the rule has a positive condition to seek on for every way it can match (an ``all``
    needs one child that has, an ``any`` all its children): else it could only be found by reading
    every profile of the tenant."""
    if node.negated or isinstance(node.not_, Segment):
        return False
    if node.all is not None:
        return any(seekable(child) for child in node.all)
    if node.any is not None:
        return all(seekable(child) for child in node.any)
    return True
