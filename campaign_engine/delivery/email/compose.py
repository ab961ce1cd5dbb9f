"""One announcement email per recipient, rendered once per campaign page.

The templates are rendered once with a slot for each per-recipient value (``SLOTS``: the unsubscribe
link, the web-view link and, where the tenant tracks clicks, the CTA's ``/c`` link), the only parts
that differ between recipients; ``compose_email`` fills them
with the recipient's signed links and sets the RFC 8058 headers. A new per-recipient value is one more
slot and its fill here; the adapters assemble any number. Resolving the CTA origin and branding here,
before any claim, means a misconfigured tenant fails a dispatch without burning anyone's single email
attempt. One module past 350 lines on purpose: headers, bodies, links and footer of one message are
built in one pass, and the slots they share would otherwise cross module lines.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

from markupsafe import escape

from campaign_engine.delivery.email.page_tx import ClaimedPage
from campaign_engine.delivery.email.provider import BodyTemplate, OutgoingEmail
from campaign_engine.delivery.email.render import (
    Branding,
    EmailConfigError,
    RenderedEmail,
    branding_for,
    cta_url_for,
    render_email,
)
from campaign_engine.delivery.email.sender import display_phrase, sender_for
from campaign_engine.domain.ab_variants import Assignment, TestWave
from campaign_engine.domain.campaign import CampaignPublic, EmailCopy
from campaign_engine.domain.tenancy import campaign_ref
from campaign_engine.domain.variants import served_locale
from campaign_engine.unsubscribe.tokens import (
    LinkCampaign,
    UnsubscribeTokens,
    click_url,
    list_unsubscribe_headers,
    unsubscribe_url,
    web_view_url,
)

__all__ = [
    "SLOTS",
    "EmailContent",
    "EmailVariants",
    "click_tracking_for",
    "compose_email",
    "email_content_for",
    "email_variants_for",
]


@dataclass(frozen=True)
class _Copy:
    """``EmailCopy`` in the attribute shape ``render_email`` reads."""

    subject: str
    title: str
    body: str
    ctaLabel: str  # the EmailCopyLike protocol reads wire names
    heroImageUrl: str | None


_UNSUBSCRIBE_SLOT = "https://unsubscribe.invalid/slot-7f3c9a1e"
_WEB_VIEW_SLOT = "https://view.invalid/slot-7f3c9a1e"
_CLICK_SLOT = "https://click.invalid/slot-7f3c9a1e"
SLOTS = (_UNSUBSCRIBE_SLOT, _WEB_VIEW_SLOT, _CLICK_SLOT)
"""Rendered in place of each per-recipient link, then replaced per recipient (URL-safe: escaping is a
no-op), in this order in ``OutgoingEmail.fills``. The click slot is the tracked CTA:
a content whose tenant turned click tracking off renders its CTA's URL itself and uses the first two."""


@dataclass(frozen=True)
class EmailContent:
    """Everything of a message that is the same for every recipient of one campaign.

    The templates are rendered once per page with ``SLOTS``, the only parts that differ between
    recipients; ``compose_email`` fills them. Rendering 500 times per page would cost more than the
    provider call.
    """

    copy: _Copy
    branding: Branding
    cta_url: str
    campaign_id: str
    sender: str | None = None  # the tenant's emailFrom; None = the provider's EMAIL_FROM
    locale: str = "en"
    """The language of ``copy``: the root's ``lang``, and ``dir`` with it."""
    list_name: str = ""
    """The campaign's name, for ``List-ID`` (RFC 2919): mailbox providers group and filter list mail by it."""
    tenant_id: str = "default"
    variant_id: str | None = None
    """The A/B content variant of ``copy`` (``domain/ab_variants.py``), None without variants."""
    campaign_created_at: str = ""
    """The campaign's incarnation, which a click token names (a recreated campaign's clicks are not its)."""
    click_tracking: bool = False
    """The CTA links through ``/c`` with a per-recipient token pinning ``cta_url`` (the tenant's
    ``clickTracking``); False: the CTA is ``cta_url`` itself."""

    @cached_property
    def template(self) -> RenderedEmail:
        return render_email(
            copy=self.copy,
            branding=self.branding,
            cta_url=_CLICK_SLOT if self.click_tracking else self.cta_url,
            unsubscribe_url=_UNSUBSCRIBE_SLOT,
            web_view_url=_WEB_VIEW_SLOT,
            lang=self.locale,
        )

    @cached_property
    def body_template(self) -> BodyTemplate:
        slots = SLOTS if self.click_tracking else SLOTS[:2]
        return BodyTemplate(text=self.template.text, html=self.template.html, slots=slots)

    @cached_property
    def _list_ids(self) -> dict[str, str]:
        return {}

    def list_id(self, domain_name: str) -> str:
        """``list_id`` for this content, computed once per domain (it is the same for every message)."""
        found = self._list_ids.get(domain_name)
        if found is None:
            found = self._list_ids[domain_name] = list_id(self, domain_name)
        return found

    def web_view(self) -> RenderedEmail:
        """What the web view shows: this email without its per-recipient links (a forwarded view link
        must not unsubscribe anyone, and the view needs no link to itself); its CTA links directly (a
        view is no one recipient's click)."""
        return render_email(
            copy=self.copy,
            branding=self.branding,
            cta_url=self.cta_url,
            unsubscribe_url=None,
            lang=self.locale,
        )


