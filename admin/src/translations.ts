// The composer's translations: the base content's language, and per language its message,
// notification and email copy beside the base fields, and the labels of the in-app buttons (each the
// base message's button at that position, with only its label translated). A language is a BCP 47 tag (typed, with common
// suggestions); right-to-left languages get right-to-left text fields. What the server does with them
// (the lookup, the fallbacks, the limits) is the API's: this only edits the `translations` map.
import type { EmailCopy, Message, NotificationCopy } from "./api";
import { field, h, uid } from "./dom";

export type Control = HTMLInputElement | HTMLTextAreaElement;
type Translation = { message?: Message | null; notification?: NotificationCopy | null; email?: EmailCopy | null };

/** Suggested in the language picker; any well-formed BCP 47 tag may be typed. */
export const COMMON_LANGUAGES: [string, string][] = [
  ["en", "English"], ["es", "Spanish"], ["fr", "French"], ["de", "German"], ["pt", "Portuguese"], ["it", "Italian"],
  ["nl", "Dutch"], ["pl", "Polish"], ["uk", "Ukrainian"], ["ru", "Russian"], ["tr", "Turkish"], ["ar", "Arabic"],
  ["he", "Hebrew"], ["fa", "Persian"], ["ur", "Urdu"], ["hi", "Hindi"], ["bn", "Bengali"], ["zh", "Chinese"],
  ["ja", "Japanese"], ["ko", "Korean"], ["vi", "Vietnamese"], ["so", "Somali"], ["sw", "Swahili"], ["es-MX", "Spanish (Mexico)"],
];
// Languages written right to left (their primary subtag), as domain/locale.py `direction` knows them.
const RTL = new Set(["ar", "he", "iw", "fa", "ur", "ps", "sd", "ug", "yi", "dv", "ckb", "ku", "syr"]);
/** A well-formed BCP 47 tag, as the language pickers accept one. */
export const TAG = /^[A-Za-z]{2,8}(-[A-Za-z0-9]{1,8})*$/;

export function isRtl(tag: string): boolean {
  return RTL.has((tag.split("-")[0] ?? "").toLowerCase());
}

/** The in-app buttons' label fields: only labels are translated (or given to guardians), by position;
 *  the API refuses anything else. */
export const BUTTON_LABEL_FIELDS: [string, number][] = [0, 1, 2].map((i) => [`message.actions.${i}.label`, i]);

/** One language's text control: its value, ``lang``, and right to left where the language is. */
export function languageControl(tag: string, kind: "input" | "textarea", value: string | null | undefined, rows: number): Control {
  const control: Control = kind === "input" ? h("input", { type: "text" }) : h("textarea", { rows });
  control.value = value ?? "";
  control.lang = tag;
  if (isRtl(tag)) control.dir = "rtl";
  return control;
}

/** One language's fieldset: its fields and a "Remove" button that calls ``removed`` and takes it away. */
export function languageFieldset(tag: string, legend: string, className: string, made: HTMLElement[], what: string, removed: () => void): HTMLElement {
  const remove = h("button", { type: "button", className: "secondary", "aria-label": `Remove ${what} ${tag}` }, `Remove ${tag}`);
  const fieldset = h("fieldset", { className, "data-lang": tag, lang: tag }, h("legend", {}, legend), ...made, remove);
  remove.addEventListener("click", () => {
    fieldset.remove();
    removed();
  });
  return fieldset;
}

/** ``own``'s buttons (the base message's), each labelled by its field where one is typed. */
export function labelledActions(own: Message["actions"] | undefined, label: (i: number) => string): NonNullable<Message["actions"]> {
  return (own ?? []).map((a, i) => ({ ...a, label: label(i) || a.label }));
}

/** The parts of the base content a translation keeps (everything but its words). */
export interface Base {
  message(): Message | undefined;
  email(): EmailCopy | undefined;
}

export interface TranslationsEditor {
  element: HTMLElement;
  locale: HTMLInputElement;
  read(): Record<string, Translation>;
  tags(): string[];
  /** Each translated control by issue path (`translations.es.email.subject`), for the API's field errors. */
  controls: Map<string, Control>;
}

interface Row {
  tag: string;
  fieldset: HTMLElement;
  fields: Record<string, Control>;
}

const FIELDS: [string, string, "input" | "textarea"][] = [
  ["message.title", "In-app title", "input"], ["message.body", "In-app body", "textarea"],
  ["notification.title", "Notification title", "input"], ["notification.body", "Notification body", "textarea"],
  ["email.subject", "Email subject", "input"], ["email.title", "Email heading", "input"],
  ["email.body", "Email body", "textarea"], ["email.ctaLabel", "Email button label", "input"],
  ...BUTTON_LABEL_FIELDS.map(([key, i]): [string, string, "input"] => [key, `In-app button ${i + 1} label`, "input"]),
];

function value(c: Control | undefined): string {
  return c ? c.value.trim() : "";
}

