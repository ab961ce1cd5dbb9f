// Tenant settings (#/tenant, #/tenant/<id>): a tenant's record (tenants.get): its name, branding (the
// logo and colours shown read-only: they are edited in one place, the email layout screen, which
// previews them; tenants.update still takes them for API callers), app origin, sender, email click tracking, frequency caps and approval policy. A tenant's admins read their own; platform admins
// pick any tenant (tenants.list), edit it (tenants.update, a patch of the fields changed: an emptied
// optional field is sent as null, which clears it) and create one (tenants.create). The server
// validates: a BAD_REQUEST issue is shown on the field its path names, and nothing is saved.
import { tenantsChanged } from "./acting";
import { roleName } from "./access";
import { layoutHref } from "./layout";
import { ApiError, type ChannelCap, type Issue, type Tenant, type TenantInput } from "./api";
import { field, h, replace } from "./dom";
import { timeEl } from "./time";
import type { Kit } from "./kit";

type Control = HTMLInputElement;
/** Text fields of the record, by wire name: label and hint. */
type TextKey = "name" | "logoUrl" | "primaryColor" | "textColor" | "appOrigin" | "emailFrom";
/** Shown here, edited on the email layout screen (with its preview): never sent by this form. */
const BRANDING: ReadonlySet<TextKey> = new Set(["logoUrl", "primaryColor", "textColor"]);
const TEXT_FIELDS: [TextKey, string, string][] = [
  ["name", "Display name", "The email header and the sender name of the tenant's branding."],
  ["logoUrl", "Logo URL", "Empty: no logo."],
  ["primaryColor", "Primary colour", "Empty: the built-in default."],
  ["textColor", "Text colour", "Empty: the built-in default."],
  ["appOrigin", "App origin", "Exactly https://host[:port]: every email CTA is <origin>/m/<campaignId>."],
  ["emailFrom", "Email sender", "news@school.example or School <news@school.example>; empty: the deployment's EMAIL_FROM."],
];
const CAP_CHANNELS = ["notify", "email"] as const;
type CapChannel = (typeof CAP_CHANNELS)[number];

/** A stored time in the admin's local time with its zone, UTC on hover (time.ts). */
function when(value: string | null | undefined): Node | string {
  return value ? timeEl(value) : "–";
}

/** The approval policy in one sentence. */
export function approvalSentence(min: number | null): string {
  if (min === null) return "No approval policy: a publisher sends alone, whatever the audience.";
  return `Sends reaching ${min} recipient${min === 1 ? "" : "s"} need a second publisher.`;
}

/** Every tenant a platform admin may pick, page by page (keyset-paged by tenantId). */
async function allTenants(kit: Kit): Promise<Tenant[]> {
  const out: Tenant[] = [];
  let cursor: string | undefined;
  for (let i = 0; i < 50; i += 1) {
    const page = await kit.api.call("tenants.list", { limit: 200, ...(cursor ? { cursor } : {}) });
    out.push(...page.records);
    if (!page.hasMore || !page.cursor) break;
    cursor = page.cursor;
  }
  return out;
}

