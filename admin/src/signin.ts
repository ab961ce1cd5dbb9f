// The sign-in screen: the organisation's OpenID provider where the deployment names one (oidc.ts), and
// an admin bearer token (a JWT or an API key) pasted as the fallback; either is held in this tab's
// session storage only. A token that holds no role anywhere is refused here rather than shown empty screens.
import { field, h, replace } from "./dom";
import { beginSignIn, oidcConfigured, providerName } from "./oidc";
import { bare, errorBox, guarded } from "./shell";
import { currentSession, forget, holdToken, navigated } from "./tab";

/** Draws the sign-in screen with `notice` above the form; `route` draws the screen the address names once signed in. */
export function renderSignIn(route: () => void, notice?: string): void {
  navigated(null);
  const tokenInput = h("textarea", { rows: 4, required: true, autocomplete: "off", spellcheck: "false", name: "token" });
  const { row } = field("Admin bearer token", tokenInput, "A JWT or API key with a role in a tenant (or a platform admin's). Kept in this tab's session storage only.");
  const out = h("div", {});
  const submit = h("button", { type: "submit" }, "Sign in");
  const form = h("form", { className: "signin", "aria-label": "Sign in" }, row, submit, out);
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    holdToken(tokenInput.value.trim());
    void guarded(submit, () => currentSession(), (err) => replace(out, errorBox(err))).then((s) => {
      if (!s) return;
      if (!s.me.platform && s.me.role === null && !s.me.tenants?.length) {
        // Signed in, but this token may read nothing here: say so rather than show empty screens.
        forget();
        replace(out, h("p", { role: "alert", className: "error" }, `${s.me.profileId} holds no role in tenant '${s.me.tenantId}': ask one of its admins for access.`));
        return;
      }
      location.hash = "#/";
      route();
    });
  });
  const provider = oidcConfigured() ? providerSignIn() : null;
  const fallback = provider ? h("details", { className: "signin-fallback" }, h("summary", {}, "Sign in with a token instead"), form) : form;
  bare(h("main", { id: "main", className: "narrow" }, h("h1", {}, "Sign in"), notice ? h("p", { role: "alert", className: "notice" }, notice) : null, provider, fallback), "Sign in");
  (provider?.querySelector("button") ?? tokenInput).focus();
}

/** The provider's button: leaves for its sign-in page, which returns here signed in (app.ts). */
function providerSignIn(): HTMLElement {
  const out = h("div", {});
  const go = h("button", { type: "button", id: "signin-oidc" }, `Sign in with ${providerName()}`);
  go.addEventListener("click", () => {
    go.disabled = true;
    beginSignIn().catch((err: unknown) => {
      go.disabled = false;
      replace(out, h("p", { role: "alert", className: "error" }, `The identity provider could not be reached: ${err instanceof Error ? err.message : String(err)}`));
    });
  });
  return h("section", { className: "signin-provider", "aria-label": "Sign in with your organisation" },
    h("p", {}, "Sign in with your organisation's account."), go, out);
}
