"""The admin console at ``/admin``: an HTML shell plus the assets ``make admin-assets`` builds.

The console is a static client of the public tRPC API (sources in ``admin/``), so this module only
serves files. Built assets carry a content hash in their name (``manifest.json`` maps entry -> file), so
they are immutable for a year while the shell, which names them, is ``no-cache``. The policy allows
scripts, styles and connections from this origin only: no inline code, no eval, nothing third-party.

The email preview needs a second document: a campaign email is styled inline, which the console's
policy forbids (and an ``about:srcdoc`` frame would inherit that policy). ``/admin/email-frame`` is a
static page with its own policy that allows inline style but no inline script; the console posts the
server-rendered HTML into it, inside an iframe sandboxed without same-origin rights.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from fastapi import APIRouter
from fastapi.responses import HTMLResponse, PlainTextResponse, Response
from markupsafe import escape
from starlette.requests import Request

from campaign_engine.config import Settings

__all__ = ["ASSETS_DIR", "OidcClient", "admin_console_router"]

ASSETS_DIR = Path(__file__).resolve().parent / "admin_static"
_HASHED = re.compile(r"^[a-z-]+-[A-Z0-9]{8,}\.(?:js|css)$")
_TYPES = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8"}
_IMMUTABLE = "public, max-age=31536000, immutable"


def _shell_csp(provider: str) -> str:
    """The shell's policy; ``provider`` is the OpenID provider's origin (or ""), which the console calls
    (discovery, the token endpoint) and frames (silent renewal)."""
    return "; ".join(
        (
            "default-src 'none'",
            "script-src 'self'",
            "style-src 'self'",
            f"connect-src 'self' {provider}".strip(),
            "img-src 'self' https: data:",  # campaign media and hero images are https URLs by rule
            f"frame-src 'self' {provider}".strip(),
            "base-uri 'none'",
            "form-action 'none'",
            "frame-ancestors 'none'",
        )
    )


# Where a silent renewal's answer lands, in the console's hidden frame: no script, nothing shown; the
# console reads the fragment from its own origin and removes the frame.
_SILENT_CSP = "default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'self'"
_SILENT = (
    '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>Session renewal</title></head>\n'
)
_FRAME_CSP = "; ".join(
    (
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'unsafe-inline'",  # email HTML is styled inline; no script can run from it
        "img-src https: data:",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'self'",
    )
)


def _headers(csp: str) -> dict[str, str]:
    return {
        "Cache-Control": "no-cache",
        "Content-Security-Policy": csp,
        "Referrer-Policy": "no-referrer",
        "X-Content-Type-Options": "nosniff",
    }


def _manifest(directory: Path) -> dict[str, str] | None:
    try:
        loaded = json.loads((directory / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    wanted = ("app.js", "app.css", "frame.js")
    if not isinstance(loaded, dict) or not all(isinstance(loaded.get(k), str) for k in wanted):
        return None
    return {k: str(loaded[k]) for k in wanted}


def _missing() -> PlainTextResponse:
    return PlainTextResponse(
        "The admin console is not built. Run `make admin-assets` (npm ci + esbuild), then reload.\n",
        status_code=503,
        headers={"Cache-Control": "no-store", "Retry-After": "30"},
    )


@dataclass(frozen=True)
class OidcClient:
    """The console's client at the organisation's OpenID provider (``AUTH_OIDC_*``)."""

    issuer: str
    client_id: str

    @classmethod
    def from_settings(cls, settings: Settings) -> OidcClient | None:
        issuer, client_id = settings.auth_oidc_issuer, settings.auth_oidc_client_id
        return cls(issuer.strip(), client_id.strip()) if issuer and client_id else None

    @property
    def origin(self) -> str:
        parts = urlsplit(self.issuer)
        return f"{parts.scheme}://{parts.netloc}"


def _shell(root: str, manifest: dict[str, str], oidc: OidcClient | None) -> str:
    assets = f"{escape(root)}/admin/assets"
    provider = (
        f' data-oidc-issuer="{escape(oidc.issuer)}" data-oidc-client-id="{escape(oidc.client_id)}"'
        if oidc
        else ""
    )
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        "<title>Campaigns admin</title>\n"
        '<link rel="icon" href="data:,">\n'  # no favicon request (it would be a 404 in the console)
        f'<link rel="stylesheet" href="{assets}/{escape(manifest["app.css"])}">\n'
        f'<script type="module" src="{assets}/{escape(manifest["app.js"])}"></script>\n'
        f'</head>\n<body data-root="{escape(root)}" data-email-frame="{escape(root)}/admin/email-frame"'
        f"{provider}>\n"
        '<noscript>The admin console needs JavaScript.</noscript>\n<div id="app"></div>\n</body>\n</html>\n'
    )


def _frame(root: str, manifest: dict[str, str]) -> str:
    # A classic script: a module script would need CORS from this sandboxed (opaque-origin) frame.
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>Email preview</title>\n'
        f'<script src="{escape(root)}/admin/assets/{escape(manifest["frame.js"])}"></script>\n'
        "</head>\n<body></body>\n</html>\n"
    )


def admin_console_router(assets_dir: Path = ASSETS_DIR, *, oidc: OidcClient | None = None) -> APIRouter:
    """Serves the shell, the email frame and the built assets found in ``assets_dir``; with ``oidc``,
    the console signs people in with that provider (and the silent-renewal landing page)."""
    router = APIRouter(include_in_schema=False)
    shell_csp = _shell_csp(oidc.origin if oidc else "")

    @router.get("/admin")
    @router.get("/admin/")
    def shell(request: Request) -> Response:
        manifest = _manifest(assets_dir)
        if manifest is None:
            return _missing()
        return HTMLResponse(
            _shell(request.scope.get("root_path", ""), manifest, oidc), headers=_headers(shell_csp)
        )

    @router.get("/admin/oidc-silent")
    def oidc_silent() -> Response:
        return HTMLResponse(_SILENT, headers=_headers(_SILENT_CSP))

    @router.get("/admin/email-frame")
    def email_frame(request: Request) -> Response:
        manifest = _manifest(assets_dir)
        if manifest is None:
            return _missing()
        return HTMLResponse(
            _frame(request.scope.get("root_path", ""), manifest), headers=_headers(_FRAME_CSP)
        )

    @router.get("/admin/assets/{name}")
    def asset(name: str) -> Response:
        path = assets_dir / name
        if not _HASHED.match(name) or not path.is_file():
            if _manifest(assets_dir) is None:
                return _missing()
            return PlainTextResponse("Not found\n", status_code=404, headers={"Cache-Control": "no-store"})
        return Response(
            path.read_bytes(),
            media_type=_TYPES[path.suffix],
            headers={"Cache-Control": _IMMUTABLE, "X-Content-Type-Options": "nosniff"},
        )

    return router
