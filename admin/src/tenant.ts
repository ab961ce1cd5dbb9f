// Access and keys (#/access), for a tenant's admins and platform admins: who holds which role in the
// tenant (access.list / grant / revoke) and its API keys (apiKeys.list / create / revoke). A new key is
// shown once, with a copy button and a warning: the server keeps only its hash.
import { roleName } from "./access";
import { type ApiKey, type Grant, type Role, ROLES } from "./api";
import { field, h, replace } from "./dom";
import { echoUtc, timeEl, zoneName } from "./time";
import type { Kit } from "./kit";

/** A stored time in the admin's local time with its zone, UTC on hover (time.ts). */
function when(value: string | null | undefined): Node | string {
  return value ? timeEl(value) : "–";
}

function roleSelect(name: string): HTMLSelectElement {
  const select = h("select", { name }, ...ROLES.map((r) => h("option", { value: r }, r)));
  select.value = "viewer";
  return select;
}

function grantsSection(kit: Kit, tenantId: string): HTMLElement {
  const body = h("tbody", {});
  const out = h("div", { id: "grants-result", "aria-live": "polite" });
  const load = async (): Promise<void> => {
    const page = await kit.guarded(null, () => kit.api.call("access.list", { tenantId }), (err) => replace(out, kit.errorBox(err)));
    if (!page) return;
    replace(body, ...page.records.map((g) => grantRow(g)));
    if (!page.records.length) body.appendChild(h("tr", {}, h("td", { colspan: 5 }, "No grants yet.")));
  };
  const grantRow = (g: Grant): HTMLElement => {
    const revoke: HTMLButtonElement = kit.button("Revoke", () => {
      if (!confirm(`Revoke the ${g.role} role of ${g.subject} in tenant '${tenantId}'?`)) return;
      void kit.guarded(revoke, () => kit.api.call("access.revoke", { tenantId, subject: g.subject, role: g.role as Role }), (err) => replace(out, kit.errorBox(err))).then((ok) => {
        if (!ok) return;
        replace(out, h("p", { className: "ok" }, `Revoked ${g.role} from ${g.subject}.`));
        kit.announce(`Revoked ${g.role} from ${g.subject}.`);
        void load();
      });
    }, { "aria-label": `Revoke ${g.role} from ${g.subject}` });
    return h("tr", { "data-subject": g.subject, "data-role": g.role },
      h("th", { scope: "row" }, g.subject), h("td", {}, g.role), h("td", {}, when(g.grantedAt)), h("td", {}, g.grantedBy ?? "–"),
      h("td", {}, kit.session.can("access.revoke") ? revoke : null));
  };
  const subject = h("input", { type: "text", name: "subject", autocomplete: "off", spellcheck: "false", required: true });
  const role = roleSelect("grant-role");
  const grant: HTMLButtonElement = kit.button("Grant role", () => {
    const who = subject.value.trim();
    if (!who) {
      replace(out, h("p", { role: "alert", className: "error" }, "Name the profile id to grant the role to."));
      return;
    }
    const chosen = role.value as Role;
    void kit.guarded(grant, () => kit.api.call("access.grant", { tenantId, subject: who, role: chosen }), (err) => replace(out, kit.errorBox(err))).then((g) => {
      if (!g) return;
      subject.value = "";
      replace(out, h("p", { className: "ok" }, `Granted ${g.role} to ${g.subject}.`));
      kit.announce(`Granted ${g.role} to ${g.subject}.`);
      void load();
    });
  });
  void load();
  return h("section", { id: "grants", "aria-labelledby": "grants-h" },
    h("h2", { id: "grants-h" }, "Roles"),
    h("p", { className: "hint" }, "viewer reads; author writes campaigns and audiences, sends tests; publisher also goes live, sends, schedules and approves; admin also manages roles and keys. Roles a token carries as signed claims are the identity provider's and are not listed."),
    h("div", { className: "table-wrap" }, h("table", { id: "grants-table" }, h("caption", {}, `Grants in ${tenantId}`),
      h("thead", {}, h("tr", {}, ...["Profile", "Role", "Granted", "By", ""].map((t) => h("th", { scope: "col" }, t)))), body)),
    kit.session.can("access.grant") ? h("div", { className: "inline-form", role: "group", "aria-label": "Grant a role" },
      field("Profile id", subject, "The JWT subject (sub) the role is bound to.").row, field("Role", role).row, h("div", { className: "actions" }, grant)) : null,
    out);
}

