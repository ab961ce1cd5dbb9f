// The admin console: sign-in, the campaign list, and one page per campaign (compose, audience, test,
// review and send, live progress, stats), plus approvals waiting, a tenant's roles and API keys, and its
// settings record (settings.ts).
// Routes live in the URL fragment (#/, #/new, #/c/<id>, #/approvals, #/access, #/tenant[/<id>], #/layout, #/import); the sign-in link of
// `campaign-engine dev` carries `#token=...`, which is read once and then cleared. The header names the
// tenant the token acts in and its role there; a control the role may not use is not offered, by the
// server's own table (access.ts), and a note says which role it needs.
import type { ProcedurePath } from "../../clients/typescript/src/paths";
import { type Access, accessTable, roleName, session, type Session } from "./access";
import { Api, ApiError, type Campaign, type Definition, type Dispatch, type DispatchPreview, type Path, type Source, type Stats, type Status, type VariantStats } from "./api";
import { renderApprovals } from "./approvals";
import { composer, type Composer } from "./composer";
import { field, h, replace, svg } from "./dom";
import { timeEl } from "./time";
import { explainSection } from "./explain";
import type { Kit } from "./kit";
import { errorSentence } from "./messages";
import { inFlight, progressView } from "./progress";
import { sameIdentity, SessionKeeper } from "./renewal";
import { renderLayout } from "./layout";
import { renderTenantSettings } from "./settings";
import { renderAccess } from "./tenant";
import { recipientsDownload, renderTransfer } from "./transfer";

const TOKEN_KEY = "campaign-engine.admin-token";
const root = document.body.dataset["root"] ?? "";
const emailFrameUrl = document.body.dataset["emailFrame"] ?? `${root}/admin/email-frame`;
const app = document.getElementById("app") as HTMLElement;

// The token lives in session storage only: never in a query string, gone when the tab closes.
function token(): string | null {
  return sessionStorage.getItem(TOKEN_KEY);
}
const api = new Api(root, token);
let generation = 0; // bumps on every navigation, so a stale poll or answer knows to stop
// Who the held token is and what it may do: access.me, asked again on every navigation (a role granted
// or revoked shows on the next screen), and the server's access table, read once per page load.
let held: { token: string; session: Session } | null = null;
let table: Promise<Map<string, Access>> | null = null;

function forget(): void {
  sessionStorage.removeItem(TOKEN_KEY);
  keeper.end(); // calls waiting for a renewal fail now, and go to the sign-in screen
  held = null;
}

