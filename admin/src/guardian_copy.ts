// The composer's copy for guardians (minors: guardians; docs/guardians.md): what a guardian reached in
// a child's place reads per channel (in-app, notification, email) in the base language, the same per
// language (`guardianCopy.translations`), and a preview of what a guardian reads on each channel in a
// chosen language. A guardian's language is picked by the one rule (served_locale) over the guardian
// copy's own languages where it has that channel; a channel it leaves out is the campaign's own copy.
// The guardians' in-app message has the campaign's buttons, each with a label of its own where one is
// typed (and per language: the API holds them to the campaign's actions, in order). Fields the API
// set that the form does not edit (an in-app message's presentation, a hero image) are kept on save.
import type { Definition, EmailCopy, Message, NotificationCopy } from "./api";
import { h, replace } from "./dom";
import { BUTTON_LABEL_FIELDS, type Control, TAG, isRtl, labelledActions, languageControl, languageFieldset } from "./translations";

type GuardianCopy = NonNullable<Definition["guardianCopy"]>;
type Copy = { message?: Message | null; notification?: NotificationCopy | null; email?: EmailCopy | null };
/** The composer's `add`: a labelled field registered for the API's errors at `path`. */
type Add = (path: string, label: string, control: Control) => HTMLElement;

const FIELDS: [string, string, "input" | "textarea"][] = [
  ["message.title", "in-app title", "input"], ["message.body", "in-app body", "textarea"],
  ["notification.title", "notification title", "input"], ["notification.body", "notification body", "textarea"],
  ["email.subject", "email subject", "input"], ["email.title", "email heading", "input"],
  ["email.body", "email body", "textarea"], ["email.ctaLabel", "email button label", "input"],
  ...BUTTON_LABEL_FIELDS.map(([key, i]): [string, string, "input"] => [key, `in-app button ${i + 1} label`, "input"]),
];

/** A copy's field values by FIELDS key (the in-app buttons' labels by position). */
function valuesOf(c: Copy | undefined): Record<string, string | null | undefined> {
  return {
    "message.title": c?.message?.title, "message.body": c?.message?.body,
    "notification.title": c?.notification?.title, "notification.body": c?.notification?.body,
    "email.subject": c?.email?.subject, "email.title": c?.email?.title, "email.body": c?.email?.body, "email.ctaLabel": c?.email?.ctaLabel,
    ...Object.fromEntries((c?.message?.actions ?? []).map((a, i) => [`message.actions.${i}.label`, a.label])),
  };
}

export interface GuardianCopyEditor {
  element: HTMLElement;
  /** The guardian copy as typed over what the API stored; null when nothing is typed. */
  read(): GuardianCopy | null;
  /** Redraws the preview (the composer calls it on every change). */
  render(): void;
}

function trimmed(c: Control | undefined): string {
  return c ? c.value.trim() : "";
}

/** One copy's fields read over `kept` (what the API stored for it), each channel only when typed; the
 *  in-app message's buttons are `baseMessage`'s (the campaign's, or the guardian copy's for a language)
 *  with the labels typed here. */
function readCopy(fields: Record<string, Control>, kept: Copy | undefined, baseMessage: Message | undefined): Copy {
  const out: Copy = {};
  const title = trimmed(fields["message.title"]);
  if (title) {
    const m: Message = { ...(kept?.message ?? baseMessage ?? {}), title };
    m.actions = labelledActions(baseMessage?.actions, (i) => trimmed(fields[`message.actions.${i}.label`]));
    const body = trimmed(fields["message.body"]);
    if (body) m.body = body;
    else delete m.body;
    out.message = m;
  }
  const nt = trimmed(fields["notification.title"]);
  const nb = trimmed(fields["notification.body"]);
  if (nt || nb) out.notification = { title: nt, body: nb };
  const email = ["email.subject", "email.title", "email.body", "email.ctaLabel"].map((k) => trimmed(fields[k]));
  if (email.some(Boolean)) {
    const [subject = "", heading = "", body = "", ctaLabel = ""] = email;
    out.email = { ...(kept?.email ?? {}), subject, title: heading, body, ctaLabel };
  }
  return out;
}

/** served_locale's lookup (RFC 4647 §3.4): the tag whole, then shorter, else the base. */
export function servedTag(requested: string, base: string, tags: string[]): string {
  const known = new Map(tags.map((t) => [t.toLowerCase(), t]));
  const parts = requested.toLowerCase().replace(/_/g, "-").split("-");
  while (parts.length) {
    const hit = known.get(parts.join("-"));
    if (hit) return hit;
    parts.pop();
  }
  return base;
}

/** `gc`: the stored guardian copy; `campaign()`: the definition as typed (for its own copy and
 *  languages; it reads this editor too); `campaignMessage()`: its in-app message alone, which a new
 *  guardian message starts from (presentation, buttons). */