function recordForm(kit: Kit, tenant: Tenant, saving: () => void, saved: (t: Tenant) => void): HTMLElement {
  const editable = kit.session.can("tenants.update");
  const inputs = new Map<string, Control>();
  const errors = new Map<string, HTMLElement>();
  const rows: HTMLElement[] = [];
  const add = (path: string, label: string, control: Control, hint?: string): void => {
    control.dataset["path"] = path;
    control.name = path;
    if (!editable) control.readOnly = true;
    const { row, error } = field(label, control, hint);
    inputs.set(path, control);
    errors.set(path, error);
    rows.push(row);
  };
  const brandingRows: HTMLElement[] = [];
  for (const [key, label, hint] of TEXT_FIELDS) {
    const value = tenant[key];
    const control = h("input", { type: "text", value: typeof value === "string" ? value : "", autocomplete: "off", spellcheck: "false" });
    add(key, label, control, hint);
    if (!BRANDING.has(key)) continue;
    control.readOnly = true;
    brandingRows.push(rows.pop() as HTMLElement);
  }
  const brandingLink = h("p", { className: "hint", id: "branding-link" }, "The logo and colours are edited with a preview under ",
    h("a", { href: layoutHref(tenant.tenantId) }, `Email layout of ${tenant.tenantId}`), ".");
  const capRows: HTMLElement[] = [];
  for (const channel of CAP_CHANNELS) {
    const cap = tenant.frequencyCaps?.[channel];
    const before = rows.length;
    const what = channel === "notify" ? "Notification" : "Email";
    add(`frequencyCaps.${channel}.max`, `${what} cap: at most`, h("input", { type: "number", min: 1, max: 1000, step: 1, value: cap ? String(cap.max) : "" }), "announcements per profile; empty: no cap on this channel");
    add(`frequencyCaps.${channel}.windowSeconds`, `${what} cap window (seconds)`, h("input", { type: "number", min: 1, step: 1, value: cap ? String(cap.windowSeconds) : "" }));
    capRows.push(h("div", { className: "inline-form", role: "group", "aria-label": `${channel} frequency cap` }, ...rows.splice(before)));
  }
  // Click tracking: on unless the record says false (older records have no field).
  const trackingWas = tenant.clickTracking !== false;
  const tracking = h("input", { type: "checkbox", checked: trackingWas, disabled: !editable });
  add("clickTracking", "Track email clicks", tracking, "On: the email's button links through this deployment's /c, which counts each recipient's first click and redirects. Off: it links to the app directly.");
  const trackingRow = rows.pop() as HTMLElement;
  // Notification format: empty follows the deployment's NOTIFICATIONS_FORMAT.
  const formatWas = tenant.notificationFormat ?? "";
  const format = h("select", { disabled: !editable }, ...[["", "The deployment's (NOTIFICATIONS_FORMAT)"], ["standard", "Standard (signed ANNOUNCEMENT)"], ["learncard", "LearnCard (LCNNotification, DID-signed)"]].map(([v, l]) => h("option", { value: v, selected: v === formatWas }, l)));
  format.name = "notificationFormat";
  const formatRow = field("Notification format", format, "What this tenant's notification POSTs look like; LearnCard's inbox takes only its own format.").row;
  const min = h("input", { type: "number", min: 1, step: 1, value: tenant.approval ? String(tenant.approval.minRecipients) : "" });
  add("approval.minRecipients", "Approval from (recipients)", min, "Empty: no two-person approval.");
  const approvalRow = rows.pop() as HTMLElement;
  const sentence = h("p", { id: "approval-sentence", className: "notice" });
  const explain = (): void => {
    const n = Number.parseInt(min.value, 10);
    sentence.textContent = approvalSentence(min.value.trim() && Number.isFinite(n) ? n : null);
  };
  min.addEventListener("input", explain);
  explain();

  const out = h("div", { id: "tenant-result", "aria-live": "polite" });
  const clearIssues = (): void => {
    for (const [path, error] of errors) {
      error.hidden = true;
      error.textContent = "";
      error.removeAttribute("title");
      inputs.get(path)?.removeAttribute("aria-invalid");
    }
  };
  /** Puts each issue on the field its path names (the longest field path it starts with). */
  const showIssues = (issues: Issue[]): string[] => {
    const unplaced: string[] = [];
    for (const issue of issues) {
      const path = issue.path.map(String);
      const joined = path.join(".");
      let key: string | undefined;
      for (const candidate of errors.keys()) {
        if ((joined === candidate || joined.startsWith(`${candidate}.`) || candidate.startsWith(`${joined}.`)) && (!key || candidate.length > key.length)) key = candidate;
      }
      // A whole-object issue (frequencyCaps.notify, approval) lands on the channel's or policy's first field.
      const error = key ? errors.get(key) : undefined;
      if (!key || !error) {
        unplaced.push(issue.message);
        continue;
      }
      error.hidden = false;
      error.textContent = error.textContent ? `${error.textContent} ${issue.message}` : issue.message;
      if (issue.detail) error.title = `The server said: ${issue.detail}`;
      inputs.get(key)?.setAttribute("aria-invalid", "true");
    }
    return unplaced;
  };

  /** The fields that differ from the record: what tenants.update gets (null clears). */
  const patch = (): { changes: Partial<TenantInput>; local: string[] } => {
    const changes: Partial<TenantInput> = {};
    const local: string[] = [];
    for (const [key] of TEXT_FIELDS) {
      if (BRANDING.has(key)) continue;
      const now = (inputs.get(key)?.value ?? "").trim();
      const was = tenant[key] ?? "";
      if (now === was) continue;
      if (key === "name") {
        if (!now) local.push("The display name cannot be empty.");
        else changes.name = now;
      } else changes[key as Exclude<TextKey, "name">] = now || null;
    }
    // Sent as typed (a half-filled cap too): the server's rules decide, and say which field is wrong.
    const caps: Partial<Record<CapChannel, Partial<ChannelCap>>> = {};
    for (const channel of CAP_CHANNELS) {
      const max = inputs.get(`frequencyCaps.${channel}.max`)?.value.trim() ?? "";
      const windowSeconds = inputs.get(`frequencyCaps.${channel}.windowSeconds`)?.value.trim() ?? "";
      if (!max && !windowSeconds) continue;
      caps[channel] = { ...(max ? { max: Number(max) } : {}), ...(windowSeconds ? { windowSeconds: Number(windowSeconds) } : {}) };
    }
    if (JSON.stringify(caps) !== JSON.stringify(normalCaps(tenant.frequencyCaps ?? {}))) {
      changes.frequencyCaps = caps as NonNullable<TenantInput["frequencyCaps"]>;
    }
    const minNow = min.value.trim();
    const minWas = tenant.approval ? String(tenant.approval.minRecipients) : "";
    if (minNow !== minWas) changes.approval = minNow ? { minRecipients: Number(minNow) } : null;
    if (tracking.checked !== trackingWas) changes.clickTracking = tracking.checked;
    if (format.value !== formatWas) changes.notificationFormat = format.value ? (format.value as "standard" | "learncard") : null;
    return { changes, local };
  };

  const save: HTMLButtonElement = kit.button("Save tenant settings", () => {
    clearIssues();
    saving();
    const { changes, local } = patch();
    if (local.length) {
      replace(out, h("p", { role: "alert", className: "error" }, local.join(" ")));
      return;
    }
    if (!Object.keys(changes).length) {
      replace(out, h("p", { className: "muted" }, "Nothing changed."));
      return;
    }
    replace(out);
    void kit.guarded(save, () => kit.api.call("tenants.update", { tenantId: tenant.tenantId, ...changes }), (err) => {
      if (err instanceof ApiError && err.code === "BAD_REQUEST" && err.issues.length) {
        const rest = showIssues(err.issues);
        replace(out, h("div", { role: "alert", className: "error" }, h("p", {}, `Not saved: ${err.message}. Fix the fields marked above.`), rest.length ? h("ul", {}, ...rest.map((m) => h("li", {}, m))) : null));
        return;
      }
      replace(out, kit.errorBox(err));
    }).then((updated) => {
      if (!updated) return;
      kit.announce(`Saved tenant ${updated.tenantId}.`);
      saved(updated);
    });
  });

  return h("section", { id: "tenant-record", "aria-labelledby": "tenant-record-h", "data-tenant": tenant.tenantId },
    h("h2", { id: "tenant-record-h" }, `${tenant.name} `, h("span", { className: "muted id" }, tenant.tenantId)),
    h("p", { className: "muted" }, "Created ", when(tenant.createdAt), " · updated ", h("span", { id: "tenant-updated" }, when(tenant.updatedAt))),
    h("form", { className: "tenant-form", "aria-label": `Settings of ${tenant.tenantId}`, onsubmit: ((ev: Event) => ev.preventDefault()) as EventListener },
      h("h3", {}, "Name, app and sender"), ...rows,
      h("h3", {}, "Logo and colours"), ...brandingRows, brandingLink,
      h("h3", {}, "Email clicks"), trackingRow,
      h("h3", {}, "Notifications"), formatRow,
      h("h3", {}, "Frequency caps"), h("p", { className: "hint" }, "Across campaigns, per profile and channel. The default tenant's caps apply to every tenant without its own for that channel."), ...capRows,
      h("h3", {}, "Two-person approval"), approvalRow, sentence),
    editable ? h("div", { className: "actions" }, save) : h("p", { className: "hint role-note" }, `Changing tenant settings needs ${roleName(kit.session.needs("tenants.update"))}; this record is read-only.`),
    out);
}

