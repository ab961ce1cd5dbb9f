// Sessions that outlast their token: the console reads the held JWT's `exp`, warns a few minutes before
// it, and when it passes (or the API answers UNAUTHORIZED) asks for a new token over the page, which
// stays as it is with everything typed in it. The calls waiting meanwhile are sent once a new token for
// the same profile and tenant is held; nothing is stored beyond the tab's session storage.
import type { Api, Me } from "./api";
import { h, replace } from "./dom";
import { localText, timeEl } from "./time";

/** How long before the end the warning shows: time to finish a sentence and fetch a token. */
export const WARN_BEFORE_MS = 5 * 60 * 1000;

interface Claims {
  exp?: number;
  iat?: number;
  sub?: string;
  tenantId?: string;
}

/** The unverified claims of a JWT (an API key or an opaque token has none: no expiry to watch). */
function claims(token: string): Claims | null {
  const part = token.split(".")[1];
  if (!part) return null;
  try {
    const json = atob(part.replace(/-/g, "+").replace(/_/g, "/").padEnd(Math.ceil(part.length / 4) * 4, "="));
    const value: unknown = JSON.parse(json);
    return typeof value === "object" && value !== null ? (value as Claims) : null;
  } catch {
    return null;
  }
}

/** When the token stops being accepted, in epoch milliseconds; null when it does not say. */
export function tokenExpiry(token: string): number | null {
  const exp = claims(token)?.exp;
  return typeof exp === "number" ? exp * 1000 : null;
}

/** When a silent renewal is tried, in milliseconds before the end: with the warning, or halfway
 *  through a token shorter-lived than that. */
function silentLead(token: string): number {
  const c = claims(token);
  const lifetime = typeof c?.exp === "number" && typeof c.iat === "number" ? (c.exp - c.iat) * 1000 : Infinity;
  return Math.min(WARN_BEFORE_MS, lifetime / 2);
}

/** Whether a token names the profile (and, when it carries one, the tenant) this page was opened as. */
export function sameIdentity(token: string, me: Me): boolean {
  const c = claims(token);
  return Boolean(c && c.sub === me.profileId && (c.tenantId === undefined || c.tenantId === me.tenantId));
}

export interface KeeperDeps {
  api: Api;
  /** The token held now, and storing a new one (the tab's session storage). */
  token(): string | null;
  store(token: string): void;
  /** Who the page was opened as; null before sign-in (then a refusal goes to the sign-in screen). */
  me(): Me | null;
  announce(message: string): void;
  /** The dialog's "Sign out": forget the token and show the sign-in screen (which calls end()). */
  signOut(): void;
  /** A new token without asking (the OpenID provider's prompt=none), or null; tried once per token. */
  silent?: () => Promise<string | null>;
}

export class SessionKeeper {
  private readonly banner = h("div", { id: "session-warning", className: "session-warning", role: "status", hidden: true });
  private readonly dialog = h("dialog", { id: "session-renew", "aria-labelledby": "session-renew-h", "aria-describedby": "session-renew-why" });
  private waiting: Promise<boolean> | null = null;
  private settle: ((renewed: boolean) => void) | null = null;
  private shown = "";
  private ended = false;
  private quiet = false; // a silent renewal is under way: no dialog unless it fails
  private silentFor = ""; // the token a silent renewal was last tried for

  constructor(private readonly deps: KeeperDeps) {
    document.body.prepend(this.banner);
    document.body.append(this.dialog);
    // Escape is "Not now" before the end, and nothing after it: closing the dialog natively would
    // leave the waiting calls hanging.
    this.dialog.addEventListener("cancel", (ev) => {
      ev.preventDefault();
      if (!this.ended) this.close();
    });
    window.setInterval(() => this.tick(), 1000);
  }

  /** The held token is known to be past its `exp` (with no session yet, nothing is known). */
  expired(): boolean {
    const value = this.deps.token();
    const end = value ? tokenExpiry(value) : null;
    return this.deps.me() !== null && end !== null && end <= Date.now();
  }

  /** Asks for a new token; resolves true once one is held, false when there is no session to keep or
   *  the admin signed out. Every caller meanwhile shares the one question. `ended`: the server refused
   *  the token (or its exp passed), so the dialog cannot be put off. */
  renew(ended = this.expired()): Promise<boolean> {
    if (this.deps.me() === null) return Promise.resolve(false);
    if (!this.waiting) {
      this.waiting = new Promise<boolean>((resolve) => {
        this.settle = resolve;
      });
      const value = this.deps.token() ?? "";
      if (this.deps.silent && this.silentFor !== value) {
        this.silentFor = value;
        this.silently(this.deps.silent, ended);
      } else this.ask(ended);
    } else if (ended && !this.ended) {
      // An early question became a refusal: the dialog can no longer be put off.
      if (this.quiet) this.ended = true;
      else this.ask(true);
    }
    return this.waiting;
  }

  /** Renewal without a word: a token from the provider is held like a pasted one; without one, the
   *  dialog asks (the token has ended) or the warning stays (it still works). */
  private silently(silent: () => Promise<string | null>, ended: boolean): void {
    this.quiet = true;
    this.ended = ended;
    void silent().then(async (fresh) => {
      const problem = fresh ? await this.take(fresh) : "the provider did not renew silently";
      this.quiet = false;
      if (!problem) return;
      if (this.ended || this.expired()) this.ask(true);
      else this.finish(true);
    });
  }

