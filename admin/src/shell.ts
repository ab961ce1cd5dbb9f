// The frame every signed-in screen is drawn in (header with the tenant and role in view, the main
// region, the status line) and the helpers every screen shares: buttons, guarded API calls, errors in
// the admin's words, and the note shown in place of a control the role may not use.
import { roleName } from "./access";
import { tenantInView } from "./acting";
import { ApiError, type Path } from "./api";
import { h, replace } from "./dom";
import { errorSentence } from "./messages";
import { live } from "./status";
import { can, currentSession, heldSession, mine, signOut } from "./tab";

const app = document.getElementById("app") as HTMLElement;

/** In place of a control the role may not use: what it needs and what the caller holds. */
export function roleNote(what: string, path: Path): HTMLElement {
  const s = heldSession();
  return h("p", { className: "hint role-note", "data-needs": s?.needs(path) ?? "" }, `${what} needs ${roleName(s?.needs(path))}; ${mine()}.`);
}

/** An error in the admin's words (messages.ts), the server's own message beneath in small print. */
export function errorBox(err: unknown): HTMLElement {
  if (!(err instanceof ApiError)) return h("p", { role: "alert", className: "error" }, String(err));
  const needs = heldSession()?.needs(err.procedure as Path);
  const sentence = errorSentence(err, needs ? { needs: roleName(needs), mine: mine() } : null);
  return h("div", { role: "alert", className: "error", "data-code": err.code },
    h("p", { className: "error-words" }, sentence),
    sentence.includes(err.message) ? null : h("p", { className: "api-message" }, `The server said: ${err.message}`));
}

export function button(label: string, onclick: (ev: Event) => void, attrs: Record<string, string | boolean> = {}): HTMLButtonElement {
  return h("button", { type: "button", ...attrs, onclick: onclick as EventListener }, label);
}

/** Runs an API call for a button: disables it meanwhile; sign-in problems return to the sign-in page. */
export async function guarded<T>(control: HTMLButtonElement | null, work: () => Promise<T>, onError: (err: unknown) => void): Promise<T | undefined> {
  if (control) control.disabled = true;
  try {
    return await work();
  } catch (err) {
    // FORBIDDEN names a role this caller lacks: shown where it happened, the session stays. UNAUTHORIZED
    // reaches here only once the admin chose to sign out of an ended session (the Api renews first).
    if (err instanceof ApiError && err.code === "UNAUTHORIZED") {
      signOut(`${err.message}. Sign in again with an admin token.`);
      return undefined;
    }
    // A role taken away while the page was open: read who we are again, so the refusal says it right.
    if (err instanceof ApiError && err.code === "FORBIDDEN") await currentSession().catch(() => undefined);
    onError(err);
    return undefined;
  } finally {
    if (control) control.disabled = false;
  }
}

/** The tenant this token acts in and the role it holds there, always in view. */
function whoami(): HTMLElement | null {
  const me = heldSession()?.me;
  if (!me) return null;
  const role = me.platform ? "platform admin" : (me.role ?? "no role");
  return h("p", { className: "whoami", id: "whoami" },
    h("span", { className: "muted" }, "Tenant "), tenantInView(me),
    h("span", { className: "muted" }, " · Role "), h("strong", { id: "whoami-role", "data-role": me.platform ? "platform" : (me.role ?? "") }, role),
    h("span", { className: "muted" }, " · "), h("span", { id: "whoami-profile" }, me.profileId));
}

export function shell(title: string, ...content: (Node | null)[]): void {
  const signOutButton = button("Sign out", () => signOut("Signed out."));
  const links = [
    h("a", { href: "#/" }, "Campaigns"),
    can("campaigns.create") ? h("a", { href: "#/new" }, "New campaign") : null,
    can("campaigns.listAwaitingApproval") ? h("a", { href: "#/approvals" }, "Approvals") : null,
    can("access.list") || can("apiKeys.list") ? h("a", { href: "#/access" }, "Access and keys") : null,
    can("tenants.get") ? h("a", { href: "#/tenant" }, "Tenant settings") : null,
    can("tenants.previewLayout") ? h("a", { href: "#/layout" }, "Email layout") : null,
    can("profiles.upsert") || can("audit.list") ? h("a", { href: "#/import" }, "Import and export") : null,
    can("webhookEndpoints.list") ? h("a", { href: "#/webhooks" }, "Event webhooks") : null,
    can("suppressions.list") ? h("a", { href: "#/suppressions" }, "Suppressions") : null,
  ];
  replace(app,
    h("header", { className: "top" }, h("a", { href: "#/", className: "brand" }, "Campaigns admin"), h("nav", { "aria-label": "Main" }, ...links), whoami(), signOutButton),
    h("main", { id: "main" }, h("h1", {}, title), ...content),
    live);
  document.title = `${title} · Campaigns admin`;
}

/** Draws the sign-in screen's main region in the frame (no header: nobody is signed in). */
export function bare(main: HTMLElement, title: string): void {
  replace(app, main, live);
  document.title = `${title} · Campaigns admin`;
}
