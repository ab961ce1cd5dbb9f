"""The email footer's words in the languages the unsubscribe page speaks.

An email's footer links to the unsubscribe page and the web view, so it is written in the recipient's
language exactly when the page it leads to speaks it (``i18n.STRINGS``: en, es, fr, ar); any other
served language gets English, as that page would. The choice is by RFC 4647 lookup over those
languages, the rule variants use (``es-MX`` reads Spanish).
"""

from __future__ import annotations

from dataclasses import dataclass

from campaign_engine.domain.locale import lookup
from campaign_engine.unsubscribe.i18n import DEFAULT_LANGUAGE, STRINGS

__all__ = ["FOOTERS", "FooterStrings", "footer_for"]


@dataclass(frozen=True)
class FooterStrings:
    lang: str
    received: str
    """"You received this announcement from {name}.": ``{name}`` is the tenant's name."""
    unsubscribe: str
    web_view: str
    web_view_note: str
    """Shown in the web view where the email has its unsubscribe link: the view never carries it."""


FOOTERS: dict[str, FooterStrings] = {
    "en": FooterStrings(
        lang="en",
        received="You received this announcement from {name}.",
        unsubscribe="Unsubscribe from announcement emails",
        web_view="View this email in your browser",
        web_view_note="To stop these emails, use the unsubscribe link in the email itself.",
    ),
    "es": FooterStrings(
        lang="es",
        received="Has recibido este anuncio de {name}.",
        unsubscribe="Cancelar la suscripción a los correos de anuncios",
        web_view="Ver este correo en el navegador",
        web_view_note="Para dejar de recibir estos correos, usa el enlace para darse de baja del propio "
        "correo.",
    ),
    "fr": FooterStrings(
        lang="fr",
        received="Vous avez reçu cette annonce de {name}.",
        unsubscribe="Se désabonner des e-mails d'annonces",
        web_view="Afficher cet e-mail dans le navigateur",
        web_view_note="Pour ne plus recevoir ces e-mails, utilisez le lien de désabonnement de l'e-mail.",
    ),
    "ar": FooterStrings(
        lang="ar",
        received="تلقيت هذا الإعلان من {name}.",
        unsubscribe="إلغاء الاشتراك في رسائل الإعلانات عبر البريد الإلكتروني",
        web_view="عرض هذه الرسالة في المتصفح",
        web_view_note="لإيقاف هذه الرسائل، استخدم رابط إلغاء الاشتراك الموجود في الرسالة نفسها.",
    ),
}
if set(FOOTERS) != set(STRINGS):
    raise RuntimeError("the footer must speak exactly the unsubscribe page's languages")


def footer_for(served_locale: str | None) -> FooterStrings:
    """The footer for an email whose content is in ``served_locale``; English when the page lacks it."""
    return FOOTERS[lookup(served_locale, FOOTERS) or DEFAULT_LANGUAGE]
