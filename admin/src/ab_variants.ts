// The composer's A/B content variants: two to four arms, each with an id, a weight and the
// copy fields it overrides, in the base language and in each translated one. The merge (each field it
// sets over the base copy of the reader's language; a field left empty is that language's own) and the
// assignment are the API's: this only edits the `variants` list, and the API's field errors land beside
// these fields.
import type { ContentVariant, EmailCopy, EmailOverride, Message, MessageOverride, NotificationOverride } from "./api";
import { field, h, uid } from "./dom";

type Control = HTMLInputElement | HTMLTextAreaElement;
type Copy = { message?: MessageOverride | null; notification?: NotificationOverride | null; email?: EmailOverride | null };

/** What a variant keeps of the base content besides its words (message presentation, hero image). */
export interface VariantBase {
  message(): Message | undefined;
  email(): EmailCopy | undefined;
  /** The base language first, then each translated one. */
  languages(): string[];
}

export interface VariantsEditor {
  element: HTMLElement;
  /** The variants as typed, or null when there are none (which clears them on update). */
  read(): ContentVariant[] | null;
}

const FIELDS: [string, string, "input" | "textarea"][] = [
  ["message.title", "In-app title", "input"],
  ["notification.title", "Notification title", "input"], ["notification.body", "Notification body", "textarea"],
  ["email.subject", "Email subject", "input"], ["email.title", "Email heading", "input"],
  ["email.body", "Email body", "textarea"], ["email.ctaLabel", "Email button label", "input"],
];

interface Row {
  fieldset: HTMLElement;
  id: HTMLInputElement;
  weight: HTMLInputElement;
  /** Per language (the base first), each field's control. */
  copy: Map<string, Record<string, Control>>;
}

function value(c: Control | undefined): string {
  return c ? c.value.trim() : "";
}

function present(copy: Copy | undefined): Record<string, string | null | undefined> {
  return {
    "message.title": copy?.message?.title, "notification.title": copy?.notification?.title,
    "notification.body": copy?.notification?.body, "email.subject": copy?.email?.subject,
    "email.title": copy?.email?.title, "email.body": copy?.email?.body, "email.ctaLabel": copy?.email?.ctaLabel,
  };
}

