"""The anonymous unsubscribe pages: autoescaped templates and the headers every answer carries.

The pages load nothing: no scripts, images, fonts or analytics. The one inline ``<style>`` block of
``_layout.html`` is allowed by its SHA-256 hash, computed here at import from the template itself, so an
edit to the style can never silently fall outside the Content-Security-Policy. The block must stay free
of template syntax (checked at import) so the rendered bytes are the hashed bytes.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from markupsafe import Markup, escape

from campaign_engine.unsubscribe.i18n import STRINGS

__all__ = [
    "CONTENT_SECURITY_POLICY",
    "STYLE_HASH",
    "PageKind",
    "content_security_policy",
    "page_headers",
    "render_page",
]

PageKind = Literal["confirm", "done", "invalid", "unavailable", "view_invalid", "view_unavailable"]

_TEMPLATES = Path(__file__).parent / "templates"
_env = Environment(
    loader=FileSystemLoader(_TEMPLATES),
    autoescape=select_autoescape(enabled_extensions=("html",), default_for_string=True),
    undefined=StrictUndefined,
)


def _hash(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii")


def _style_hash() -> str:
    source = (_TEMPLATES / "_layout.html").read_text(encoding="utf-8")
    blocks = re.findall(r"<style>(.*?)</style>", source, flags=re.DOTALL)
    if len(blocks) != 1 or any(marker in blocks[0] for marker in ("{{", "{%", "{#")):
        raise RuntimeError("_layout.html must hold exactly one <style> block without template syntax")
    return _hash(blocks[0])


STYLE_HASH = _style_hash()


def content_security_policy(
    *, style_attributes: Iterable[str] = (), image_origins: Iterable[str] = ()
) -> str:
    """The pages' policy: nothing loads but the hashed style block. The web view of an email (whose
    markup mail clients need inline) widens it by exactly its own ``style`` attribute values (by hash,
    ``'unsafe-hashes'``) and the https origins of its images; every other directive stays."""
    styles = [f"'{STYLE_HASH}'"]
    hashes = sorted({_hash(value) for value in style_attributes})
    if hashes:
        styles += ["'unsafe-hashes'", *(f"'{h}'" for h in hashes)]
    images = sorted(set(image_origins))
    return "; ".join(
        [
            "default-src 'none'",
            "style-src " + " ".join(styles),
            *(["img-src " + " ".join(images)] if images else []),
            "form-action 'self'",
            "frame-ancestors 'none'",
            "base-uri 'none'",
        ]
    )


CONTENT_SECURITY_POLICY = content_security_policy()

_COMMON_HEADERS = {
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Vary": "Accept-Language",
}


def page_headers(language: str, *, policy: str = CONTENT_SECURITY_POLICY) -> dict[str, str]:
    """Headers for every unsubscribe and web-view answer, HTML or the one-click plain-text reply
    (``policy``: the web view's own ``content_security_policy``)."""
    return {**_COMMON_HEADERS, "Content-Security-Policy": policy, "Content-Language": language}


def _named(text: str, name: str) -> Markup:
    """``text`` with ``{name}`` filled, both escaped; the name isolated (``<bdi>``) so a Latin name keeps
    its order on a right-to-left page and an Arabic one on a left-to-right page."""
    return escape(text).format(name=Markup("<bdi>{}</bdi>").format(name))


def render_page(
    kind: PageKind,
    *,
    language: str,
    action: str | None = None,
    tenant_name: str | None = None,
    named: bool = False,
    scope_all: bool = False,
) -> str:
    """``action`` is the form target of the confirm page (same origin, token in the query). ``named``:
    the link names its tenant, whose display name is ``tenant_name`` (unknown: the page says "the
    organisation that sent this email"); the confirm page then offers "only from" it (the default) or
    "from every organisation", and the done page says which (``scope_all``)."""
    if kind == "confirm" and not action:
        raise ValueError("the confirm page needs a form action")
    t = STRINGS[language]
    name = tenant_name or t.sender_fallback
    words = {
        "heading": _named(t.confirm_heading_tenant, name) if named else t.confirm_heading,
        "text": _named(t.confirm_text_tenant, name) if named else t.confirm_text,
        "scope_tenant": _named(t.scope_tenant, name),
        "done": _named(t.done_text_tenant, name),
    }
    if not named or scope_all:
        words["done"] = t.done_text_all if named else t.done_text
    return _env.get_template(f"{kind}.html").render(t=t, action=action, named=named, words=words)
