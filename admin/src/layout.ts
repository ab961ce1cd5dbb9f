// Email layout (#/layout, #/layout/<id>): a tenant's logo, colours, footer text and postal address and
// sender name, edited by the tenant's own admins (the one editor of the branding: tenant settings shows
// the logo and colours read-only and links here) (tenants.updateLayout) with the email rendered by the
// server before saving (tenants.previewLayout: the worker's renderer and From rule, the proposed layout
// over the stored one). Copy is plain text; the renderer escapes it. An emptied field is sent as null,
// which clears it. A BAD_REQUEST issue is shown on the field its path names, and nothing is saved.
import { roleName } from "./access";
import { ApiError, type Issue, type Tenant } from "./api";
import { field, h, replace } from "./dom";
import type { Kit } from "./kit";
import { showEmailFrame } from "./preview_frame";

type LayoutKey = "logoUrl" | "primaryColor" | "textColor" | "footerText" | "footerAddress" | "senderName";
type Layout = { [K in LayoutKey]?: string | null };
const FIELDS: [LayoutKey, string, string, number][] = [
  ["logoUrl", "Logo URL", "An https image URL; empty: the tenant's name as text.", 2048],
  ["primaryColor", "Primary colour", "#rgb or #rrggbb (header rule, button); empty: the built-in blue.", 7],
  ["textColor", "Text colour", "#rgb or #rrggbb; empty: the built-in dark grey.", 7],
  ["footerText", "Footer text", "Plain text on one line, shown under every email (up to 500 characters).", 500],
  ["footerAddress", "Postal address", "Plain text on one line, e.g. 1 School Lane, Springfield (up to 300 characters).", 300],
  ["senderName", "Sender name", "The From name recipients see; the address stays the tenant's sender (up to 100 characters).", 100],
];

/** The route of ``tenantId``'s layout: tenant settings links here for its logo and colours. */
export function layoutHref(tenantId: string): string {
  return `#/layout/${encodeURIComponent(tenantId)}`;
}

export async function renderLayout(kit: Kit, wanted: string | null = null): Promise<void> {
  const me = kit.session.me;
  if (!kit.session.can("tenants.previewLayout")) {
    kit.shell("Email layout", h("p", { className: "hint role-note" }, `The email layout needs ${roleName(kit.session.needs("tenants.previewLayout"))}.`));
    return;
  }
  const mine = kit.generation();
  const editor = h("div", { id: "layout-tenant" });
  const show = async (tenantId: string): Promise<void> => {
    const tenant = await kit.guarded(null, () => kit.api.call("tenants.get", { tenantId }), (err) => replace(editor, kit.errorBox(err)));
    if (tenant && mine === kit.generation()) replace(editor, layoutEditor(kit, tenant));
  };
  // A platform admin edits any tenant's layout (its own by default); a tenant admin only its own.
  let picker: HTMLElement | null = null;
  const first = me.platform && wanted ? wanted : me.tenantId;
  if (me.platform) {
    const tenant = h("input", { type: "text", name: "tenant", value: first, autocomplete: "off", spellcheck: "false" });
    picker = h("form", { className: "toolbar", "aria-label": "Tenant whose layout to edit" }, field("Tenant", tenant, "Platform admins edit any tenant's layout.").row, h("button", { type: "submit" }, "Show tenant"));
    picker.addEventListener("submit", (ev) => {
      ev.preventDefault();
      if (tenant.value.trim()) void show(tenant.value.trim());
    });
  }
  kit.shell("Email layout", picker, editor);
  await show(first);
}

