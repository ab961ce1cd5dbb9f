// The admin console's entry and router. Routes live in the URL fragment: #/ (campaigns), #/new,
// #/c/<id>, #/approvals, #/access, #/tenant[/<id>], #/layout[/<id>], #/import, #/webhooks, #/suppressions; each draws one
// screen module.
// The sign-in link of `campaign-engine dev` carries `#token=...`, which is read once and then cleared
// (tab.ts). The header names the tenant the token acts in and its role there; a control the role may
// not use is not offered, by the server's own table (access.ts), and a note says which role it needs.
import type { Session } from "./access";
import { ApiError } from "./api";
import { renderApprovals } from "./approvals";
import { renderList } from "./campaign_list";
import { renderCampaign } from "./campaign_page";
import { renderNew } from "./campaign_new";
import type { Kit } from "./kit";
import { renderLayout } from "./layout";
import { renderTenantSettings } from "./settings";
import { button, errorBox, guarded, roleNote, shell } from "./shell";
import { renderSignIn } from "./signin";
import { renderSuppressions } from "./suppressions";
import { announce } from "./status";
import { finishSignIn, returningFromProvider } from "./oidc";
import { actIn, actingTenant, api, can, currentGeneration, currentSession, drawsSignIn, forget, holdToken, navigated, takeFragmentToken, token } from "./tab";
import { renderAccess } from "./tenant";
import { renderTransfer } from "./transfer";
import { renderWebhooks } from "./webhooks";

function kit(session: Session): Kit {
  return { api, session, guarded, errorBox, button, announce, shell, generation: currentGeneration, can, roleNote };
}

function signIn(notice?: string): void {
  renderSignIn(route, notice);
}

function route(): void {
  const mine = navigated(location.hash || "#/");
  if (!token()) {
    signIn();
    return;
  }
  currentSession().then((s) => {
    if (mine !== currentGeneration()) return;
    const home = s.me.tenants?.[0];
    if (!s.me.platform && s.me.role === null && home !== undefined && actingTenant() !== home) {
      actIn(home); // a person signed in by the provider: their (first) tenant, then the picker in the header
      route();
      return;
    }
    if (!s.me.platform && s.me.role === null) {
      forget();
      signIn(`${s.me.profileId} holds no role in tenant '${s.me.tenantId}': ask one of its admins for access.`);
      return;
    }
    draw(s);
  }, (err: unknown) => {
    if (mine !== currentGeneration()) return;
    if (err instanceof ApiError && err.code === "FORBIDDEN" && actingTenant()) {
      actIn(null); // the tenant picked is no longer this person's (a grant revoked): back to their own
      route();
    } else if (err instanceof ApiError && err.code === "UNAUTHORIZED") {
      forget();
      signIn(`${err.message}. Sign in again with an admin token.`);
    } else shell("Campaigns admin", errorBox(err));
  });
}

function draw(s: Session): void {
  const hash = location.hash.replace(/^#/, "");
  if (hash === "/new") renderNew(kit(s));
  else if (hash === "/approvals") void renderApprovals(kit(s));
  else if (hash === "/access") renderAccess(kit(s));
  else if (hash === "/layout" || hash.startsWith("/layout/")) void renderLayout(kit(s), hash.startsWith("/layout/") ? decodeURIComponent(hash.slice(8)) || null : null);
  else if (hash === "/import") renderTransfer(kit(s));
  else if (hash === "/webhooks") void renderWebhooks(kit(s));
  else if (hash === "/suppressions") void renderSuppressions(kit(s));
  else if (hash === "/tenant" || hash.startsWith("/tenant/")) void renderTenantSettings(kit(s), hash.startsWith("/tenant/") ? decodeURIComponent(hash.slice(8)) || null : null);
  else if (hash.startsWith("/c/")) void renderCampaign(kit(s), decodeURIComponent(hash.slice(3)));
  else void renderList(kit(s));
  document.getElementById("main")?.querySelector("h1")?.focus();
}

drawsSignIn(signIn);
window.addEventListener("hashchange", () => {
  if (takeFragmentToken()) return; // a link pasted into this tab changes only the fragment
  route();
});
if (returningFromProvider()) {
  // Back from the provider's sign-in page: the code in the fragment becomes this tab's token.
  finishSignIn().then((value) => {
    actIn(null);
    holdToken(value);
    route();
  }, (err: unknown) => signIn(`Signing in with the identity provider failed: ${err instanceof Error ? err.message : String(err)}`));
} else {
  takeFragmentToken();
  route();
}