def email_content_for(
    campaign: CampaignPublic,
    *,
    origins: Mapping[str, Any],
    tenants: Mapping[str, Any],
    default_tenant: str,
    locale: str | None = None,
    variant_id: str | None = None,
    guardian: bool = False,
) -> EmailContent:
    """Resolve copy (in the language ``locale`` is served, of content variant ``variant_id``), CTA,
    branding and sender; raises ``EmailConfigError`` before anyone is claimed.

    ``origins`` and ``tenants`` are ``TenantDirectory.app_origins()`` / ``.branding()`` in production:
    the tenant records, as the settings they replace were shaped."""
    if campaign.email is None:
        raise EmailConfigError("the campaign has no email content")
    own = _guardian_emails(campaign) if guardian else {}
    if own:  # a routed guardian reads the guardian copy
        served = served_locale(list(own), locale)
        return _content(campaign, own[served], served, None, origins=origins, tenants=tenants,
                        default_tenant=default_tenant)  # fmt: skip
    served, email = campaign.content("email", locale, variant_id)
    return _content(campaign, email, served, variant_id if campaign.variants else None, origins=origins,
                    tenants=tenants, default_tenant=default_tenant)  # fmt: skip


def _content(
    campaign: CampaignPublic,
    email: EmailCopy,
    served: str,
    variant_id: str | None,
    *,
    origins: Mapping[str, Any],
    tenants: Mapping[str, Any],
    default_tenant: str,
) -> EmailContent:
    content = EmailContent(
        copy=_Copy(email.subject, email.title, email.body, email.cta_label, email.hero_image_url),
        branding=branding_for(tenants, campaign.tenant_id, default_tenant),
        cta_url=cta_url_for(
            origins=origins,
            tenant_id=campaign.tenant_id,
            default_tenant=default_tenant,
            campaign_id=campaign.id,
        ),
        campaign_id=campaign.id,
        sender=sender_for(tenants, campaign.tenant_id, default_tenant),
        locale=served,
        list_name=campaign.name,
        tenant_id=campaign.tenant_id or default_tenant,
        variant_id=variant_id,
        campaign_created_at=campaign.created_at,
        click_tracking=click_tracking_for(tenants, campaign.tenant_id, default_tenant),
    )
    content.template  # noqa: B018 - render now: a template error must surface before any claim
    return content


@dataclass(frozen=True)
class EmailVariants:
    """A campaign's email in every language it has one and every A/B content variant, each rendered
    once per page walk, never per recipient; a recipient gets the language their locale is served
    (``domain/variants.py:served_locale``) of their content variant (``domain/ab_variants.py``)."""

    campaign_id: str
    languages: tuple[str, ...]
    assignment: Assignment
    """The campaign's content variants' shares, what ``variant_of`` draws from (empty without variants)."""
    by_language: Mapping[tuple[str, str | None], EmailContent]
    guardian_languages: tuple[str, ...] = ()
    guardian: Mapping[str, EmailContent] = field(default_factory=dict)
    """The guardian copy's email by language (empty: guardians read the campaign's)."""

    def variant_of(self, profile_id: str) -> str | None:
        return self.assignment.variant_of(campaign_id=self.campaign_id, profile_id=profile_id)

    def for_reader(
        self, locale: str | None, variant_id: str | None, *, guardian: bool = False
    ) -> EmailContent:
        """The content one reader gets; a routed ``guardian`` reads the guardian copy where it has one."""
        if guardian and self.guardian:
            return self.guardian[served_locale(self.guardian_languages, locale)]
        return self.by_language[(served_locale(self.languages, locale), variant_id)]

    def assigned(self, page: ClaimedPage) -> ClaimedPage:
        """``page`` with each claimed recipient's content variant (unchanged without variants; none for a
        guardian who reads the guardian copy)."""
        if not self.assignment.bounds or not page.claimed:
            return page
        # Served under the test wave as the claim read it: only test members are claimed
        # while it is undecided, and everyone else only after, with the winner.
        served = Assignment(self.assignment.bounds, TestWave.of(page.ab_test))
        claimed = [
            replace(
                c,
                variant_id=None
                if c.routed_from and self.guardian
                else served.variant_of(campaign_id=self.campaign_id, profile_id=c.profile_id),
            )
            for c in page.claimed
        ]
        return replace(page, claimed=claimed)


