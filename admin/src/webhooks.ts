// Event webhooks (#/webhooks), for the admins of the tenant in view (a platform admin acting in it,
// acting.ts): the tenant's endpoints (webhookEndpoints.list), a new one with its URL and the event types
// it takes (create), its events and whether it is enabled (update), delete, a new signing secret
// (rotateSecret), and its recent deliveries with Replay (webhook_deliveries.ts). A secret is shown once,
// after create or rotate, with a copy button: the server keeps it sealed and never answers it again.
// Controls follow the server's access table, so a role without a procedure sees no control for it.
import { roleName } from "./access";
import { ApiError, type WebhookEndpoint } from "./api";
import { field, h, replace, uid } from "./dom";
import type { Kit } from "./kit";
import { timeEl } from "./time";
import { deliveriesSection, redrawRows } from "./webhook_deliveries";

/** The event types webhookEndpoints.create accepts (domain/webhook_events.py's EVENT_TYPES; a unit
 *  test holds the two lists equal), `*` aside: "All events". */
export const EVENT_TYPES = [
  "dispatch.started", "dispatch.paused", "dispatch.resumed", "dispatch.completed", "dispatch.failed", "dispatch.late",
  "recipient.notified", "recipient.emailed", "recipient.email_rejected", "recipient.email_clicked",
  "recipient.bounced", "recipient.complained", "recipient.unsubscribed",
  "campaign.created", "campaign.updated", "campaign.status_changed", "campaign.deleted",
  "approval.requested", "approval.granted",
] as const;
type EventType = (typeof EVENT_TYPES)[number];
const ALL = "*";

/** The events an endpoint takes, in words. */
function eventsText(events: string[]): string {
  return events.includes(ALL) ? "All events" : events.join(", ");
}

/** Checkboxes for "All events" and each type; `chosen()` is what to send (null: none chosen). */
type Chosen = [string, ...string[]];
function eventPicker(legend: string, initial: string[]): { fieldset: HTMLFieldSetElement; chosen: () => Chosen | null } {
  const all = h("input", { type: "checkbox", name: "events-all", id: uid("ev"), checked: initial.includes(ALL) });
  const boxes = EVENT_TYPES.map((t) => h("input", { type: "checkbox", name: "events", value: t, id: uid("ev"), checked: initial.includes(t) }));
  const sync = (): void => {
    for (const box of boxes) box.disabled = all.checked;
  };
  all.addEventListener("change", sync);
  sync();
  const row = (box: HTMLInputElement, text: Node | string, wide = false): HTMLElement =>
    h("div", { className: wide ? "check all" : "check" }, box, h("label", { for: box.id }, text));
  const fieldset = h("fieldset", { className: "event-types" }, h("legend", {}, legend),
    row(all, "All events, including types added later", true),
    ...boxes.map((box) => row(box, h("code", {}, box.value))));
  const chosen = (): Chosen | null => {
    if (all.checked) return [ALL];
    const [first, ...rest] = boxes.filter((b) => b.checked).map((b) => b.value as EventType);
    return first === undefined ? null : [first, ...rest];
  };
  return { fieldset, chosen };
}

/** The secret's only appearance: a read-only field to select, a copy button, a way to put it away. */
function showSecretOnce(kit: Kit, where: HTMLElement, secret: string, heading: string): void {
  const box = h("input", { type: "text", readonly: true, value: secret, id: "webhook-secret", spellcheck: "false", autocomplete: "off" });
  const copied = h("span", { className: "muted", "aria-live": "polite" });
  const copy = kit.button("Copy secret", () => {
    box.select();
    const done = (): void => {
      copied.textContent = "Copied.";
    };
    if (navigator.clipboard) navigator.clipboard.writeText(secret).then(done, () => (document.execCommand("copy") ? done() : (copied.textContent = "Select the secret and copy it.")));
    else if (document.execCommand("copy")) done();
  });
  const hide = kit.button("I have stored it, hide the secret", () => {
    replace(where);
    kit.announce("The secret is hidden; it cannot be shown again.");
  });
  replace(where, h("div", { role: "alert", className: "notice key-once", id: "webhook-secret-once" },
    h("p", {}, h("strong", {}, `${heading} This is the only time the signing secret is shown. `), "Give it to the receiving system now: it verifies every event's Standard Webhooks signature with it. The server keeps it sealed and cannot show it again; if it is lost, rotate it."),
    field("Signing secret", box).row, h("div", { className: "actions" }, copy, hide, copied)));
  box.focus();
  box.select();
}

