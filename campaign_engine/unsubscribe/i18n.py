"""The unsubscribe page's words in English, Spanish, French and Arabic, and the choice among them.

The language comes only from ``Accept-Language`` (the page is anonymous: no profile locale may be looked
up before the opt-out, and none is revealed after). English is the fallback for anything unmatched.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["DEFAULT_LANGUAGE", "STRINGS", "PageStrings", "choose_language"]

Direction = Literal["ltr", "rtl"]

DEFAULT_LANGUAGE = "en"
_MAX_HEADER_CHARS = 1024
_MAX_ENTRIES = 32


@dataclass(frozen=True)
class PageStrings:
    lang: str
    dir: Direction
    title: str
    confirm_heading: str
    confirm_text: str
    button: str
    done_heading: str
    done_text: str
    invalid_heading: str
    invalid_text: str
    unavailable_heading: str
    unavailable_text: str
    view_invalid_text: str
    """The web view's answer to any link that is not a valid view link."""
    view_unavailable_text: str
    # A link that names its tenant (``{name}``: the tenant's display name, else ``sender_fallback``).
    confirm_heading_tenant: str
    confirm_text_tenant: str
    scope_tenant: str
    scope_all: str
    done_text_tenant: str
    done_text_all: str
    sender_fallback: str


STRINGS: dict[str, PageStrings] = {
    "en": PageStrings(
        lang="en",
        dir="ltr",
        title="Unsubscribe from announcements",
        confirm_heading="Stop announcement emails?",
        confirm_text="Press the button to stop receiving announcement emails. "
        "You can turn them back on at any time in your preferences.",
        button="Unsubscribe",
        done_heading="You are unsubscribed",
        done_text="You will no longer receive announcement emails. "
        "You can turn them back on in your preferences.",
        invalid_heading="This link does not work",
        invalid_text="The unsubscribe link is incomplete or no longer valid. Open the latest announcement "
        "email and use its link, or change your preferences in the app.",
        unavailable_heading="Please try again in a moment",
        unavailable_text="We could not record your choice just now, and nothing has changed yet. "
        "Please use the link again in a few minutes.",
        view_invalid_text="This link to view an email is incomplete or no longer valid. "
        "Open the email itself to read it.",
        view_unavailable_text="We could not show this email just now. Please try again in a few minutes.",
        confirm_heading_tenant="Stop announcement emails from {name}?",
        confirm_text_tenant="Press the button to stop receiving announcement emails from {name}. "
        "You can turn them back on at any time in your preferences.",
        scope_tenant="Only from {name}",
        scope_all="From every organisation",
        done_text_tenant="You will no longer receive announcement emails from {name}. "
        "You can turn them back on in your preferences.",
        done_text_all="You will no longer receive announcement emails from any organisation. "
        "You can turn them back on in your preferences.",
        sender_fallback="the organisation that sent this email",
    ),
    "es": PageStrings(
        lang="es",
        dir="ltr",
        title="Darse de baja de los anuncios",
        confirm_heading="¿Dejar de recibir correos de anuncios?",
        confirm_text="Pulsa el botón para dejar de recibir correos de anuncios. "
        "Puedes volver a activarlos en cualquier momento en tus preferencias.",
        button="Darse de baja",
        done_heading="Te has dado de baja",
        done_text="Ya no recibirás correos de anuncios. Puedes volver a activarlos en tus preferencias.",
        invalid_heading="Este enlace no funciona",
        invalid_text="El enlace para darse de baja está incompleto o ya no es válido. Abre el correo de "
        "anuncios más reciente y usa su enlace, o cambia tus preferencias en la aplicación.",
        unavailable_heading="Inténtalo de nuevo en un momento",
        unavailable_text="No hemos podido registrar tu elección ahora mismo y todavía no ha cambiado nada. "
        "Vuelve a usar el enlace dentro de unos minutos.",
        view_invalid_text="Este enlace para ver un correo está incompleto o ya no es válido. "
        "Abre el propio correo para leerlo.",
        view_unavailable_text="No hemos podido mostrar este correo ahora mismo. "
        "Vuelve a intentarlo dentro de unos minutos.",
        confirm_heading_tenant="¿Dejar de recibir correos de anuncios de {name}?",
        confirm_text_tenant="Pulsa el botón para dejar de recibir correos de anuncios de {name}. "
        "Puedes volver a activarlos en cualquier momento en tus preferencias.",
        scope_tenant="Solo de {name}",
        scope_all="De todas las organizaciones",
        done_text_tenant="Ya no recibirás correos de anuncios de {name}. "
        "Puedes volver a activarlos en tus preferencias.",
        done_text_all="Ya no recibirás correos de anuncios de ninguna organización. "
        "Puedes volver a activarlos en tus preferencias.",
        sender_fallback="la organización que envió este correo",
    ),
    "fr": PageStrings(
        lang="fr",
        dir="ltr",
        title="Se désabonner des annonces",
        confirm_heading="Ne plus recevoir les e-mails d'annonces\u00a0?",
        confirm_text="Appuyez sur le bouton pour ne plus recevoir les e-mails d'annonces. "
        "Vous pourrez les réactiver à tout moment dans vos préférences.",
        button="Se désabonner",
        done_heading="Votre désabonnement est enregistré",
        done_text="Vous ne recevrez plus d'e-mails d'annonces. "
        "Vous pouvez les réactiver dans vos préférences.",
        invalid_heading="Ce lien ne fonctionne pas",
        invalid_text="Le lien de désabonnement est incomplet ou n'est plus valide. Ouvrez le dernier e-mail "
        "d'annonce et utilisez son lien, ou modifiez vos préférences dans l'application.",
        unavailable_heading="Veuillez réessayer dans un instant",
        unavailable_text="Nous n'avons pas pu enregistrer votre choix pour le moment et rien n'a encore "
        "changé. Utilisez à nouveau le lien dans quelques minutes.",
        view_invalid_text="Ce lien pour afficher un e-mail est incomplet ou n'est plus valide. "
        "Ouvrez l'e-mail lui-même pour le lire.",
        view_unavailable_text="Nous n'avons pas pu afficher cet e-mail pour le moment. "
        "Réessayez dans quelques minutes.",
        confirm_heading_tenant="Ne plus recevoir les e-mails d'annonces de {name}\u00a0?",
        confirm_text_tenant="Appuyez sur le bouton pour ne plus recevoir les e-mails d'annonces de {name}. "
        "Vous pourrez les réactiver à tout moment dans vos préférences.",
        scope_tenant="Seulement de {name}",
        scope_all="De toutes les organisations",
        done_text_tenant="Vous ne recevrez plus d'e-mails d'annonces de {name}. "
        "Vous pouvez les réactiver dans vos préférences.",
        done_text_all="Vous ne recevrez plus d'e-mails d'annonces d'aucune organisation. "
        "Vous pouvez les réactiver dans vos préférences.",
        sender_fallback="l'organisation qui a envoyé cet e-mail",
    ),
    "ar": PageStrings(
        lang="ar",
        dir="rtl",
        title="إلغاء الاشتراك في الإعلانات",
        confirm_heading="هل تريد إيقاف رسائل الإعلانات عبر البريد الإلكتروني؟",
        confirm_text="اضغط على الزر لإيقاف تلقي رسائل الإعلانات عبر البريد الإلكتروني. "
        "يمكنك إعادة تفعيلها في أي وقت من إعداداتك.",
        button="إلغاء الاشتراك",
        done_heading="تم إلغاء اشتراكك",
        done_text="لن تصلك رسائل الإعلانات عبر البريد الإلكتروني بعد الآن. يمكنك إعادة تفعيلها من إعداداتك.",
        invalid_heading="هذا الرابط لا يعمل",
        invalid_text="رابط إلغاء الاشتراك غير مكتمل أو لم يعد صالحًا. افتح أحدث رسالة إعلان واستخدم "
        "الرابط الموجود فيها، أو غيّر إعداداتك في التطبيق.",
        unavailable_heading="يُرجى المحاولة مرة أخرى بعد قليل",
        unavailable_text="تعذّر علينا تسجيل اختيارك الآن، ولم يتغيّر شيء بعد. "
        "يُرجى استخدام الرابط مرة أخرى بعد بضع دقائق.",
        view_invalid_text="رابط عرض هذه الرسالة غير مكتمل أو لم يعد صالحًا. افتح الرسالة نفسها لقراءتها.",
        view_unavailable_text="تعذّر علينا عرض هذه الرسالة الآن. يُرجى المحاولة مرة أخرى بعد بضع دقائق.",
        confirm_heading_tenant="هل تريد إيقاف رسائل الإعلانات عبر البريد الإلكتروني من {name}؟",
        confirm_text_tenant="اضغط على الزر لإيقاف تلقي رسائل الإعلانات عبر البريد الإلكتروني من {name}. "
        "يمكنك إعادة تفعيلها في أي وقت من إعداداتك.",
        scope_tenant="من {name} فقط",
        scope_all="من جميع المؤسسات",
        done_text_tenant="لن تصلك رسائل الإعلانات عبر البريد الإلكتروني من {name} بعد الآن. "
        "يمكنك إعادة تفعيلها من إعداداتك.",
        done_text_all="لن تصلك رسائل الإعلانات عبر البريد الإلكتروني من أي مؤسسة بعد الآن. "
        "يمكنك إعادة تفعيلها من إعداداتك.",
        sender_fallback="المؤسسة التي أرسلت هذه الرسالة",
    ),
}


def _quality(params: list[str]) -> float | None:
    """The q-value of one Accept-Language entry (1 when absent); None when malformed."""
    for param in params:
        name, _, value = param.partition("=")
        if name.strip().lower() == "q":
            try:
                q = float(value.strip())
            except ValueError:
                return None
            return q if 0.0 <= q <= 1.0 else None
    return 1.0


def choose_language(accept_language: str | None) -> str:
    """The supported language the client prefers most (q-values, then header order); else English.

    A region or script (``es-MX``, ``ar-EG``) matches its base language; ``q=0`` means "not this one".
    """
    if not accept_language:
        return DEFAULT_LANGUAGE
    ranked: list[tuple[float, int, str]] = []
    for index, entry in enumerate(accept_language[:_MAX_HEADER_CHARS].split(",")[:_MAX_ENTRIES]):
        tag, *params = entry.strip().split(";")
        q = _quality(params)
        if q is None or q <= 0.0:
            continue
        ranked.append((-q, index, tag.strip().lower()))
    for _, _, tag in sorted(ranked):
        if tag == "*":
            return DEFAULT_LANGUAGE
        base = tag.replace("_", "-").split("-")[0]
        if base in STRINGS:
            return base
    return DEFAULT_LANGUAGE