def email_variants_for(
    campaign: CampaignPublic, *, origins: Mapping[str, Any], tenants: Mapping[str, Any], default_tenant: str
) -> EmailVariants:
    """Every (language, content variant)'s content, all rendered now: a broken translation fails the
    dispatch before anyone is claimed, not halfway through its pages."""
    if campaign.email is None:
        raise EmailConfigError("the campaign has no email content")
    languages = tuple(campaign.languages("email"))
    variant_ids: list[str | None] = [v.id for v in campaign.variants or ()] or [None]
    by_language = {
        (tag, vid): _content(
            campaign,
            campaign.content("email", tag, vid)[1],
            tag,
            vid,
            origins=origins,
            tenants=tenants,
            default_tenant=default_tenant,
        )
        for tag in languages
        for vid in variant_ids
    }
    assignment = Assignment.of([{"id": v.id, "weight": v.weight} for v in campaign.variants or ()])
    own = _guardian_emails(campaign)
    guardian = {
        tag: _content(
            campaign, email, tag, None, origins=origins, tenants=tenants, default_tenant=default_tenant
        )
        for tag, email in own.items()
    }
    return EmailVariants(campaign.id, languages, assignment, by_language, tuple(own), guardian)


def _guardian_emails(campaign: CampaignPublic) -> dict[str, EmailCopy]:
    """The guardian copy's email by language, the base first (empty: guardians read the campaign's)."""
    copy = campaign.guardian_copy
    if copy is None or copy.email is None:
        return {}
    own = {tag: t.email for tag, t in (copy.translations or {}).items() if t.email is not None}
    return {campaign.locale: copy.email, **own}


def click_tracking_for(tenants: Mapping[str, Any], tenant_id: str | None, default_tenant: str) -> bool:
    """The tenant entry's ``clickTracking`` (its record's; an unknown tenant's is the default tenant's),
    on unless the record turned it off."""
    entry = tenants.get(tenant_id or default_tenant) or tenants.get(default_tenant)
    return not (isinstance(entry, Mapping) and entry.get("clickTracking") is False)


def list_id(content: EmailContent, domain_name: str) -> str:
    """``List-ID: <campaign name> <ref.tenant.domain>`` (RFC 2919): the id is a dot-atom under our domain
    (its port dropped), the name a phrase, quoted when it has specials and RFC 2047-encoded when it is
    not ASCII, so no header can be broken by a campaign's name."""
    host = domain_name.split(":")[0].strip().lower().rstrip(".") or "localhost"
    ident = f"{campaign_ref(content.campaign_id)}.{content.tenant_id}.{host}".lower()
    name = " ".join(content.list_name.split())
    if not name:
        return f"<{ident}>"
    return f"{display_phrase(name)} <{ident}>"


_HTML_SPECIAL = re.compile("[&<>\"']")


def _escaped(link: str) -> str:
    """``link`` for an href: the same string when escaping changes nothing (adapters then skip it)."""
    return str(escape(link)) if _HTML_SPECIAL.search(link) else link


def _unsubscribe_token(
    content: EmailContent, unsubscribe_id: str, tokens: UnsubscribeTokens, *, test: bool
) -> str:
    """The link names the campaign, so the opt-out counts for it (getStats' ``unsubscribed``); a
    self-test's counts for none (no recipient of the campaign received it)."""
    if test or not content.campaign_created_at:
        return tokens.issue(unsubscribe_id, content.tenant_id)
    campaign = LinkCampaign(content.campaign_id, content.campaign_created_at)
    return tokens.issue_for_campaign(unsubscribe_id, content.tenant_id, campaign)


def compose_email(
    content: EmailContent,
    *,
    key: str,
    to: str,
    unsubscribe_id: str,
    tokens: UnsubscribeTokens,
    domain_name: str,
    tag: str = "announcement",
    metadata: Mapping[str, str] | None = None,
    test: bool = False,
) -> OutgoingEmail:
    """One recipient's message: the visible unsubscribe link and RFC 8058 headers carry its unsubscribe
    token for the campaign's tenant (opting out of that tenant's email only), the web-view link its
    view token of this campaign, a tracked CTA its click token (a
    self-test's, ``test``, redirects and records nothing)."""
    link = unsubscribe_url(domain_name, _unsubscribe_token(content, unsubscribe_id, tokens, test=test))
    view = web_view_url(domain_name, tokens.web_view.issue(unsubscribe_id, content.campaign_id))
    body = content.body_template
    text_fills: tuple[str, ...] = (link, view)
    html_fills: tuple[str, ...] = (_escaped(link), _escaped(view))
    if content.click_tracking:
        token = tokens.clicks.issue(
            unsubscribe_id,
            campaign_id=content.campaign_id,
            campaign_created_at=content.campaign_created_at,
            url=content.cta_url,
            test=test,
        )
        cta = click_url(domain_name, token)
        text_fills, html_fills = (*text_fills, cta), (*html_fills, _escaped(cta))
    return OutgoingEmail(
        key=key,
        to=to,
        subject=content.template.subject,
        html=body.html_cut.join(html_fills),
        text=body.text_cut.join(text_fills),
        headers={**list_unsubscribe_headers(link), "List-ID": content.list_id(domain_name)},
        tag=tag,
        metadata=dict(metadata or {"campaignId": content.campaign_id}),
        sender=content.sender,
        body_template=body,
        fills=(text_fills, html_fills),
    )