/** An API refusal: a field issue on its field (the URL, the events), anything else in the box. */
function failed(kit: Kit, err: unknown, out: HTMLElement, slots: Record<string, HTMLElement>): void {
  for (const slot of Object.values(slots)) replace(slot);
  if (err instanceof ApiError && err.code === "BAD_REQUEST" && err.issues.length) {
    const left = err.issues.filter((issue) => {
      const slot = slots[String(issue.path[0] ?? "")];
      if (slot) append(slot, issue.message);
      return !slot;
    });
    replace(out, h("p", { role: "alert", className: "error" }, left.length ? left.map((i) => i.message).join(" ") : "Fix the marked fields: nothing was saved."));
    return;
  }
  replace(out, kit.errorBox(err));
}
function append(slot: HTMLElement, message: string): void {
  slot.hidden = false;
  slot.textContent = slot.textContent ? `${slot.textContent} ${message}` : message;
}

export async function renderWebhooks(kit: Kit): Promise<void> {
  const tenantId = kit.session.me.tenantId;
  if (!kit.can("webhookEndpoints.list")) {
    kit.shell("Event webhooks", h("p", { className: "hint role-note" }, `Event webhooks need ${roleName(kit.session.needs("webhookEndpoints.list"))}.`));
    return;
  }
  const mine = kit.generation();
  const body = h("tbody", {});
  const out = h("div", { id: "webhooks-result", "aria-live": "polite" });
  const secretSlot = h("div", { id: "webhook-secret-slot" });
  const panel = h("div", { id: "webhook-endpoint" });
  let open: string | null = null;
  let endpoints: WebhookEndpoint[] = [];
  let listed = false;

  const load = async (): Promise<void> => {
    const list = await kit.guarded(null, () => kit.api.call("webhookEndpoints.list", undefined), (err) => replace(out, kit.errorBox(err)));
    if (!list || mine !== kit.generation()) return;
    const same = listed && JSON.stringify(list.records) === JSON.stringify(endpoints);
    endpoints = list.records;
    listed = true;
    if (same) return; // nothing new: the rows (and the focus in them) stay
    redrawRows(body, endpoints.map(endpointRow));
    if (!endpoints.length) body.appendChild(h("tr", {}, h("td", { colspan: 6 }, "No endpoints yet.")));
    if (open && !endpoints.some((e) => e.id === open)) {
      open = null;
      replace(panel);
    }
  };
  const state = (e: WebhookEndpoint): string => {
    if (!e.enabled) return e.disabledReason ? `Disabled: ${e.disabledReason}` : "Disabled";
    if (e.failures) return `Enabled, failing: ${e.failures} failed attempt${e.failures === 1 ? "" : "s"} in a row${e.lastStatus ? ` (last HTTP ${e.lastStatus})` : ""}`;
    return "Enabled";
  };
  const endpointRow = (e: WebhookEndpoint): HTMLElement =>
    h("tr", { "data-endpoint": e.id, "data-state": e.enabled ? "enabled" : "disabled", "aria-current": e.id === open ? "true" : null },
      h("th", { scope: "row" }, h("span", { className: "url" }, e.url), e.description ? h("small", { className: "muted" }, h("br", {}), e.description) : null),
      h("td", { "data-field": "events", "data-label": "Events" }, eventsText(e.events)),
      h("td", { "data-field": "state", "data-label": "State" }, state(e)),
      h("td", { "data-field": "pending", "data-label": "Waiting" }, String(e.pending ?? 0)),
      h("td", { "data-label": "Created" }, timeEl(e.createdAt)),
      h("td", {}, kit.button("Manage", () => show(e.id), { "aria-label": `Manage ${e.url}` })));

  function show(id: string): void {
    const e = endpoints.find((x) => x.id === id);
    if (!e) return;
    open = id;
    redrawRows(body, endpoints.map(endpointRow));
    const deliveries = deliveriesSection(kit, id, () => void load());
    replace(panel, endpointPanel(kit, e, { reload: load, secretSlot, deliveries: deliveries.section }));
    deliveries.watch();
    panel.querySelector<HTMLElement>("h2")?.focus();
  }

  kit.shell("Event webhooks",
    h("p", { className: "hint" }, `The systems tenant ${tenantId} tells what happens: each subscribed event is POSTed to the endpoint, signed per Standard Webhooks with its secret, retried until it answers 2xx.`),
    secretSlot,
    h("div", { className: "table-wrap" }, h("table", { id: "webhooks-table", className: "stacked" }, h("caption", {}, `Endpoints of ${tenantId}`),
      h("thead", {}, h("tr", {}, ...["URL", "Events", "State", "Waiting", "Created", ""].map((t) => h("th", { scope: "col" }, t)))), body)),
    out, panel,
    kit.can("webhookEndpoints.create") ? createForm(kit, secretSlot, async (id) => {
      await load();
      show(id);
    }) : null);
  await load();
}