export function guardianCopyEditor(gc: GuardianCopy | undefined, add: Add, campaign: () => Definition,
  campaignMessage: () => Message | undefined, changed: () => void): GuardianCopyEditor {
  const base: Record<string, Control> = {};
  const present = valuesOf(gc ?? undefined);
  const baseRows = FIELDS.map(([key, label, kind]) => {
    const control: Control = kind === "input" ? h("input", { type: "text" }) : h("textarea", { rows: key === "email.body" ? 4 : 2 });
    control.value = present[key] ?? ""; // in the campaign's base language, as typed above
    base[key] = control;
    return add(`guardianCopy.${key}`, `Guardians' ${label}`, control);
  });

  const rows = new Map<string, Record<string, Control>>();
  const list = h("div", { id: "guardian-translations" });
  const picker = h("input", { type: "text", maxlength: 35, list: "language-suggestions", spellcheck: "false", autocomplete: "off", id: "guardian-add-language", placeholder: "es, ar, fr-CA…" });
  const pickerError = h("p", { className: "field-error", id: "guardian-add-language-error", role: "alert", hidden: true });
  picker.setAttribute("aria-describedby", pickerError.id);
  const addBtn = h("button", { type: "button", id: "guardian-add-language-button" }, "Add guardian language");

  function addRow(tag: string, t: Copy = {}): void {
    const fields: Record<string, Control> = {};
    const values = valuesOf(t);
    const made = FIELDS.map(([key, label, kind]) => {
      const control = languageControl(tag, kind, values[key], 2);
      fields[key] = control;
      return add(`guardianCopy.translations.${tag}.${key}`, `Guardians' ${label} (${tag})`, control);
    });
    const fieldset = languageFieldset(tag, `Guardians, ${tag}`, "translation guardian-translation", made, "guardian language", () => {
      rows.delete(tag);
      changed();
    });
    rows.set(tag, fields);
    list.appendChild(fieldset);
  }
  for (const [tag, t] of Object.entries(gc?.translations ?? {})) addRow(tag, t ?? {});
  addBtn.addEventListener("click", () => {
    const tag = picker.value.trim();
    const baseTag = campaign().locale ?? "en";
    const problem = !TAG.test(tag) ? "Type a language tag like es, ar or fr-CA."
      : tag.toLowerCase() === baseTag.toLowerCase() ? `${tag} is the base language: the fields above are in it.`
      : [...rows.keys()].some((r) => r.toLowerCase() === tag.toLowerCase()) ? `${tag} is already here.` : "";
    pickerError.hidden = !problem;
    pickerError.textContent = problem;
    if (problem) return;
    picker.value = "";
    addRow(tag);
    changed();
    list.lastElementChild?.querySelector<HTMLElement>("input, textarea")?.focus();
  });

  function read(): GuardianCopy | null {
    const copy: GuardianCopy = { ...readCopy(base, gc ?? undefined, campaignMessage()) };
    const translations: Record<string, Copy> = {};
    for (const [tag, fields] of rows) translations[tag] = readCopy(fields, gc?.translations?.[tag] ?? undefined, copy.message ?? undefined);
    if (rows.size) copy.translations = translations as NonNullable<GuardianCopy["translations"]>;
    return copy.message || copy.notification || copy.email ? copy : null;
  }

  // The preview: what a guardian of the chosen language reads on each channel, and from which copy.
  const previewLang = h("select", { id: "guardian-preview-language" });
  const previewOut = h("div", { id: "guardian-preview", "aria-live": "polite" });
  previewLang.addEventListener("change", render);
  function render(): void {
    const def = campaign();
    const baseTag = def.locale ?? "en";
    const copy = read() ?? {};
    const offered = [baseTag, ...new Set([...Object.keys(copy.translations ?? {}), ...Object.keys(def.translations ?? {})])];
    const chosen = offered.includes(previewLang.value) ? previewLang.value : baseTag;
    replace(previewLang, ...offered.map((t) => h("option", { value: t }, t)));
    previewLang.value = chosen;
    const channel = (field: "message" | "notification" | "email", name: string, words: (c: never) => (string | null | undefined)[]): HTMLElement => {
      const own = copy[field];
      const source: Copy = own ? copy : def;
      const translated = (own ? copy.translations : def.translations) ?? {};
      const tags = Object.entries(translated).filter(([, t]) => t?.[field]).map(([t]) => t);
      const tag = servedTag(chosen, baseTag, tags);
      const content = tag === baseTag ? source[field] : translated[tag]?.[field];
      const from = own ? "the guardian copy" : "the campaign's own copy (the guardian copy has none for it)";
      return h("div", { className: "guardian-preview-channel", "data-channel": field, "data-served": tag, "data-source": own ? "guardian" : "campaign" },
        h("h4", {}, `${name}, in ${tag}: ${from}`),
        content ? h("div", { lang: tag, dir: isRtl(tag) ? "rtl" : "ltr" }, ...words(content as never).filter(Boolean).map((w) => h("p", {}, w ?? ""))) : h("p", { className: "muted" }, "Nothing on this channel."));
    };
    const channels = def.channels ?? [];
    replace(previewOut,
      channels.includes("inApp") ? channel("message", "In-app card", (m: Message) => [m.title, m.body, ...(m.actions ?? []).map((a) => `[${a.label}]`)]) : null,
      channels.includes("notify") ? channel("notification", "Notification", (n: NotificationCopy) => [n.title, n.body]) : null,
      channels.includes("email") ? channel("email", "Email", (e: EmailCopy) => [`Subject: ${e.subject}`, e.title, e.body, `[${e.ctaLabel}]`]) : null,
      h("p", { className: "hint" }, "A guardian reads exactly this: the copy has no placeholders, so nothing fills in a child's name or data. Make sure the words above never name the child."));
  }

  const element = h("fieldset", { id: "guardian-copy" }, h("legend", {}, "Copy for guardians (optional; otherwise they read the copy above)"),
    h("p", { className: "hint" }, "Guardians read this instead of the campaign's copy. Never name the child or carry learner data: it goes to inboxes and mail providers."),
    ...baseRows,
    h("h3", {}, "In other languages"),
    h("p", { className: "hint" }, "A guardian reads the language closest to their own here; without it, the guardian copy above."),
    h("div", { className: "field" }, h("label", { for: picker.id }, "Add a guardian translation"), picker, addBtn, pickerError),
    list,
    h("h3", {}, "What a guardian reads"),
    h("div", { className: "field" }, h("label", { for: previewLang.id }, "A guardian whose language is"), previewLang),
    previewOut);
  return { element, read, render };
}