function normalCaps(caps: NonNullable<Tenant["frequencyCaps"]>): NonNullable<Tenant["frequencyCaps"]> {
  const out: NonNullable<Tenant["frequencyCaps"]> = {};
  for (const channel of CAP_CHANNELS) {
    const cap = caps[channel];
    if (cap) out[channel] = { max: cap.max, windowSeconds: cap.windowSeconds };
  }
  return out;
}

function createSection(kit: Kit, created: (t: Tenant) => void): HTMLElement {
  const id = h("input", { type: "text", name: "new-tenant-id", autocomplete: "off", spellcheck: "false", maxlength: 64 });
  const name = h("input", { type: "text", name: "new-tenant-name", autocomplete: "off", maxlength: 200 });
  const idField = field("New tenant id", id, "Lowercase letters, digits and inner hyphens.");
  const nameField = field("New tenant name", name);
  const out = h("div", { id: "tenant-create-result", "aria-live": "polite" });
  const create: HTMLButtonElement = kit.button("Create tenant", () => {
    for (const f of [idField, nameField]) {
      f.error.hidden = true;
      f.error.textContent = "";
    }
    const input = { tenantId: id.value.trim(), name: name.value.trim() };
    void kit.guarded(create, () => kit.api.call("tenants.create", input), (err) => {
      if (err instanceof ApiError && err.code === "BAD_REQUEST" && err.issues.length) {
        const rest: string[] = [];
        for (const issue of err.issues) {
          const target = issue.path[0] === "tenantId" ? idField : issue.path[0] === "name" ? nameField : null;
          if (!target) rest.push(issue.message);
          else {
            target.error.hidden = false;
            target.error.textContent = issue.message;
          }
        }
        replace(out, h("p", { role: "alert", className: "error" }, `Not created: ${err.message}.`, rest.length ? ` ${rest.join(" ")}` : ""));
        return;
      }
      replace(out, kit.errorBox(err));
    }).then((t) => {
      if (!t) return;
      tenantsChanged(); // the header's picker offers it from the next screen on
      id.value = "";
      name.value = "";
      replace(out, h("p", { className: "ok" }, `Created tenant ${t.tenantId}.`));
      kit.announce(`Created tenant ${t.tenantId}.`);
      created(t);
    });
  });
  return h("section", { id: "tenant-create", "aria-labelledby": "tenant-create-h" },
    h("h2", { id: "tenant-create-h" }, "Create a tenant"),
    h("div", { className: "inline-form", role: "group", "aria-label": "Create a tenant" }, idField.row, nameField.row, h("div", { className: "actions" }, create)),
    out);
}