  /** Whether the question is open (a sign-in link pasted meanwhile answers it). */
  asking(): boolean {
    return this.waiting !== null;
  }

  /** A token offered by a sign-in link for the same identity: checked, then held, page untouched. */
  async offer(token: string): Promise<void> {
    const problem = await this.take(token);
    if (problem) {
      if (!this.asking()) void this.renew(false);
      this.showProblem(problem);
    }
  }

  /** Sign-out from the dialog, or the shell's: the waiting calls fail UNAUTHORIZED and go to sign-in. */
  end(): void {
    this.finish(false);
  }

  private tick(): void {
    const value = this.deps.token();
    const end = value ? tokenExpiry(value) : null;
    if (!value || end === null || this.deps.me() === null) {
      this.warn("");
      return;
    }
    const left = end - Date.now();
    if (left <= 0) {
      this.warn("");
      if (!this.asking()) void this.renew();
      return;
    }
    if (this.deps.silent && this.silentFor !== value) {
      // Renewed without a word where the provider allows it: a warning only once that has failed.
      this.warn("");
      if (!this.asking() && left <= silentLead(value)) void this.renew(false);
      return;
    }
    if (left > WARN_BEFORE_MS || this.asking()) {
      this.warn("");
      return;
    }
    const minutes = Math.floor(left / 60000);
    this.warn(minutes < 1 ? "in less than a minute" : `in ${minutes} minute${minutes === 1 ? "" : "s"}`, end);
  }

  /** The warning above the page (in the flow, covering nothing); "" hides it. Redrawn only when the
   *  words change, so a screen reader hears it once a minute at most. */
  private warn(when: string, end = 0): void {
    const key = when ? `${end} ${when}` : "";
    if (key === this.shown) return;
    this.shown = key;
    this.banner.hidden = !when;
    if (!when) {
      replace(this.banner);
      return;
    }
    const renew = h("button", { type: "button", onclick: (() => void this.renew()) as EventListener }, "Renew now");
    replace(this.banner,
      h("p", {}, h("strong", {}, "Your session ends soon: "), "at ", timeEl(new Date(end), true), `, ${when}. `,
        "Renew it now and keep working; nothing on this page is lost either way."),
      renew);
  }

  private ask(ended: boolean): void {
    this.ended = ended;
    const input = h("textarea", { id: "session-renew-token", rows: 3, name: "renew-token", autocomplete: "off", spellcheck: "false", required: true });
    const submit = h("button", { type: "submit" }, "Continue with this token");
    const out = h("div", { id: "session-renew-problem" });
    const signOut = h("button", { type: "button", className: "secondary", onclick: (() => this.deps.signOut()) as EventListener }, "Sign out");
    const later = ended ? null : h("button", { type: "button", className: "secondary", onclick: (() => this.close()) as EventListener }, "Not now");
    const form = h("form", { method: "dialog", className: "renew-form" },
      h("h2", { id: "session-renew-h" }, ended ? "Your session has ended" : "Renew your session"),
      h("p", { id: "session-renew-why" }, ended
        ? "Nothing is lost: this page and everything you typed stay as they are, and what you were doing carries on once you sign in again."
        : "Paste a new token now and carry on; this page and everything you typed stay as they are."),
      h("div", { className: "field" }, h("label", { for: input.id }, "New admin token"), input,
        h("p", { className: "hint" }, "Paste a token, or open a fresh sign-in link in this tab's address bar (make dev prints one; elsewhere campaign-engine token --ttl 43200 or your identity provider).")),
      out, h("div", { className: "actions" }, submit, later, signOut));
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      submit.disabled = true;
      void this.take(input.value.trim()).then((problem) => {
        submit.disabled = false;
        if (problem) this.showProblem(problem);
      });
    });
    replace(this.dialog, form);
    if (!this.dialog.open) this.dialog.showModal();
    input.focus();
  }

  /** Checks a new token against the server (access.me) and holds it; a problem in words otherwise. */
  private async take(token: string): Promise<string | null> {
    const me = this.deps.me();
    if (!token) return "Paste a token first.";
    if (!me) return "There is no session to renew: sign in instead.";
    const previous = this.deps.token();
    this.deps.store(token);
    try {
      const now = await this.deps.api.call("access.me", undefined, true);
      if (now.profileId !== me.profileId || now.tenantId !== me.tenantId) {
        if (previous) this.deps.store(previous);
        return `That token signs in as ${now.profileId} in tenant ${now.tenantId}; this page is open as ${me.profileId} in ${me.tenantId}. Paste a token for ${me.profileId}, or sign out to switch.`;
      }
    } catch (err) {
      if (previous) this.deps.store(previous);
      const message = err instanceof Error ? err.message : String(err);
      return `That token was not accepted (${message}). Paste another one.`;
    }
    const end = tokenExpiry(token);
    this.deps.announce(end ? `Session renewed until ${localText(new Date(end))}.` : "Session renewed.");
    this.tick();
    this.finish(true);
    return null;
  }

  private showProblem(problem: string): void {
    const out = this.dialog.querySelector("#session-renew-problem");
    if (out) replace(out, h("p", { role: "alert", className: "error" }, problem));
  }

  /** "Not now" before the end: the dialog closes, the token still works, the calls waiting go on. */
  private close(): void {
    this.finish(true);
  }

  private finish(renewed: boolean): void {
    if (this.dialog.open) this.dialog.close();
    replace(this.dialog);
    const settle = this.settle;
    this.ended = false;
    this.waiting = null;
    this.settle = null;
    settle?.(renewed);
  }
}