function layoutEditor(kit: Kit, tenant: Tenant): HTMLElement {
  const editable = kit.session.can("tenants.updateLayout");
  const inputs = new Map<LayoutKey, HTMLInputElement>();
  const errors = new Map<string, HTMLElement>();
  let stored: Tenant = tenant;
  const rows = FIELDS.map(([key, label, hint, max]) => {
    const control = h("input", { type: key === "logoUrl" ? "url" : "text", maxlength: max, name: key, autocomplete: "off", value: stored[key] ?? "" });
    control.dataset["path"] = key;
    if (!editable) control.readOnly = true;
    inputs.set(key, control);
    const { row, error } = field(label, control, hint);
    errors.set(key, error);
    return row;
  });
  const out = h("div", { id: "layout-result", "aria-live": "polite" });
  const frameOut = h("div", { className: "email-preview", id: "layout-preview" });

  /** The fields that differ from the stored record; an emptied one is null (clear). */
  function changes(): Layout {
    const patch: Layout = {};
    for (const [key, control] of inputs) {
      const value = control.value.trim();
      if (value !== (stored[key] ?? "")) patch[key] = value === "" ? null : value;
    }
    return patch;
  }
  function clearIssues(): void {
    for (const el of errors.values()) {
      el.hidden = true;
      el.textContent = "";
    }
    for (const control of inputs.values()) control.removeAttribute("aria-invalid");
  }
  function fail(err: unknown, where: HTMLElement): void {
    if (err instanceof ApiError && err.issues.length) {
      const unplaced = err.issues.filter((issue: Issue) => {
        const key = issue.path.map(String).find((p) => errors.has(p));
        const slot = key ? errors.get(key) : undefined;
        if (!key || !slot) return true;
        slot.hidden = false;
        slot.textContent = issue.message;
        inputs.get(key as LayoutKey)?.setAttribute("aria-invalid", "true");
        return false;
      });
      replace(where, h("p", { role: "alert", className: "error" }, unplaced.length ? unplaced.join(" ") : "Fix the marked fields: nothing was saved."));
      document.querySelector<HTMLElement>("#layout-form [aria-invalid]")?.focus();
      return;
    }
    replace(where, kit.errorBox(err));
  }

  const previewBtn: HTMLButtonElement = kit.button("Preview layout", () => {
    clearIssues();
    const layout = changes();
    void kit.guarded(previewBtn, () => kit.api.call("tenants.previewLayout", { tenantId: stored.tenantId, layout }), (err) => fail(err, frameOut)).then((p) => {
      if (!p) return;
      showEmailFrame(frameOut, { ...p, id: "layout-frame", title: `Layout preview: ${p.subject}` },
        h("p", {}, h("strong", {}, "From: "), h("span", { id: "layout-sender" }, p.sender)));
      kit.announce("Layout preview rendered.");
    });
  }, { id: "layout-preview-button" });
  const saveBtn: HTMLButtonElement = kit.button("Save layout", () => {
    clearIssues();
    const layout = changes();
    if (!Object.keys(layout).length) {
      replace(out, h("p", { className: "hint" }, "Nothing changed."));
      return;
    }
    void kit.guarded(saveBtn, () => kit.api.call("tenants.updateLayout", { tenantId: stored.tenantId, ...layout }), (err) => fail(err, out)).then((t) => {
      if (!t) return;
      stored = t;
      replace(out, h("p", { className: "ok" }, `Saved the layout of ${t.name}.`));
      kit.announce("Layout saved.");
    });
  }, { id: "layout-save" });

  return h("div", { className: "layout-editor" },
    h("p", { className: "hint" }, `How ${tenant.name}'s announcement emails look. The email's text comes from each campaign; this is the frame around it.`),
    h("div", { className: "composer-layout" },
      h("form", { id: "layout-form", "aria-label": "Email layout", novalidate: true }, ...rows,
        h("div", { className: "actions" }, previewBtn, editable ? saveBtn : h("p", { className: "hint role-note" }, `Saving needs ${roleName(kit.session.needs("tenants.updateLayout"))}.`)), out),
      h("aside", { className: "previews", "aria-label": "Layout preview" }, h("h2", {}, "Rendered preview"),
        h("p", { className: "hint" }, "A sample email rendered by the server with the layout as typed (not yet saved)."), frameOut)));
}