function createForm(kit: Kit, secretSlot: HTMLElement, created: (id: string) => Promise<void>): HTMLElement {
  const url = h("input", { type: "url", name: "webhook-url", autocomplete: "off", spellcheck: "false", required: true, placeholder: "https://crm.school.example/hooks" });
  const description = h("input", { type: "text", name: "webhook-description", autocomplete: "off", maxlength: 500 });
  const urlRow = field("Endpoint URL", url, "Where the events are POSTed: https, on the ports this deployment allows.");
  const picker = eventPicker("Events to send", []);
  const eventsError = h("p", { className: "field-error", id: uid("events-error"), hidden: true });
  const out = h("div", { id: "webhook-create-result", "aria-live": "polite" });
  const create: HTMLButtonElement = kit.button("Create endpoint", () => {
    const events = picker.chosen();
    for (const slot of [urlRow.error, eventsError]) replace(slot);
    urlRow.error.hidden = eventsError.hidden = true;
    if (!url.value.trim() || !events) {
      if (!url.value.trim()) append(urlRow.error, "The endpoint URL is required.");
      if (!events) append(eventsError, "Choose at least one event, or All events.");
      replace(out, h("p", { role: "alert", className: "error" }, "Fix the marked fields: nothing was created."));
      return;
    }
    const input = { url: url.value.trim(), events, ...(description.value.trim() ? { description: description.value.trim() } : {}) };
    void kit.guarded(create, () => kit.api.call("webhookEndpoints.create", input), (err) => failed(kit, err, out, { url: urlRow.error, events: eventsError })).then(async (made) => {
      if (!made) return;
      url.value = description.value = "";
      for (const box of picker.fieldset.querySelectorAll("input")) {
        box.checked = false;
        box.disabled = false;
      }
      replace(out);
      await created(made.id);
      showSecretOnce(kit, secretSlot, made.secret, `Endpoint ${input.url} created.`);
      kit.announce("Endpoint created; its signing secret is shown once.");
    });
  }, { id: "webhook-create" });
  return h("section", { id: "webhook-create-form", "aria-labelledby": "webhook-create-h" },
    h("h2", { id: "webhook-create-h" }, "New endpoint"),
    urlRow.row, field("Description (optional)", description).row, picker.fieldset, eventsError,
    h("div", { className: "actions" }, create), out);
}

interface PanelParts {
  reload: () => Promise<void>;
  secretSlot: HTMLElement;
  deliveries: HTMLElement;
}

