"""``campaigns.previewEmail`` (admin): a campaign's email as recipients will see it, for the console.

It renders with the worker's own code (``delivery/email/compose.py``: the tenant record's branding and
CTA origin, the same templates), so the preview cannot drift from a real send. Only the unsubscribe link
differs: a preview has no recipient, so it shows the links' shape (unsubscribe, web view) with a token
that opens nothing.
"""

from __future__ import annotations

from pydantic import Field

from campaign_engine.api.access import Access
from campaign_engine.api.context import Context
from campaign_engine.api.routers.common import CampaignRef
from campaign_engine.api.trpc import ProcedureRouter
from campaign_engine.campaigns import definitions
from campaign_engine.delivery.email.compose import email_content_for
from campaign_engine.delivery.email.render import render_email
from campaign_engine.domain.ab_variants import VariantId
from campaign_engine.domain.camel import CamelModel
from campaign_engine.domain.errors import BadRequest
from campaign_engine.domain.variants import LanguageTag
from campaign_engine.graph.tenant_directory import tenants_of
from campaign_engine.unsubscribe.tokens import unsubscribe_url, web_view_url

__all__ = ["ACCESS", "router"]

# Who may call each procedure (api/access.py): one row per procedure, checked before it runs.
ACCESS: dict[str, Access] = {
    "previewEmail": "viewer",
}
router = ProcedureRouter("campaigns", ACCESS)

_PREVIEW_TOKEN = "preview"  # noqa: S105 - not a secret nor a signed token: the page says the link does not work


class EmailPreviewInput(CampaignRef):
    locale: LanguageTag | None = Field(
        default=None, description="preview as a reader of this locale sees it (default: the base content)"
    )
    variant_id: VariantId | None = Field(
        default=None,
        description="preview this A/B content variant (default: the campaign's first variant, if any)",
    )


class EmailPreview(CamelModel):
    subject: str
    html: str
    text: str
    locale: str = Field(description="the language shown: the variant `locale` is served")
    variant_id: str | None = Field(default=None, description="the A/B content variant shown")


@router.query("previewEmail")
def preview_email(ctx: Context, data: EmailPreviewInput) -> EmailPreview:
    """The campaign's email as the worker renders it for a reader of ``locale`` (no email content or
    app origin: BAD_REQUEST)."""
    settings = ctx.services.settings
    campaign = definitions.get_campaign(ctx.services.graph, ctx.campaign(data.campaign_id))
    ids = [v.id for v in campaign.variants or ()]
    if data.variant_id is not None and data.variant_id not in ids:
        raise BadRequest(
            f"variantId: the campaign has no variant '{data.variant_id}' (it has: {', '.join(ids) or 'none'})"
        )
    tenants = tenants_of(ctx.services.graph, settings)
    content = email_content_for(
        campaign,
        origins=tenants.app_origins(),
        tenants=tenants.branding(),
        default_tenant=settings.campaign_default_tenant_id,
        locale=data.locale,
        variant_id=data.variant_id or (ids[0] if ids else None),
    )
    rendered = render_email(
        copy=content.copy,
        branding=content.branding,
        cta_url=content.cta_url,
        unsubscribe_url=unsubscribe_url(settings.domain_name, _PREVIEW_TOKEN),
        web_view_url=web_view_url(settings.domain_name, _PREVIEW_TOKEN),
        lang=content.locale,
    )
    return EmailPreview(
        subject=rendered.subject,
        html=rendered.html,
        text=rendered.text,
        locale=content.locale,
        variant_id=content.variant_id,
    )