function keysSection(kit: Kit, tenantId: string): HTMLElement {
  const body = h("tbody", {});
  const out = h("div", { id: "keys-result", "aria-live": "polite" });
  const created = h("div", { id: "key-created" });
  const load = async (): Promise<void> => {
    const page = await kit.guarded(null, () => kit.api.call("apiKeys.list", { tenantId }), (err) => replace(out, kit.errorBox(err)));
    if (!page) return;
    replace(body, ...page.records.map((k) => keyRow(k)));
    if (!page.records.length) body.appendChild(h("tr", {}, h("td", { colspan: 8 }, "No API keys yet.")));
  };
  const keyRow = (k: ApiKey): HTMLElement => {
    const expired = Boolean(k.expiresAt && Date.parse(k.expiresAt) <= Date.now());
    const state: (Node | string)[] = k.revokedAt ? ["revoked ", when(k.revokedAt)] : [expired ? "expired" : "active"];
    const revoke: HTMLButtonElement = kit.button("Revoke", () => {
      if (!confirm(`Revoke the key "${k.name}"? Every process refuses it within a second.`)) return;
      void kit.guarded(revoke, () => kit.api.call("apiKeys.revoke", { id: k.id }), (err) => replace(out, kit.errorBox(err))).then((gone) => {
        if (!gone) return;
        replace(out, h("p", { className: "ok" }, `Revoked the key "${gone.name}".`));
        kit.announce(`Revoked the key ${gone.name}.`);
        void load();
      });
    }, { "aria-label": `Revoke key ${k.name}` });
    return h("tr", { "data-key": k.id, "data-state": k.revokedAt ? "revoked" : expired ? "expired" : "active" },
      h("th", { scope: "row" }, k.name), h("td", {}, h("code", {}, `${k.prefix}…`)), h("td", {}, k.role),
      h("td", {}, when(k.createdAt), ` by ${k.createdBy}`), h("td", {}, when(k.expiresAt)),
      h("td", { "data-field": "lastUsedAt" }, k.lastUsedAt ? when(k.lastUsedAt) : "never"),
      h("td", { "data-field": "state" }, ...state),
      h("td", {}, !k.revokedAt && kit.session.can("apiKeys.revoke") ? revoke : null));
  };
  const name = h("input", { type: "text", name: "key-name", autocomplete: "off", required: true, maxlength: 200 });
  const role = roleSelect("key-role");
  const expires = h("input", { name: "key-expires", type: "datetime-local" });
  const expiresRow = field(`Expires (optional; your time, ${zoneName()})`, expires, " ").row;
  const expiresHint = expiresRow.querySelector<HTMLElement>(".hint");
  if (expiresHint) echoUtc(expires, expiresHint, "empty: never");
  const create: HTMLButtonElement = kit.button("Create key", () => {
    const label = name.value.trim();
    if (!label) {
      replace(out, h("p", { role: "alert", className: "error" }, "Name the key (what uses it, e.g. \"SIS sync\")."));
      return;
    }
    const input = { tenantId, name: label, role: role.value as Role, ...(expires.value ? { expiresAt: new Date(expires.value).toISOString() } : {}) };
    void kit.guarded(create, () => kit.api.call("apiKeys.create", input), (err) => replace(out, kit.errorBox(err))).then((made) => {
      if (!made) return;
      name.value = "";
      expires.value = "";
      replace(out);
      showOnce(made.key, label);
      void load();
    });
  });
  // The key's only appearance: a read-only field to select, a copy button, and a way to put it away.
  function showOnce(key: string, label: string): void {
    const box = h("input", { type: "text", readonly: true, value: key, id: "new-key", spellcheck: "false", autocomplete: "off" });
    const copied = h("span", { className: "muted", "aria-live": "polite" });
    const copy = kit.button("Copy key", () => {
      box.select();
      const done = (): void => {
        copied.textContent = "Copied.";
      };
      if (navigator.clipboard) navigator.clipboard.writeText(key).then(done, () => (document.execCommand("copy") ? done() : (copied.textContent = "Select the key and copy it.")));
      else if (document.execCommand("copy")) done();
    });
    const hide = kit.button("I have stored it, hide the key", () => {
      replace(created);
      kit.announce("The key is hidden; it cannot be shown again.");
    });
    replace(created, h("div", { role: "alert", className: "notice key-once" },
      h("p", {}, h("strong", {}, `Key "${label}" created. This is the only time it is shown. `), "Copy it now and keep it somewhere safe: the server stores only its hash, so it cannot be shown again. If it is lost, revoke it and create another."),
      field("New API key", box).row, h("div", { className: "actions" }, copy, hide, copied)));
    box.focus();
    box.select();
  }
  void load();
  return h("section", { id: "keys", "aria-labelledby": "keys-h" },
    h("h2", { id: "keys-h" }, "API keys"),
    h("p", { className: "hint" }, "Machine credentials of this tenant with one role, sent as Authorization: Bearer <key>."),
    created,
    h("div", { className: "table-wrap" }, h("table", { id: "keys-table" }, h("caption", {}, `API keys of ${tenantId}`),
      h("thead", {}, h("tr", {}, ...["Name", "Key", "Role", "Created", "Expires", "Last used", "State", ""].map((t) => h("th", { scope: "col" }, t)))), body)),
    kit.session.can("apiKeys.create") ? h("div", { className: "inline-form", role: "group", "aria-label": "Create an API key" },
      field("Key name", name).row, field("Key role", role).row, expiresRow,
      h("div", { className: "actions" }, create)) : null,
    out);
}

export function renderAccess(kit: Kit): void {
  const me = kit.session.me;
  if (!kit.session.can("access.list") && !kit.session.can("apiKeys.list")) {
    kit.shell("Access and keys", h("p", { className: "hint role-note" }, `Managing roles and keys needs ${roleName(kit.session.needs("access.list"))}.`));
    return;
  }
  const sections = h("div", {});
  const show = (tenantId: string): void => {
    replace(sections,
      kit.session.can("access.list") ? grantsSection(kit, tenantId) : null,
      kit.session.can("apiKeys.list") ? keysSection(kit, tenantId) : null);
  };
  // A platform admin acts on every tenant: it picks the one to manage (its own by default).
  let picker: HTMLElement | null = null;
  if (me.platform) {
    const tenant = h("input", { type: "text", name: "tenant", value: me.tenantId, autocomplete: "off", spellcheck: "false" });
    const form = h("form", { className: "toolbar", "aria-label": "Tenant to manage" }, field("Tenant", tenant, "Platform admins manage any tenant.").row, h("button", { type: "submit" }, "Show tenant"));
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      if (tenant.value.trim()) show(tenant.value.trim());
    });
    picker = form;
  }
  kit.shell("Access and keys", picker, sections);
  show(me.tenantId);
}