/** One endpoint: its events and state to edit, a new secret, delete, and its deliveries. */
function endpointPanel(kit: Kit, e: WebhookEndpoint, parts: PanelParts): HTMLElement {
  const out = h("div", { id: "webhook-endpoint-result", "aria-live": "polite" });
  const canEdit = kit.can("webhookEndpoints.update");
  const picker = eventPicker("Events to send", e.events);
  const enabled = h("input", { type: "checkbox", name: "webhook-enabled", id: uid("en"), checked: e.enabled });
  const eventsError = h("p", { className: "field-error", hidden: true });
  if (!canEdit) for (const input of [...picker.fieldset.querySelectorAll("input"), enabled]) input.disabled = true;

  const save: HTMLButtonElement = kit.button("Save endpoint", () => {
    const events = picker.chosen();
    replace(eventsError);
    eventsError.hidden = true;
    if (!events) {
      append(eventsError, "Choose at least one event, or All events.");
      return;
    }
    const same = events.length === e.events.length && events.every((t) => e.events.includes(t));
    const input = { id: e.id, ...(same ? {} : { events }), ...(enabled.checked !== e.enabled ? { enabled: enabled.checked } : {}) };
    if (Object.keys(input).length === 1) {
      replace(out, h("p", { className: "hint" }, "Nothing changed."));
      return;
    }
    void kit.guarded(save, () => kit.api.call("webhookEndpoints.update", input), (err) => failed(kit, err, out, { events: eventsError })).then(async (saved) => {
      if (!saved) return;
      e = saved;
      const said = `Saved: ${saved.enabled ? "enabled" : "disabled"}, ${eventsText(saved.events)}.`;
      replace(out, h("p", { className: "ok" }, said));
      kit.announce(said);
      await parts.reload();
    });
  }, { id: "webhook-save" });
  const rotate: HTMLButtonElement = kit.button("Rotate secret", () => {
    if (!confirm(`Rotate the signing secret of ${e.url}? The new secret is shown once; the old one keeps signing beside it for 24 hours, so the receiver can switch.`)) return;
    void kit.guarded(rotate, () => kit.api.call("webhookEndpoints.rotateSecret", { id: e.id }), (err) => replace(out, kit.errorBox(err))).then((r) => {
      if (!r) return;
      replace(out);
      showSecretOnce(kit, parts.secretSlot, r.secret, `New secret for ${e.url}.`);
      kit.announce("Secret rotated; the new one is shown once.");
    });
  }, { id: "webhook-rotate" });
  const remove: HTMLButtonElement = kit.button("Delete endpoint", () => {
    if (!confirm(`Delete the endpoint ${e.url}? Its queued events and its delivery history are deleted with it.`)) return;
    void kit.guarded(remove, () => kit.api.call("webhookEndpoints.delete", { id: e.id }), (err) => replace(out, kit.errorBox(err))).then(async (ok) => {
      if (!ok) return;
      kit.announce(`Deleted the endpoint ${e.url}.`);
      await parts.reload();
      const result = document.getElementById("webhooks-result");
      if (result) replace(result, h("p", { className: "ok" }, `Deleted the endpoint ${e.url}.`));
    });
  }, { id: "webhook-delete", className: "danger" });

  return h("section", { className: "webhook-endpoint", "data-endpoint": e.id, "aria-labelledby": "webhook-endpoint-h" },
    h("h2", { id: "webhook-endpoint-h", tabindex: "-1" }, `Endpoint ${e.url}`),
    h("p", { className: "hint" }, "Created ", timeEl(e.createdAt), e.lastAttemptAt ? h("span", {}, "; last attempt ", timeEl(e.lastAttemptAt)) : null, "."),
    h("form", { id: "webhook-edit", "aria-label": "Endpoint settings", novalidate: true, onsubmit: ((ev: Event) => ev.preventDefault()) as EventListener },
      picker.fieldset, eventsError,
      h("div", { className: "check field" }, enabled, h("label", { for: enabled.id }, "Enabled (off pauses it; on resumes one disabled by failures, from its oldest waiting event)")),
      h("div", { className: "actions" },
        canEdit ? save : null,
        kit.can("webhookEndpoints.rotateSecret") ? rotate : null,
        kit.can("webhookEndpoints.delete") ? remove : null)),
    out, parts.deliveries);
}