export function variantsEditor(
  existing: ContentVariant[],
  base: VariantBase,
  register: (path: string, error: HTMLElement) => void,
  changed: () => void,
): VariantsEditor {
  const rows: Row[] = [];
  const list = h("div", { className: "variants", id: "variants" });
  const addBtn = h("button", { type: "button", id: "add-variant-button" }, "Add variant");

  function renumber(): void {
    addBtn.disabled = rows.length >= 4;
  }

  function languageBlock(row: Row, index: number, tag: string, isBase: boolean, copy: Copy | undefined): HTMLElement {
    const controls: Record<string, Control> = {};
    const shown = present(copy);
    const prefix = isBase ? `variants.${index}` : `variants.${index}.translations.${tag}`;
    const made = FIELDS.map(([key, label, kind]) => {
      const control: Control = kind === "input" ? h("input", { type: "text" }) : h("textarea", { rows: 2 });
      control.value = shown[key] ?? "";
      control.lang = tag;
      control.id = uid(`variant-${index}-${tag}`);
      control.dataset["variantField"] = key;
      control.dataset["lang"] = tag;
      control.dataset["path"] = `${prefix}.${key}`;
      control.addEventListener("input", changed);
      controls[key] = control;
      const f = field(`${label} (${tag})`, control);
      register(`${prefix}.${key}`, f.error);
      return f.row;
    });
    row.copy.set(tag, controls);
    return h("fieldset", { className: "variant-language", "data-lang": tag }, h("legend", {}, isBase ? `${tag} (base)` : tag), ...made);
  }

  function addRow(v: ContentVariant | undefined): void {
    const index = rows.length;
    const id = h("input", { type: "text", maxlength: 32, spellcheck: "false", autocomplete: "off", value: v?.id ?? String.fromCharCode(65 + index), className: "variant-id" });
    id.id = uid("variant-id");
    id.dataset["path"] = `variants.${index}.id`;
    const weight = h("input", { type: "number", min: 1, max: 10000, step: 1, value: String(v?.weight ?? 1), className: "variant-weight" });
    weight.id = uid("variant-weight");
    weight.dataset["path"] = `variants.${index}.weight`;
    for (const c of [id, weight]) c.addEventListener("input", changed);
    const row: Row = { fieldset: h("fieldset", {}), id, weight, copy: new Map() };
    const idField = field("Variant id", id, "Letters, digits, _ or -; unique.");
    const weightField = field("Weight", weight, "Its share of the recipients relative to the others.");
    register(`variants.${index}.id`, idField.error);
    register(`variants.${index}.weight`, weightField.error);
    const [baseTag, ...tags] = base.languages();
    const blocks = [
      languageBlock(row, index, baseTag ?? "en", true, v),
      ...tags.map((tag) => languageBlock(row, index, tag, false, v?.translations?.[tag] as Copy | undefined)),
    ];
    const remove = h("button", { type: "button", className: "secondary remove-variant" }, "Remove variant");
    row.fieldset = h("fieldset", { className: "variant", "data-variant": index },
      h("legend", {}, `Variant ${index + 1}`), idField.row, weightField.row,
      h("p", { className: "hint" }, "Fill only the fields this arm tests (a subject line alone, say): every field left empty is the campaign's own, in each language."),
      ...blocks, remove);
    remove.addEventListener("click", () => {
      rows.splice(rows.indexOf(row), 1);
      row.fieldset.remove();
      renumber();
      changed();
    });
    rows.push(row);
    list.appendChild(row.fieldset);
    renumber();
  }

  function readCopy(controls: Record<string, Control>): Copy {
    const out: Copy = {};
    const mt = value(controls["message.title"]);
    if (mt) out.message = { title: mt };
    const notification: NotificationOverride = {};
    for (const key of ["title", "body"] as const) {
      const typed = value(controls[`notification.${key}`]);
      if (typed) notification[key] = typed;
    }
    if (Object.keys(notification).length) out.notification = notification;
    const email: EmailOverride = {};
    for (const key of ["subject", "title", "body", "ctaLabel"] as const) {
      const typed = value(controls[`email.${key}`]);
      if (typed) email[key] = typed;
    }
    if (Object.keys(email).length) out.email = email;
    return out;
  }

  function read(): ContentVariant[] | null {
    if (!rows.length) return null;
    const [baseTag] = base.languages();
    return rows.map((row) => {
      const v: ContentVariant = { id: row.id.value.trim(), weight: Number(row.weight.value || 1) };
      const translations: Record<string, Copy> = {};
      for (const [tag, controls] of row.copy) {
        const copy = readCopy(controls);
        if (tag === baseTag) Object.assign(v, copy);
        else if (Object.keys(copy).length) translations[tag] = copy;
      }
      if (Object.keys(translations).length) v.translations = translations as NonNullable<ContentVariant["translations"]>;
      return v;
    });
  }

  addBtn.addEventListener("click", () => {
    if (rows.length >= 4) return;
    addRow(undefined);
    if (rows.length === 1) addRow(undefined); // an A/B test needs two arms: the first is usually the control
    changed();
    rows[rows.length - 1]?.id.focus();
  });
  for (const v of existing) addRow(v);

  const element = h("fieldset", { id: "variants-editor" }, h("legend", {}, "A/B variants"),
    h("p", { className: "hint" }, "Two to four arms. Each recipient gets one arm on every channel, by a hash of the campaign and their profile, in proportion to the weights. Add translations first: each arm has fields for the languages present when it is added."),
    list, addBtn);
  return { element, read };
}