export async function renderTenantSettings(kit: Kit, wanted: string | null): Promise<void> {
  const mine = kit.generation();
  const me = kit.session.me;
  if (!kit.session.can("tenants.get")) {
    kit.shell("Tenant settings", h("p", { className: "hint role-note" }, `Tenant settings need ${roleName(kit.session.needs("tenants.get"))}.`));
    return;
  }
  const tenantId = wanted ?? me.tenantId;
  const record = h("div", { id: "tenant-settings" });
  const confirmation = h("div", { id: "tenant-saved", role: "status" });
  let picker: HTMLElement | null = null;
  const go = (id: string): void => {
    location.hash = `#/tenant/${encodeURIComponent(id)}`;
  };
  if (kit.session.can("tenants.list")) {
    const select = h("select", { name: "tenant-pick" }, h("option", { value: tenantId }, tenantId));
    select.addEventListener("change", () => go(select.value));
    picker = h("div", { className: "toolbar" }, field("Tenant", select, "Platform admins edit every tenant.").row);
    void kit.guarded(null, () => allTenants(kit), (err) => replace(record, kit.errorBox(err))).then((list) => {
      if (!list || mine !== kit.generation()) return;
      const names = new Map(list.map((t) => [t.tenantId, t.name]));
      const ids = names.has(tenantId) ? [...names.keys()] : [tenantId, ...names.keys()]; // a missing one stays pickable
      replace(select, ...ids.map((id) => h("option", { value: id }, names.has(id) ? `${names.get(id)} (${id})` : id)));
      select.value = tenantId;
    });
  }
  kit.shell("Tenant settings",
    h("p", { className: "hint" }, "The tenant's record: what its emails look like, where their links go, who sends them, how often a profile may hear from it, and when a send needs a second publisher. Changes apply within seconds, without a redeploy."),
    picker, confirmation, record,
    kit.session.can("tenants.create") ? createSection(kit, (t) => go(t.tenantId)) : null);
  const show = (t: Tenant): void => {
    replace(record, recordForm(kit, t, () => replace(confirmation), (updated) => {
      replace(confirmation, h("p", { className: "ok" }, `Saved the settings of ${updated.tenantId} at `, timeEl(updated.updatedAt, true), "."));
      show(updated);
    }));
  };
  const tenant = await kit.guarded(null, () => kit.api.call("tenants.get", { tenantId }), (err) => {
    if (err instanceof ApiError && err.code === "NOT_FOUND") replace(record, h("p", { role: "alert", className: "notice" }, `Tenant '${tenantId}' has no record yet.${kit.session.can("tenants.create") ? " Create it below." : " A platform admin creates it."}`));
    else replace(record, kit.errorBox(err));
  });
  if (!tenant || mine !== kit.generation()) return;
  show(tenant);
}