/** The session of the held token: who it is now, and the table (one batched request plus, once, the table). */
async function currentSession(): Promise<Session> {
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

function can(path: Path | ProcedurePath): boolean {
  return held?.session.can(path) ?? false;
}

/** What the caller holds, for a note or refusal that names the role needed. */
function mine(): string {
  const s = held?.session;
  return s ? (s.me.platform ? "you are a platform admin" : s.me.role ? `you are ${/^[aeiou]/.test(s.me.role) ? "an" : "a"} ${s.me.role}` : "you hold no role here") : "";
}

/** In place of a control the role may not use: what it needs and what the caller holds. */
function roleNote(what: string, path: Path): HTMLElement {
  const s = held?.session;
  return h("p", { className: "hint role-note", "data-needs": s?.needs(path) ?? "" }, `${what} needs ${roleName(s?.needs(path))}; ${mine()}.`);
}

// A link into a tab that already holds a session asks before replacing it: a crafted link must not
// silently sign an admin into someone else's session (issue 21). A link for the profile and tenant the
// tab is open as is a renewal (issue 28): checked by the server, held, and the page stays as it is.
// Returns true when the link was taken in place (no navigation).
function takeFragmentToken(): boolean {
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

// Announced to screen readers, drawn nowhere: a fixed status line covered the foot of every screen.
const live = h("p", { id: "status", role: "status", "aria-live": "polite", className: "visually-hidden" });
function announce(message: string): void {
  live.textContent = message;
}

const keeper = new SessionKeeper({
  api,
  token,
  store: (value) => sessionStorage.setItem(TOKEN_KEY, value),
  me: () => held?.session.me ?? null,
  announce,
  signOut: () => {
    forget();
    renderSignIn("Signed out.");
  },
});
api.renewing = keeper;
let drawnHash = "#/"; // the route on screen, where a renewal link returns the address bar to

/** An error in the admin's words (messages.ts), the server's own message beneath in small print. */
function errorBox(err: unknown): HTMLElement {
  if (!(err instanceof ApiError)) return h("p", { role: "alert", className: "error" }, String(err));
  const needs = held?.session.needs(err.procedure as Path);
  const sentence = errorSentence(err, needs ? { needs: roleName(needs), mine: mine() } : null);
  return h("div", { role: "alert", className: "error", "data-code": err.code },
    h("p", { className: "error-words" }, sentence),
    sentence.includes(err.message) ? null : h("p", { className: "api-message" }, `The server said: ${err.message}`));
}

function button(label: string, onclick: (ev: Event) => void, attrs: Record<string, string | boolean> = {}): HTMLButtonElement {
  return h("button", { type: "button", ...attrs, onclick: onclick as EventListener }, label);
}

/** Runs an API call for a button: disables it meanwhile; sign-in problems return to the sign-in page. */
async function guarded<T>(control: HTMLButtonElement | null, work: () => Promise<T>, onError: (err: unknown) => void): Promise<T | undefined> {
  if (control) control.disabled = true;
  try {
    return await work();
  } catch (err) {
    // FORBIDDEN names a role this caller lacks: shown where it happened, the session stays. UNAUTHORIZED
    // reaches here only once the admin chose to sign out of an ended session (the Api renews first).
    if (err instanceof ApiError && err.code === "UNAUTHORIZED") {
      forget();
      renderSignIn(`${err.message}. Sign in again with an admin token.`);
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
  const me = held?.session.me;
  if (!me) return null;
  const role = me.platform ? "platform admin" : (me.role ?? "no role");
  return h("p", { className: "whoami", id: "whoami" },
    h("span", { className: "muted" }, "Tenant "), h("strong", { id: "whoami-tenant" }, me.tenantId),
    h("span", { className: "muted" }, " · Role "), h("strong", { id: "whoami-role", "data-role": me.platform ? "platform" : (me.role ?? "") }, role),
    h("span", { className: "muted" }, " · "), h("span", { id: "whoami-profile" }, me.profileId));
}

function shell(title: string, ...content: (Node | null)[]): void {
  const signOut = button("Sign out", () => {
    forget();
    renderSignIn("Signed out.");
  });
  const links = [
    h("a", { href: "#/" }, "Campaigns"),
    can("campaigns.create") ? h("a", { href: "#/new" }, "New campaign") : null,
    can("campaigns.listAwaitingApproval") ? h("a", { href: "#/approvals" }, "Approvals") : null,
    can("access.list") || can("apiKeys.list") ? h("a", { href: "#/access" }, "Access and keys") : null,
    can("tenants.get") ? h("a", { href: "#/tenant" }, "Tenant settings") : null,
    can("tenants.previewLayout") ? h("a", { href: "#/layout" }, "Email layout") : null,
    can("profiles.upsert") || can("audit.list") ? h("a", { href: "#/import" }, "Import and export") : null,
  ];
  replace(app,
    h("header", { className: "top" }, h("a", { href: "#/", className: "brand" }, "Campaigns admin"), h("nav", { "aria-label": "Main" }, ...links), whoami(), signOut),
    h("main", { id: "main" }, h("h1", {}, title), ...content),
    live);
  document.title = `${title} · Campaigns admin`;
}

// --- sign-in -------------------------------------------------------------------------------------

function renderSignIn(notice?: string): void {
  generation += 1;
  const tokenInput = h("textarea", { rows: 4, required: true, autocomplete: "off", spellcheck: "false", name: "token" });
  const { row } = field("Admin bearer token", tokenInput, "A JWT or API key with a role in a tenant (or a platform admin's). Kept in this tab's session storage only.");
  const out = h("div", {});
  const submit = h("button", { type: "submit" }, "Sign in");
  const form = h("form", { className: "signin", "aria-label": "Sign in" }, row, submit, out);
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, tokenInput.value.trim());
    held = null;
    void guarded(submit, () => currentSession(), (err) => replace(out, errorBox(err))).then((s) => {
      if (!s) return;
      if (!s.me.platform && s.me.role === null) {
        // Signed in, but this token may read nothing here: say so rather than show empty screens.
        forget();
        replace(out, h("p", { role: "alert", className: "error" }, `${s.me.profileId} holds no role in tenant '${s.me.tenantId}': ask one of its admins for access.`));
        return;
      }
      location.hash = "#/";
      route();
    });
  });
  replace(app, h("main", { id: "main", className: "narrow" }, h("h1", {}, "Sign in"), notice ? h("p", { role: "alert", className: "notice" }, notice) : null, form), live);
  document.title = "Sign in · Campaigns admin";
  tokenInput.focus();
}

// --- campaign list -------------------------------------------------------------------------------

function windowText(c: { startsAt?: string | null; endsAt?: string | null }): Node {
  if (!c.startsAt && !c.endsAt) return document.createTextNode("Always");
  return h("span", {}, c.startsAt ? timeEl(c.startsAt) : "now", " → ", c.endsAt ? timeEl(c.endsAt) : "open");
}

async function renderList(): Promise<void> {
  const mine = generation;
  const filter = h("select", { name: "status" }, ...["", "draft", "live", "paused", "archived"].map((s) => h("option", { value: s }, s || "All")));
  filter.value = new URLSearchParams(location.hash.split("?")[1] ?? "").get("status") ?? "";
  filter.addEventListener("change", () => {
    location.hash = filter.value ? `#/?status=${filter.value}` : "#/";
  });
  const { row } = field("Filter by status", filter);
  const body = h("tbody", {});
  const more = h("div", {});
  const table = h("div", { className: "table-wrap" }, h("table", { id: "campaigns" },
    h("caption", {}, "Campaigns"),
    h("thead", {}, h("tr", {}, ...["Campaign", "Status", "Channels", "Window", "Audience", "Notified", "Emailed", "Shown", "Clicked"].map((t) => h("th", { scope: "col" }, t)))), body));
  shell("Campaigns", h("div", { className: "toolbar" }, row, can("campaigns.create") ? h("a", { href: "#/new", className: "button" }, "New campaign") : null), table, more);

  async function load(cursor?: string): Promise<void> {
    const status = (filter.value || undefined) as Status | undefined;
    const page = await guarded(null, () => api.call("campaigns.list", { limit: 25, ...(status ? { status } : {}), ...(cursor ? { cursor } : {}) }), (err) => replace(more, errorBox(err)));
    if (!page || mine !== generation) return;
    // One batched request for every row's headline stats (httpBatchLink joins same-tick calls).
    const stats = await Promise.all(page.records.map((c) => api.call("campaigns.getStats", { campaignId: c.id }).catch(() => null)));
    if (mine !== generation) return;
    page.records.forEach((c, i) => {
      const s = stats[i] ?? null;
      const n = (k: keyof Stats): string => (s ? String(s[k]) : "–");
      body.appendChild(h("tr", {},
        h("th", { scope: "row" }, h("a", { href: `#/c/${encodeURIComponent(c.id)}` }, c.name), h("span", { className: "muted id" }, c.id)),
        h("td", {}, h("span", { className: `badge ${c.status}` }, c.status)),
        h("td", {}, c.channels.join(", ")), h("td", {}, windowText(c)),
        h("td", {}, n("audience")), h("td", {}, n("notified")), h("td", {}, n("emailed")), h("td", {}, n("shown")), h("td", {}, n("clicked"))));
    });
    if (!body.childElementCount) body.appendChild(h("tr", {}, h("td", { colspan: 9 }, "No campaigns yet.")));
    replace(more, page.hasMore && page.cursor ? button("Load more", () => void load(page.cursor ?? undefined)) : null);
  }
  await load();
}

// --- new campaign --------------------------------------------------------------------------------

function renderNew(): void {
  if (!can("campaigns.create")) {
    shell("New campaign", roleNote("Creating a campaign", "campaigns.create"));
    return;
  }
  const form = composer(null);
  const out = h("div", {});
  const save = button("Create campaign", () => {
    form.clearIssues();
    replace(out);
    void guarded(save, () => api.call("campaigns.create", form.read()), (err) => showSaveError(err, form, out, null)).then((created) => {
      if (created) {
        announce(`Created ${created.id}.`);
        location.hash = `#/c/${encodeURIComponent(created.id)}`;
      }
    });
  });
  shell("New campaign", out, form.element, h("div", { className: "actions" }, save));
}

/** A refused save, beside the form: field errors on their fields, an edit conflict with what changed. */
function showSaveError(err: unknown, form: Composer, out: HTMLElement, conflict: Conflict | null): void {
  if (err instanceof ApiError && err.code === "CONFLICT" && conflict) {
    void showConflict(out, conflict);
    return;
  }
  if (err instanceof ApiError && err.issues.length) {
    const rest = form.showIssues(err.issues);
    replace(out, h("div", { role: "alert", className: "error" }, h("p", {}, "Not saved: fix the fields marked below."), rest.length ? h("ul", {}, ...rest.map((m) => h("li", {}, m))) : null));
    return;
  }
  replace(out, errorBox(err));
}

/** The edit the page started from, and what the two ways out of a stale edit do. */
interface Conflict {
  base: Campaign;
  /** Drop my edits and show their version. */
  reload(latest: Campaign): void;
  /** Save my edits over theirs: the latest version becomes the one my save expects. */
  keepMine(latest: Campaign): void;
}

const DEFINITION_FIELDS: [keyof Definition, string][] = [
  ["name", "Name"], ["description", "Description"], ["channels", "Channels"], ["message", "In-app message"],
  ["notification", "Notification"], ["email", "Email"], ["startsAt", "Start"], ["endsAt", "End"],
  ["excludeMinors", "Exclude minors"], ["discoverable", "Discoverable"],
];

/** Optimistic concurrency: someone saved after this page loaded. Says what they changed (the latest
 *  version against the one this edit started from), then reload theirs or keep mine. */
async function showConflict(out: HTMLElement, conflict: Conflict): Promise<void> {
  const latest = await api.call("campaigns.get", { campaignId: conflict.base.id }).catch(() => null);
  const changed = latest ? DEFINITION_FIELDS.filter(([k]) => JSON.stringify(latest[k] ?? null) !== JSON.stringify(conflict.base[k] ?? null)) : [];
  const shown = (v: unknown): string => (typeof v === "string" ? `“${v}”` : Array.isArray(v) ? v.join(", ") : typeof v === "boolean" ? (v ? "yes" : "no") : "edited");
  replace(out, h("div", { role: "alert", className: "conflict" },
    h("p", {}, h("strong", {}, "This campaign changed since you opened it. "), "Someone (or another tab) saved a newer version",
      latest ? h("span", {}, ` (revision ${latest.revision}, at `, timeEl(latest.updatedAt), ")") : "", ", so your changes were not saved: nothing of theirs was overwritten."),
    latest && changed.length
      ? h("ul", { id: "conflict-changes" }, ...changed.map(([k, what]) => h("li", { "data-field": k }, `${what}: now ${latest[k] === undefined ? "empty" : shown(latest[k])}`)))
      : h("p", { id: "conflict-changes" }, latest ? "Their save changed nothing you can see here (only its revision)." : "The latest version could not be read; reload to see it."),
    h("p", {}, "Reload their version (your edits here are dropped), or keep yours and save them over theirs."),
    button("Reload their version", () => latest ? conflict.reload(latest) : location.reload()),
    latest ? button("Keep mine and save over theirs", () => conflict.keepMine(latest)) : null));
}

// --- one campaign --------------------------------------------------------------------------------

async function renderCampaign(id: string): Promise<void> {
  const mine = generation;
  const campaign = await guarded(null, () => api.call("campaigns.get", { campaignId: id }), (err) => shell("Campaign", errorBox(err)));
  if (!campaign || mine !== generation) return;
  let current: Campaign = campaign;
  let planned: DispatchPreview | null = null;

  const statusBadge = h("span", { className: `badge ${current.status}`, id: "campaign-status" }, current.status);
  const lifecycleOut = h("div", {});
  const lifecycle = h("div", { className: "actions", role: "group", "aria-label": "Lifecycle" });
  function renderLifecycle(): void {
    statusBadge.className = `badge ${current.status}`;
    statusBadge.textContent = current.status;
    const to = (label: string, status: Status): HTMLButtonElement => {
      const b: HTMLButtonElement = button(label, () => void guarded(b, () => api.call("campaigns.setStatus", { campaignId: id, status }), (err) => replace(lifecycleOut, errorBox(err))).then((c) => {
        if (c) {
          current = c;
          replace(lifecycleOut);
          renderLifecycle();
          announce(`Campaign is ${c.status}.`);
        }
      }));
      return b;
    };
    const s = current.status;
    if (!can("campaigns.setStatus")) {
      replace(lifecycle, roleNote("Going live, pausing and archiving", "campaigns.setStatus"));
      return;
    }
    replace(lifecycle,
      s === "draft" ? to("Go live", "live") : null,
      s === "live" ? to("Pause", "paused") : null,
      s === "paused" ? to("Resume", "live") : null,
      s !== "archived" ? to("Archive", "archived") : null);
  }
  renderLifecycle();

  // Definition
  const defSection = h("section", { id: "definition", "aria-labelledby": "definition-h" });
  let fillVariants = (): void => {}; // the email preview's variant picker, refilled after a save
  function renderDefinition(): void {
    const form = composer(current);
    const out = h("div", {});
    const conflict: Conflict = {
      base: current,
      reload: (latest) => {
        current = latest;
        renderLifecycle();
        renderDefinition();
        announce(`Reloaded revision ${latest.revision}.`);
      },
      keepMine: (latest) => {
        current = latest; // my save now expects their version, and replaces it
        conflict.base = latest;
        renderLifecycle();
        saveMine();
      },
    };
    const save: HTMLButtonElement = button("Save changes", () => saveMine());
    function saveMine(): void {
      form.clearIssues();
      replace(out);
      const { id: _id, ...def } = form.read();
      const patch: Record<string, unknown> = { ...def, campaignId: id, expectedUpdatedAt: current.updatedAt };
      // Clearable fields are cleared with null; the message can only be replaced.
      for (const key of ["description", "notification", "email", "startsAt", "endsAt"]) if (!(key in def)) patch[key] = null;
      void guarded(save, () => api.call("campaigns.update", { ...patch, campaignId: id, expectedUpdatedAt: current.updatedAt }), (err) =>
        showSaveError(err, form, out, conflict),
      ).then((c) => {
        if (c) {
          current = c;
          conflict.base = c;
          fillVariants();
          replace(out, h("p", { className: "ok" }, `Saved (revision ${c.revision}).`));
          announce("Saved.");
        }
      });
    }
    const frameOut = h("div", { className: "email-preview" });
    const previewBtn: HTMLButtonElement = button("Render email preview", () => void showEmail());
    // Each language of the campaign previews as a reader of that language gets it (issue 24).
    const previewLang = h("select", { name: "preview-locale", id: "preview-locale" });
    const fillLanguages = (): void => {
      const chosen = previewLang.value;
      replace(previewLang, ...form.languages().map((tag, i) => h("option", { value: i === 0 ? "" : tag }, i === 0 ? `${tag} (base)` : tag)));
      if ([...previewLang.options].some((o) => o.value === chosen)) previewLang.value = chosen;
    };
    fillLanguages();
    previewLang.addEventListener("focus", fillLanguages);
    const langRow = field("Preview language", previewLang, "Save first: the preview renders the saved translations.").row;
    // Each A/B variant of the saved campaign previews as its recipients get it (issue 26).
    const previewVariant = h("select", { name: "preview-variant", id: "preview-variant" });
    const variantRow = field("Preview variant", previewVariant, "The saved variants.").row;
    fillVariants = (): void => {
      const chosen = previewVariant.value;
      replace(previewVariant, ...(current.variants ?? []).map((v) => h("option", { value: v.id }, `Variant ${v.id}`)));
      if ([...previewVariant.options].some((o) => o.value === chosen)) previewVariant.value = chosen;
      variantRow.hidden = !current.variants?.length;
    };
    fillVariants();
    async function showEmail(): Promise<void> {
      const locale = previewLang.value;
      const variantId = current.variants?.length ? previewVariant.value : "";
      const preview = await guarded(previewBtn, () => api.call("campaigns.previewEmail", { campaignId: id, ...(locale ? { locale } : {}), ...(variantId ? { variantId } : {}) }), (err) => replace(frameOut, errorBox(err)));
      if (!preview) return;
      // The email is styled inline, which this page's CSP forbids; it is shown in a sandboxed frame
      // (opaque origin, no same-origin rights) with its own policy, posted in once the frame is ready.
      const frame = h("iframe", { sandbox: "allow-scripts", src: emailFrameUrl, title: `Email preview: ${preview.subject}`, id: "email-frame" });
      const onReady = (ev: MessageEvent<unknown>): void => {
        if (ev.source !== frame.contentWindow) return;
        window.removeEventListener("message", onReady);
        frame.contentWindow?.postMessage({ html: preview.html }, "*");
      };
      window.addEventListener("message", onReady);
      replace(frameOut, h("p", {}, h("strong", {}, "Subject: "), h("span", { id: "email-subject" }, preview.subject),
        h("span", { className: "muted" }, " · Language "), h("span", { id: "email-locale" }, preview.locale),
        ...(preview.variantId ? [h("span", { className: "muted" }, " · Variant "), h("span", { id: "email-variant" }, preview.variantId)] : [])), frame,
        h("details", {}, h("summary", {}, "Plain-text part"), h("pre", { className: "email-text" }, preview.text)));
    }
    const editable = can("campaigns.update");
    if (!editable) {
      // Read only: every control of the composer shows the definition but cannot change it.
      for (const control of form.element.querySelectorAll<HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement | HTMLButtonElement>("input, select, textarea, button")) control.disabled = true;
    }
    replace(defSection, h("h2", { id: "definition-h" }, "Definition"), out, form.element, h("div", { className: "actions" }, editable ? save : roleNote("Editing the campaign", "campaigns.update")),
      h("h3", {}, "Email preview"), h("p", { className: "hint" }, "Rendered by the server with the same renderer the worker sends with (save first)."), langRow, variantRow, previewBtn, frameOut);
  }
  renderDefinition();

  // Audience
  const sourceType = h("select", { name: "source-type" }, ...[["profileIds", "Profile ids"], ["dids", "DIDs"], ["tag", "Tag"], ["connections", "Connections of a profile"], ["all", "Everyone"]].map(([v, l]) => h("option", { value: v ?? "" }, l ?? "")));
  const sourceValue = h("textarea", { rows: 3, name: "source-value", spellcheck: "false" });
  const valueField = field("Profile ids, DIDs, tag slug or profile id", sourceValue, "Lists: one per line or separated by commas.");
  sourceType.addEventListener("change", () => {
    valueField.row.hidden = sourceType.value === "all";
  });
  const audienceOut = h("div", { id: "audience-result", "aria-live": "polite" });
  function source(): Source {
    const items = sourceValue.value.split(/[\s,]+/).filter(Boolean);
    switch (sourceType.value) {
      case "dids":
        return { type: "dids", dids: items as [string, ...string[]] }; // an empty list: the API says so
      case "tag":
        return { type: "tag", slug: sourceValue.value.trim() };
      case "connections":
        return { type: "connections", profileId: sourceValue.value.trim() };
      case "all":
        return { type: "all" };
      default:
        return { type: "profileIds", profileIds: items as [string, ...string[]] };
    }
  }
  function audienceAction(label: string, path: "campaigns.previewAudience" | "campaigns.addAudience" | "campaigns.removeAudience"): HTMLButtonElement {
    const b: HTMLButtonElement = button(label, () => void guarded(b, async () => {
      replace(audienceOut, h("p", { className: "muted" }, `${label}…`));
      const changes = path !== "campaigns.previewAudience";
      let result: Node;
      if (path === "campaigns.removeAudience") {
        const r = await api.call(path, { campaignId: id, source: source() });
        result = h("p", {}, `Removed: ${r.removed}`);
      } else {
        const r = await api.call(path, { campaignId: id, source: source() });
        result = h("dl", { className: "counts" },
          h("dt", {}, "Matched"), h("dd", { id: "audience-count" }, String(r.count)),
          h("dt", {}, "Added"), h("dd", { id: "audience-added" }, String(r.added)),
          h("dt", {}, "Not found"), h("dd", { id: "audience-not-found" }, r.notFound.length ? r.notFound.join(", ") : "none"));
      }
      // The member list is reloaded before the result shows, so what the page shows agrees with itself.
      if (changes) {
        await loadMembers(true);
        void refreshStats();
      }
      replace(audienceOut, result);
    }, (err) => replace(audienceOut, errorBox(err))));
    return b;
  }
  const members = h("tbody", {});
  const pager = h("div", { className: "actions" });
  const starts: (string | null)[] = [null]; // the cursor each page shown so far started from
  let membersLoad = 0; // only the latest load may draw: an older answer arriving late is dropped
  async function loadMembers(reset: boolean): Promise<void> {
    if (reset) starts.splice(1);
    const cursor = starts[starts.length - 1] ?? null;
    const mineLoad = ++membersLoad;
    const page = await api.call("campaigns.getAudience", { campaignId: id, limit: 10, ...(cursor ? { cursor } : {}) });
    if (mineLoad !== membersLoad) return;
    replace(members, ...page.records.map((r) => h("tr", {}, h("td", {}, r.profileId), h("td", {}, r.did ?? "–"))));
    if (!page.records.length) members.appendChild(h("tr", {}, h("td", { colspan: 2 }, "No members yet.")));
    replace(pager,
      h("span", { className: "muted" }, `Page ${starts.length}`),
      starts.length > 1 ? button("Previous page", () => { starts.pop(); void loadMembers(false); }) : null,
      page.hasMore && page.cursor ? button("Next page", () => { starts.push(page.cursor); void loadMembers(false); }) : null);
  }
  const audienceSection = h("section", { id: "audience", "aria-labelledby": "audience-h" },
    h("h2", { id: "audience-h" }, "Audience"),
    field("Source type", sourceType).row, valueField.row,
    h("div", { className: "actions" },
      can("campaigns.previewAudience") ? audienceAction("Preview count", "campaigns.previewAudience") : null,
      can("campaigns.addAudience") ? audienceAction("Add to audience", "campaigns.addAudience") : null,
      can("campaigns.removeAudience") ? audienceAction("Remove from audience", "campaigns.removeAudience") : roleNote("Changing the audience", "campaigns.removeAudience")),
    audienceOut,
    h("div", { className: "table-wrap" }, h("table", { id: "members" }, h("caption", {}, "Members"), h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Profile id"), h("th", { scope: "col" }, "DID"))), members)),
    pager);

  // Send test to me
  const testOut = h("div", { id: "test-result", "aria-live": "polite" });
  const testBtn: HTMLButtonElement = button("Send test to me", () => void guarded(testBtn, () => api.call("campaigns.sendTestToMe", { campaignId: id }), (err) => replace(testOut, errorBox(err))).then((r) => {
    if (r) replace(testOut, h("p", { className: "ok" }, `Test ${r.testId} sent on: ${r.channels.join(", ")}.`));
  }));
  const testSection = h("section", { id: "test", "aria-labelledby": "test-h" }, h("h2", { id: "test-h" }, "Test"), h("p", { className: "hint" }, "Sends the saved campaign to you only, on every channel it has content for."),
    can("campaigns.sendTestToMe") ? testBtn : roleNote("Sending a test", "campaigns.sendTestToMe"), testOut);

  // Review and send
  const reviewOut = h("div", { id: "review-result" });
  const reviewBtn: HTMLButtonElement = button("Review dispatch", () => void guarded(reviewBtn, () => api.call("campaigns.previewDispatch", { campaignId: id }), (err) => replace(reviewOut, errorBox(err))).then((p) => {
    if (!p) return;
    planned = p;
    // Too many recipients without their language block the send until the admin accepts, explicitly,
    // that they get the base content (issue 24: missing_translation, acceptFallback).
    const fallbackOnly = p.blockedReason === "missing_translation";
    const accept = h("input", { type: "checkbox", id: "accept-fallback", name: "accept-fallback" });
    const confirm: HTMLButtonElement = button(`Confirm and send to ${p.recipientCount}`, () => void guarded(confirm, () => api.call("campaigns.dispatch", { campaignId: id, expectedPreviewToken: p.previewToken, ...(fallbackOnly ? { acceptFallback: accept.checked } : {}) }), (err) => replace(confirmOut, dispatchRefusal(err))).then((started) => {
      if (started) {
        replace(confirmOut, h("p", { className: "ok" }, `Dispatch ${started.dispatchId} started (${started.channels.join(", ")}).`));
        confirm.disabled = true;
        announce("Dispatch started.");
        void poll();
      }
    }), { id: "confirm-send", disabled: Boolean(p.blockedReason) || p.recipientCount === 0 });
    accept.addEventListener("change", () => {
      confirm.disabled = !accept.checked || p.recipientCount === 0;
    });
    const confirmOut = h("div", {});
    replace(reviewOut, h("dl", { className: "counts" },
      h("dt", {}, "Audience"), h("dd", { id: "review-audience" }, String(p.audienceCount)),
      h("dt", {}, "Already notified"), h("dd", {}, String(p.alreadyNotifiedCount)),
      h("dt", {}, "Recipients"), h("dd", { id: "review-recipients" }, String(p.recipientCount)),
      h("dt", {}, "Notifications"), h("dd", { id: "review-notify" }, String(p.notificationRecipientCount)),
      h("dt", {}, "Emails"), h("dd", { id: "review-email" }, String(p.emailRecipientCount)),
      // Issue 27: guardians reached in place of excluded minors (minors: guardians), counted in the above.
      ...(p.guardianRecipientCount ? [
        h("dt", {}, "Guardians (of excluded minors)"),
        h("dd", { id: "review-guardians" },
          `${p.guardianRecipientCount} (notify ${p.guardianNotificationRecipientCount ?? 0}, email ${p.guardianEmailRecipientCount ?? 0})`),
      ] : [])),
      languagesReview(p),
      p.blockedReason ? h("p", { role: "alert", className: "error", id: "review-blocked" }, `Blocked: ${p.blockedReason}`) : null,
      fallbackOnly ? h("div", { className: "field check" }, accept, h("label", { for: accept.id }, `Send the base content to the ${untranslatedTotal(p)} recipients without a translation`)) : null,
      h("p", { className: "hint" }, "Confirming sends exactly this: if anything changed since the review, the server refuses and you review again."),
      can("campaigns.dispatch") ? confirm : roleNote("Sending", "campaigns.dispatch"), confirmOut);
  }));
  const reviewSection = h("section", { id: "review", "aria-labelledby": "review-h" }, h("h2", { id: "review-h" }, "Review and send"),
    can("campaigns.previewDispatch") ? reviewBtn : roleNote("Reviewing a send", "campaigns.previewDispatch"), reviewOut);

  // Live progress
  const progressOut = h("div", { id: "progress-list", "aria-live": "polite" });
  function renderProgress(dispatches: Dispatch[]): void {
    if (!dispatches.length) {
      replace(progressOut, h("p", { className: "muted" }, "Nothing sent yet."));
      return;
    }
    replace(progressOut, ...dispatches.map((d) =>
      progressView(d, planned ? (d.channel === "email" ? planned.emailRecipientCount : planned.notificationRecipientCount) : 0,
        can("campaigns.resumeDispatch") ? resumeControl : undefined,
        can("campaigns.chooseVariant") ? chooseControl : undefined)));
  }
  /** Decide a test wave now, for one variant: the admin's decision, audited (issue 26). */
  function chooseControl(d: Dispatch): HTMLElement {
    const out = h("div", {});
    const buttons = (current.variants ?? []).map((v) => {
      const b: HTMLButtonElement = button(`Choose ${v.id} now`, () => void guarded(b, () => api.call("campaigns.chooseVariant", { dispatchId: d.dispatchId, variantId: v.id }), (err) => replace(out, errorBox(err))).then((chosen) => {
        if (chosen) {
          announce(`Variant ${v.id} chosen: the rest of the audience gets it.`);
          void poll();
        }
      }), { id: `choose-${d.dispatchId}-${v.id}` });
      return b;
    });
    return h("div", { className: "choose" }, ...buttons, out);
  }
  /** Resume a paused (health guard) or failed dispatch from its cursor: the admin's decision, audited. */
  function resumeControl(d: Dispatch): HTMLElement {
    const out = h("div", {});
    const b: HTMLButtonElement = button("Resume", () => void guarded(b, () => api.call("campaigns.resumeDispatch", { dispatchId: d.dispatchId }), (err) => replace(out, errorBox(err))).then((resumed) => {
      if (resumed) {
        announce("Dispatch resumed.");
        void poll();
      }
    }), { id: `resume-${d.dispatchId}` });
    return h("div", { className: "resume" }, b, out);
  }
  const progressSection = h("section", { id: "progress", "aria-labelledby": "progress-h" }, h("h2", { id: "progress-h" }, "Dispatch progress"), progressOut);

  // Stats chart: distinct profiles at each step, plain SVG bars.
  const statsOut = h("div", { id: "stats-chart" });
  async function refreshStats(): Promise<void> {
    const s = await api.call("campaigns.getStats", { campaignId: id }).catch((err: unknown) => {
      replace(statsOut, errorBox(err));
      return null;
    });
    if (s && mine === generation) replace(statsOut, chart(s));
  }
  // Follow-up (issue 27 item 4): a draft with this campaign's content over a live segment of its audience
  // who never saw it, opened for editing; its own window, no dispatch of its own yet.
  const remindOut = h("div", { id: "remind-result" });
  const remindBtn: HTMLButtonElement = button("Remind those who did not see it", () => {
    void guarded(remindBtn, () => api.call("campaigns.create", reminderOf(current)), (err) => replace(remindOut, errorBox(err))).then((draft) => {
      if (!draft) return;
      announce(`Created the reminder draft ${draft.id}.`);
      location.hash = `#/c/${encodeURIComponent(draft.id)}`;
    });
  }, { id: "remind-button" });
  const statsSection = h("section", { id: "stats", "aria-labelledby": "stats-h" }, h("h2", { id: "stats-h" }, "Stats"),
    h("p", { className: "hint" }, "Distinct profiles at each step."), statsOut, button("Refresh stats", () => void refreshStats()),
    can("campaigns.create") ? h("div", { className: "inline-form", role: "group", "aria-label": "Follow up" }, remindBtn,
      h("p", { className: "hint" }, "A new draft with this content for this campaign's audience who have not been shown it, evaluated when it is sent."), remindOut) : null,
    held ? recipientsDownload(kit(held.session), id) : null);

  async function poll(): Promise<void> {
    if (mine !== generation) return;
    const [dispatches] = await Promise.all([api.call("campaigns.listDispatches", { campaignId: id }).catch(() => null), refreshStats()]);
    if (mine !== generation || !dispatches) return;
    renderProgress(dispatches);
    // Poll while anything is sending; the list and stats answer in one batched request.
    if (dispatches.some((d) => d.status === "sending" || inFlight(d))) window.setTimeout(() => void poll(), 1000);
    else announce("No dispatch is sending.");
  }

  // Duplicate (issue 24 item 5): the definition, translations included, into a new draft; never the
  // audience, state or dispatches.
  const dupId = h("input", { type: "text", name: "duplicate-id", id: "duplicate-id", maxlength: 64, autocomplete: "off", spellcheck: "false", value: `${id}-copy` });
  const dupOut = h("div", { id: "duplicate-result" });
  const dupBtn: HTMLButtonElement = button("Duplicate", () => {
    const newId = dupId.value.trim();
    void guarded(dupBtn, () => api.call("campaigns.duplicate", { campaignId: id, id: newId }), (err) => replace(dupOut, errorBox(err))).then((copy) => {
      if (!copy) return;
      announce(`Duplicated as ${copy.id}.`);
      location.hash = `#/c/${encodeURIComponent(copy.id)}`;
    });
  }, { id: "duplicate-button" });
  const duplicate = can("campaigns.duplicate")
    ? h("div", { className: "inline-form", role: "group", "aria-label": "Duplicate the campaign" },
      field("Id of the copy", dupId, "A new draft with this definition and its translations; no audience.").row, h("div", { className: "actions" }, dupBtn), dupOut)
    : null;

  shell(current.name,
    h("div", { className: "campaign-head" }, h("p", {}, "Status: ", statusBadge, " · id ", h("code", {}, id)), lifecycle, lifecycleOut, duplicate),
    h("nav", { className: "sections", "aria-label": "Campaign sections" }, ...[["definition", "Definition"], ["audience", "Audience"], ["test", "Test"], ["review", "Review and send"], ["progress", "Progress"], ["stats", "Stats"], ["explain", "Explain a recipient"]].map(([a, l]) => h("a", { href: `#/c/${encodeURIComponent(id)}`, "data-target": a ?? "", onclick: jump as EventListener }, l ?? ""))),
    defSection, audienceSection, testSection, reviewSection, progressSection, statsSection, explainSection(api, id, guarded, errorBox));
  await Promise.all([loadMembers(true).catch((err: unknown) => replace(pager, errorBox(err))), poll()]);
}

/** The follow-up of ``c``: its content (not its window) as a draft over a live segment, members of
 *  ``c`` who were never shown it (issue 27 item 4). */
function reminderOf(c: Campaign): Definition & { id: string } {
  const { id, status: _status, tenantId: _tenant, createdAt: _created, updatedAt: _updated, revision: _revision,
    startsAt: _starts, endsAt: _ends, segment: _segment, ...content } = c;
  return {
    ...content,
    id: `${id}-reminder`.slice(0, 64).replace(/-+$/, ""),
    name: `${c.name} (reminder)`.slice(0, 200),
    segment: { all: [{ memberOf: id }, { engaged: { campaignId: id, event: "shown" }, not: true }] },
  };
}

function untranslatedTotal(p: DispatchPreview): number {
  return Object.values(p.untranslated ?? {}).reduce<number>((sum, n) => sum + (n ?? 0), 0);
}

/** Per channel, how many recipients get each language, and who gets the base content for want of theirs. */
function languagesReview(p: DispatchPreview): HTMLElement | null {
  const channels = Object.entries(p.localeCounts ?? {});
  if (!channels.length) return null;
  const missing = Object.entries(p.untranslated ?? {});
  return h("div", { id: "review-languages" },
    h("div", { className: "table-wrap" }, h("table", { id: "locale-counts" }, h("caption", {}, "Recipients by language served"),
      h("thead", {}, h("tr", {}, ...["Channel", "Language", "Recipients"].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, ...channels.flatMap(([channel, counts]) => Object.entries(counts ?? {}).map(([tag, n]) =>
        h("tr", { "data-channel": channel, "data-locale": tag }, h("th", { scope: "row" }, channel), h("td", { lang: tag }, tag), h("td", {}, String(n ?? 0)))))))),
    missing.length
      ? h("p", { id: "review-untranslated" }, "No translation for: ", ...missing.map(([tag, n], i) => h("span", { "data-locale": tag }, `${i ? ", " : ""}${tag} (${n ?? 0})`)), " — they get the base content.")
      : h("p", { className: "hint", id: "review-untranslated" }, "Every recipient's language has a translation or is the base."));
}

/** A refused dispatch, explained. Under the tenant's approval policy a large send is FORBIDDEN until a
 *  second publisher approves it (the server has then listed it under Approvals), and an approval made
 *  before a change is CONFLICT: both say what happens next, with the server's own words below. */
function dispatchRefusal(err: unknown): HTMLElement {
  if (err instanceof ApiError && (err.code === "FORBIDDEN" || err.code === "CONFLICT") && err.message.includes("approveDispatch")) {
    const stale = err.code === "CONFLICT";
    return h("div", { role: "alert", className: "notice awaiting", id: "dispatch-awaits" },
      h("p", {}, h("strong", {}, stale ? "The approval is stale. " : "This send now awaits a second publisher. "),
        stale ? "The campaign changed after it was approved: review again and have the new preview approved." : "It is listed under Approvals; once another publisher approves it, confirm the send again here."),
      h("p", { className: "api-message" }, `The server said: ${err.message}`),
      can("campaigns.listAwaitingApproval") ? h("p", {}, h("a", { href: "#/approvals" }, "Open approvals")) : null);
  }
  return errorBox(err);
}

/** In-page section links keep the route in the fragment and move focus to the section heading. */
function jump(ev: Event): void {
  ev.preventDefault();
  const target = (ev.currentTarget as HTMLElement).dataset["target"];
  const heading = target ? document.getElementById(`${target}-h`) : null;
  if (heading) {
    heading.tabIndex = -1;
    heading.focus();
    heading.scrollIntoView();
  }
}

function chart(s: Stats): Node {
  const steps: [string, number][] = [["Audience", s.audience], ["Notified", s.notified], ["Emailed", s.emailed], ["Email clicks", s.emailClicked], ["Shown", s.shown], ["Clicked", s.clicked], ["Dismissed", s.dismissed]];
  const max = Math.max(1, ...steps.map(([, v]) => v));
  const rowH = 28;
  const labelW = 90;
  const barW = 200;
  const graphic = svg("svg", { viewBox: `0 0 ${labelW + barW + 60} ${steps.length * rowH}`, role: "img", "aria-labelledby": "stats-title", class: "chart" },
    svg("title", { id: "stats-title" }, `Distinct profiles: ${steps.map(([k, v]) => `${k} ${v}`).join(", ")}`),
    ...steps.map(([label, value], i) => svg("g", { transform: `translate(0 ${i * rowH})` },
      svg("text", { x: 0, y: 18, class: "chart-label" }, label),
      svg("rect", { x: labelW, y: 4, width: Math.round((value / max) * barW), height: 18, class: `chart-bar bar-${label.toLowerCase().replace(" ", "-")}` }),
      svg("text", { x: labelW + Math.round((value / max) * barW) + 6, y: 18, class: "chart-value" }, String(value)))));
  const table = h("table", { className: "visually-hidden" }, h("caption", {}, "Stats"), h("tbody", {}, ...steps.map(([k, v]) => h("tr", {}, h("th", { scope: "row" }, k), h("td", { "data-stat": k.toLowerCase().replace(" ", "-") }, String(v))))));
  return h("div", {}, graphic, table, variantChart(s.variants ?? {}));
}

// Per A/B variant (issue 26): each step's distinct profiles, the arms' bars side by side, and the rate
// of each step over the arm's recipients in the table beside it.
const VARIANT_STEPS: [string, keyof VariantStats][] = [
  ["Recipients", "recipients"], ["Notified", "notified"], ["Emailed", "emailed"], ["Shown", "shown"],
  ["Clicked", "clicked"], ["Email clicked", "emailClicked"], ["Bounced", "bounced"], ["Complained", "complained"],
];

function variantChart(variants: Record<string, VariantStats | undefined>): Node | null {
  const ids = Object.keys(variants);
  if (!ids.length) return null;
  const max = Math.max(1, ...ids.flatMap((id) => VARIANT_STEPS.map(([, k]) => variants[id]?.[k] ?? 0)));
  const barH = 12;
  const groupH = ids.length * barH + 10;
  const labelW = 110;
  const barW = 200;
  const graphic = svg("svg", { viewBox: `0 0 ${labelW + barW + 80} ${VARIANT_STEPS.length * groupH}`, role: "img", "aria-labelledby": "variant-stats-title", class: "chart", id: "variant-chart" },
    svg("title", { id: "variant-stats-title" }, `Per variant: ${ids.map((id) => `${id} ${VARIANT_STEPS.map(([label, k]) => `${label} ${variants[id]?.[k] ?? 0}`).join(", ")}`).join("; ")}`),
    ...VARIANT_STEPS.map(([label, k], i) => svg("g", { transform: `translate(0 ${i * groupH})` },
      svg("text", { x: 0, y: barH, class: "chart-label" }, label),
      ...ids.map((id, j) => {
        const value = variants[id]?.[k] ?? 0;
        const width = Math.round((value / max) * barW);
        return svg("g", { transform: `translate(0 ${j * barH})` },
          svg("rect", { x: labelW, y: 1, width, height: barH - 2, class: `chart-bar variant-bar variant-${j % 4}` }),
          svg("text", { x: labelW + width + 4, y: barH - 2, class: "chart-value" }, `${id} ${value}`));
      }))));
  const rate = (n: number, of: number): string => (of ? `${Math.round((n / of) * 1000) / 10}%` : "–");
  const table = h("table", { id: "variant-stats" }, h("caption", {}, "Per variant (distinct profiles, rate of recipients)"),
    h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Step"), ...ids.map((id) => h("th", { scope: "col" }, id)))),
    h("tbody", {}, ...VARIANT_STEPS.map(([label, k]) => h("tr", {}, h("th", { scope: "row" }, label),
      ...ids.map((id) => {
        const v = variants[id];
        const n = v?.[k] ?? 0;
        return h("td", { "data-variant": id, "data-stat": k }, k === "recipients" ? String(n) : `${n} (${rate(n, v?.recipients ?? 0)})`);
      })))));
  return h("div", { className: "variant-stats" }, h("h3", {}, "A/B variants"), graphic, h("div", { className: "table-wrap" }, table));
}

// --- routing -------------------------------------------------------------------------------------

function kit(session: Session): Kit {
  return { api, session, guarded, errorBox, button, announce, shell, generation: () => generation };
}

function route(): void {
  generation += 1;
  drawnHash = location.hash || "#/";
  const mine = generation;
  if (!token()) {
    renderSignIn();
    return;
  }
  currentSession().then((s) => {
    if (mine !== generation) return;
    if (!s.me.platform && s.me.role === null) {
      forget();
      renderSignIn(`${s.me.profileId} holds no role in tenant '${s.me.tenantId}': ask one of its admins for access.`);
      return;
    }
    draw(s);
  }, (err: unknown) => {
    if (mine !== generation) return;
    if (err instanceof ApiError && err.code === "UNAUTHORIZED") {
      forget();
      renderSignIn(`${err.message}. Sign in again with an admin token.`);
    } else shell("Campaigns admin", errorBox(err));
  });
}

function draw(s: Session): void {
  const hash = location.hash.replace(/^#/, "");
  if (hash === "/new") renderNew();
  else if (hash === "/approvals") void renderApprovals(kit(s));
  else if (hash === "/access") renderAccess(kit(s));
  else if (hash === "/layout") void renderLayout(kit(s));
  else if (hash === "/import") renderTransfer(kit(s));
  else if (hash === "/tenant" || hash.startsWith("/tenant/")) void renderTenantSettings(kit(s), hash.startsWith("/tenant/") ? decodeURIComponent(hash.slice(8)) || null : null);
  else if (hash.startsWith("/c/")) void renderCampaign(decodeURIComponent(hash.slice(3)));
  else void renderList();
  document.getElementById("main")?.querySelector("h1")?.focus();
}

takeFragmentToken();
window.addEventListener("hashchange", () => {
  if (takeFragmentToken()) return; // a link pasted into this tab changes only the fragment
  route();
});
route();
