// What this browser tab holds: the admin token, who it is (access.me, with the server's access table),
// the renewal keeper, and the navigation counter every screen compares against. The screens sit above
// this module; the one they draw when a session ends is registered here by the router (app.ts).
import type { ProcedurePath } from "../../clients/typescript/src/paths";
import { type Access, accessTable, session, type Session } from "./access";
import { Api, type Path } from "./api";
import { announce } from "./status";
import { oidcConfigured, silentToken } from "./oidc";
import { sameIdentity, SessionKeeper } from "./renewal";

const TOKEN_KEY = "campaign-engine.admin-token";
const TENANT_KEY = "campaign-engine.acting-tenant"; // the tenant picked to act in (a platform admin's, a person's)
const root = document.body.dataset["root"] ?? "";

// The token lives in session storage only: never in a query string, gone when the tab closes.
export function token(): string | null {
  return sessionStorage.getItem(TOKEN_KEY);
}

/** Holds `value` as this tab's token; who it is gets read again on the next navigation. */
export function holdToken(value: string): void {
  sessionStorage.setItem(TOKEN_KEY, value);
  held = null;
}

/** The tenant picked to act in; null: the one the credential names. */
export function actingTenant(): string | null {
  return sessionStorage.getItem(TENANT_KEY);
}

/** Acts in `tenant` from the next call on (null: the credential's own); who we are gets read again. */
export function actIn(tenant: string | null): void {
  if (tenant) sessionStorage.setItem(TENANT_KEY, tenant);
  else sessionStorage.removeItem(TENANT_KEY);
  held = null;
}

export const api = new Api(root, token, actingTenant);
let generation = 0; // bumps on every navigation, so a stale poll or answer knows to stop
// Who the held token is and what it may do: access.me, asked again on every navigation (a role granted
// or revoked shows on the next screen), and the server's access table, read once per page load.
let held: { token: string; session: Session } | null = null;
let table: Promise<Map<string, Access>> | null = null;
let drawnHash = "#/"; // the route on screen, where a renewal link returns the address bar to

/** The screen now drawn; an answer for an older one compares and stops. */
export function currentGeneration(): number {
  return generation;
}

/** A new screen begins: `hash` is the route it draws (null: the sign-in screen, no route). */
export function navigated(hash: string | null): number {
  generation += 1;
  if (hash !== null) drawnHash = hash;
  return generation;
}

export function forget(): void {
  sessionStorage.removeItem(TOKEN_KEY);
  sessionStorage.removeItem(TENANT_KEY);
  keeper.end(); // calls waiting for a renewal fail now, and go to the sign-in screen
  held = null;
}

let signInScreen: (notice?: string) => void = () => undefined;
/** Registers the sign-in screen, drawn when the session ends (the router does, once). */
export function drawsSignIn(draw: (notice?: string) => void): void {
  signInScreen = draw;
}

/** Forgets the token and shows the sign-in screen with `notice`. */
export function signOut(notice?: string): void {
  forget();
  signInScreen(notice);
}

/** The session of the held token: who it is now, and the table (one batched request plus, once, the table). */
export async function currentSession(): Promise<Session> {
  const value = token();
  table ??= accessTable(root).catch((err: unknown) => {
    table = null; // read again next time rather than keep a failure
    throw err;
  });
  const [me, known] = await Promise.all([api.call("access.me", undefined), table]);
  const loaded = session(me, known);
  held = value ? { token: value, session: loaded } : null;
  return loaded;
}

/** The session as last read, or null before sign-in. */
export function heldSession(): Session | null {
  return held?.session ?? null;
}

export function can(path: Path | ProcedurePath): boolean {
  return held?.session.can(path) ?? false;
}

/** What the caller holds, for a note or refusal that names the role needed. */
export function mine(): string {
  const s = held?.session;
  return s ? (s.me.platform ? "you are a platform admin" : s.me.role ? `you are ${/^[aeiou]/.test(s.me.role) ? "an" : "a"} ${s.me.role}` : "you hold no role here") : "";
}

// A link into a tab that already holds a session asks before replacing it: a crafted link must not
// silently sign an admin into someone else's session. A link for the profile and tenant the tab is
// open as is a renewal: checked by the server, held, and the page stays as it is (unsaved edits too).
// Returns true when the link was taken in place (no navigation).
export function takeFragmentToken(): boolean {
  const match = /^#token=([^&]+)/.exec(location.hash);
  if (!match?.[1]) return false;
  const offered = decodeURIComponent(match[1]);
  const me = held?.session.me;
  if (me && sameIdentity(offered, me)) {
    history.replaceState(null, "", `${location.pathname}${drawnHash}`); // back to the screen in view
    void keeper.offer(offered);
    return true;
  }
  const holding = sessionStorage.getItem(TOKEN_KEY);
  const replaceHeld = holding === null || holding === offered ||
    confirm("This link signs this tab in with another token, replacing the current session. Replace it?");
  if (replaceHeld) {
    sessionStorage.setItem(TOKEN_KEY, offered);
    if (held?.token !== offered) held = null;
  }
  history.replaceState(null, "", `${location.pathname}#/`); // the token leaves the address bar and history
  return false;
}

const keeper = new SessionKeeper({
  api,
  token,
  ...(oidcConfigured() ? { silent: silentToken } : {}), // renewal without a word, where a provider signs in
  store: (value) => sessionStorage.setItem(TOKEN_KEY, value),
  me: () => held?.session.me ?? null,
  announce,
  signOut: () => signOut("Signed out."),
});
api.renewing = keeper;
