"""What a live segment reads of a person, as the campaign's tenant reads it (docs/people.md).

A tenant's view overrides a shared property one by one (``view_fact``) and a list as a whole once the
view named it (``own_list``: tags, connections); nothing another tenant wrote is ever read. The view of
``p`` is read once per rule (``with_view`` binds it as ``segP``, a map, empty without a view), not once
per condition: every condition read its own view expansion before, and Neo4j planned each of them (a
16-condition rule planned in about 1 s of CPU on this machine, 0.15 s with the view bound once). A condition
on a property is sought in two indexes, the shared fact's (``profile_locale`` ...) and the tenant's
views' (``tenant_view_locale`` ...: tenantId, then the fact), by ``fact_seeks``. Every text reads the
tenant from a parameter of the compiled segment, never a ``view`` its statement binds, so one predicate
serves the pages, the counts and ``explainRecipient``'s verdicts alike.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["FactSeek", "bind_view", "fact_seeks", "own_list", "own_list_of_p", "view_fact", "with_view"]

VIEW = "segP"  # p's view in the campaign's tenant, as ``with_view`` binds it


def with_view(body: str, tenant: str) -> str:
    """``body`` (a rule's text over ``p`` and ``segP``) with ``p``'s view of tenant ``$tenant`` bound
    once as ``segP``: a map of its properties, or an empty map, so ``segP.x`` is null without one."""
    view = (
        f"coalesce(head([(p)-[:HAS_VIEW]->(segV:TenantView) WHERE segV.tenantId = ${tenant} | segV {{.*}}]),"
        " {})"
    )
    return f"any({VIEW} IN [{view}] WHERE {body})"


def bind_view(tenant: str) -> str:
    """The clause binding ``p``'s view of tenant ``$tenant`` as ``segP`` (null without one) for the
    rule's text (``CompiledSegment.rule``): an optional expansion the planner solves with the arm's own
    match, where ``with_view``'s list is a subquery of its own (about 0.07 s of planning per arm)."""
    return f"OPTIONAL MATCH (p)-[:HAS_VIEW]->({VIEW}:TenantView) WHERE {VIEW}.tenantId = ${tenant}"


def own_list(person: str, edge: str, tenant: str, kind: str = "tags") -> str:
    """Whether ``edge`` (a HAS_TAG or CONNECTED_WITH of ``person``) is in that person's list as tenant
    ``$tenant`` reads it: the tenant's own edges where its view named the list (``tagsOwn`` /
    ``connectionsOwn``), else the shared ones (no tenantId); never another tenant's."""
    return (
        f"CASE WHEN EXISTS {{ ({person})-[:HAS_VIEW]->(segView:TenantView)"
        f" WHERE segView.tenantId = ${tenant} AND segView.{kind}Own }}"
        f" THEN {edge}.tenantId = ${tenant} ELSE {edge}.tenantId IS NULL END"
    )


def own_list_of_p(edge: str, tenant: str, kind: str = "tags") -> str:
    """``own_list`` for ``p`` inside ``with_view``: its view is already bound."""
    return (
        f"CASE WHEN coalesce({VIEW}.{kind}Own, false)"
        f" THEN {edge}.tenantId = ${tenant} ELSE {edge}.tenantId IS NULL END"
    )


def view_fact(prop: str) -> str:
    """``p``'s ``prop`` as the bound view's tenant reads it (inside ``with_view``): its view's, else the
    shared one."""
    return f"coalesce({VIEW}.{prop}, p.{prop})"


@dataclass(frozen=True)
class FactSeek:
    """One index seek for ``prop op $value``: its MATCH (binding ``p``), its WHERE, and the same seek as
    a bounded count (reading ``$s`` for the value, ``$t`` for the tenant, ``$cap``)."""

    match: str
    where: str
    estimate: str


def fact_seeks(prop: str, op: str, value: str, tenant: str | None) -> list[FactSeek]:
    """The seeks that find every person whose ``prop`` (as ``tenant`` reads it) may satisfy
    ``prop op $value``: the shared fact's, and (for a tenant) its views'. Neither is exact, as a view
    may override the shared fact either way: the rule tests what they find."""
    shared = f"MATCH (p:Profile) USING INDEX p:Profile({prop})"
    seeks = [FactSeek(shared, f"p.{prop} {op} ${value}", _count(shared, f"p.{prop} {op} $s"))]
    if tenant is not None:
        own = (
            f"MATCH (p:Profile)-[:HAS_VIEW]->(segW:TenantView) USING INDEX segW:TenantView(tenantId, {prop})"
        )
        where = f"segW.tenantId = ${tenant} AND segW.{prop} {op} ${value}"
        seeks.append(FactSeek(own, where, _count(own, f"segW.tenantId = $t AND segW.{prop} {op} $s")))
    return seeks


def _count(match: str, where: str) -> str:
    return f"CALL () {{ {match} WHERE {where} RETURN p LIMIT $cap }} RETURN count(p) AS n"