export function translationsEditor(
  locale: string,
  existing: Record<string, Translation>,
  base: Base,
  register: (path: string, error: HTMLElement) => void,
  changed: () => void,
): TranslationsEditor {
  const rows: Row[] = [];
  const controls = new Map<string, Control>();
  const list = h("div", { className: "translations", id: "translations" });
  const baseLocale = h("input", { type: "text", maxlength: 35, value: locale, list: "language-suggestions", spellcheck: "false", autocomplete: "off", id: "base-locale" });
  baseLocale.dataset["path"] = "locale";
  const datalist = h("datalist", { id: "language-suggestions" }, ...COMMON_LANGUAGES.map(([tag, name]) => h("option", { value: tag }, name)));
  const picker = h("input", { type: "text", maxlength: 35, list: "language-suggestions", spellcheck: "false", autocomplete: "off", id: "add-language", placeholder: "es, ar, fr-CA…" });
  const pickerError = h("p", { className: "field-error", id: "add-language-error", role: "alert", hidden: true });
  picker.setAttribute("aria-describedby", pickerError.id);
  const addBtn = h("button", { type: "button", id: "add-language-button" }, "Add language");

  function addRow(tag: string, t: Translation = {}): void {
    const rtl = isRtl(tag);
    const fields: Record<string, Control> = {};
    const present: Record<string, string | undefined> = {
      "message.title": t.message?.title, "message.body": t.message?.body ?? undefined,
      "notification.title": t.notification?.title, "notification.body": t.notification?.body,
      "email.subject": t.email?.subject, "email.title": t.email?.title, "email.body": t.email?.body, "email.ctaLabel": t.email?.ctaLabel,
      ...Object.fromEntries((t.message?.actions ?? []).map((a, i) => [`message.actions.${i}.label`, a.label])),
    };
    const rowsOut = FIELDS.map(([key, label, kind]) => {
      const control = languageControl(tag, kind, present[key], 3);
      control.id = uid(`tr-${tag}`);
      control.dataset["lang"] = tag;
      control.dataset["field"] = key;
      control.addEventListener("input", changed);
      const path = `translations.${tag}.${key}`;
      control.dataset["path"] = path;
      controls.set(path, control);
      fields[key] = control;
      const made = field(`${label} (${tag})`, control);
      register(path, made.error);
      return made.row;
    });
    const fieldset = languageFieldset(tag, `${tag}${rtl ? " (right to left)" : ""}`, "translation", rowsOut, "language", () => {
      rows.splice(rows.indexOf(row), 1);
      for (const key of Object.keys(fields)) controls.delete(`translations.${tag}.${key}`);
      changed();
    });
    const row: Row = { tag, fieldset, fields };
    rows.push(row);
    list.appendChild(fieldset);
  }

  addBtn.addEventListener("click", () => {
    const tag = picker.value.trim();
    const problem = !TAG.test(tag) ? "Type a language tag like es, ar or fr-CA."
      : tag.toLowerCase() === baseLocale.value.trim().toLowerCase() ? `${tag} is the base content's language.`
      : rows.some((r) => r.tag.toLowerCase() === tag.toLowerCase()) ? `${tag} is already here.` : "";
    pickerError.hidden = !problem;
    pickerError.textContent = problem;
    if (problem) return;
    picker.value = "";
    addRow(tag);
    changed();
    rows[rows.length - 1]?.fieldset.querySelector<HTMLElement>("input, textarea")?.focus();
  });
  for (const [tag, t] of Object.entries(existing)) addRow(tag, t);

  function read(): Record<string, Translation> {
    const out: Record<string, Translation> = {};
    for (const { tag, fields } of rows) {
      const t: Translation = {};
      const baseMessage = base.message();
      const mt = value(fields["message.title"]);
      if (mt) {
        const m: Message = { ...(baseMessage ?? {}), title: mt };
        // The base message's buttons, each with its label in this language (else the base label).
        m.actions = labelledActions(baseMessage?.actions, (i) => value(fields[`message.actions.${i}.label`]));
        const mb = value(fields["message.body"]);
        if (mb) m.body = mb;
        else delete m.body;
        t.message = m;
      }
      const nt = value(fields["notification.title"]);
      const nb = value(fields["notification.body"]);
      if (nt || nb) t.notification = { title: nt, body: nb };
      const es = value(fields["email.subject"]);
      const eb = value(fields["email.body"]);
      if (es || eb) {
        const hero = base.email()?.heroImageUrl;
        t.email = { subject: es, title: value(fields["email.title"]), body: eb, ctaLabel: value(fields["email.ctaLabel"]) };
        if (hero) t.email.heroImageUrl = hero;
      }
      out[tag] = t;
    }
    return out;
  }

  const baseRow = field("Base content language", baseLocale, "The language the fields above are written in (BCP 47, e.g. en).");
  register("locale", baseRow.error);
  baseLocale.addEventListener("input", changed);
  const pickerRow = h("div", { className: "field" }, h("label", { for: picker.id }, "Add a translation"), picker, addBtn, pickerError);
  const element = h("fieldset", { id: "translations-editor" }, h("legend", {}, "Translations"),
    h("p", { className: "hint" }, "Each recipient gets the language closest to their profile's locale (es-MX takes es-MX, else es, else the base). A channel left empty here falls back to the base content."),
    baseRow.row, datalist, pickerRow, list);
  return { element, locale: baseLocale, read, tags: () => rows.map((r) => r.tag), controls };
}
