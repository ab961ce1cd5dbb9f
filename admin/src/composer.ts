// The campaign composer: every field of the definition, its live previews, and the API's field errors
// shown beside the fields they name (tRPC `data.issues[].path`), in the words of messages.ts.
import type { Action, Campaign, Channel, Definition, Issue, Message } from "./api";
import { field, h, replace } from "./dom";
import { echoUtc, instant, localInput, zoneName } from "./time";
import { variantsEditor } from "./ab_variants";
import { NOTIFY_BODY_MAX, NOTIFY_TITLE_MAX, previews } from "./composer_previews";
import { guardianCopyEditor } from "./guardian_copy";
import { translationsEditor } from "./translations";

type Control = HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement;

export interface Composer {
  element: HTMLElement;
  /** The definition as typed, with empty optional fields left out. */
  read(): Definition & { id: string };
  showIssues(issues: Issue[]): string[];
  /** The base language and every translated one, for previewing each. */
  languages(): string[];
  clearIssues(): void;
}

function input(type: string, attrs: Record<string, string | number | boolean> = {}): HTMLInputElement {
  return h("input", { type, ...attrs });
}
function select(options: [string, string][], value: string): HTMLSelectElement {
  const el = h("select", {}, ...options.map(([v, label]) => h("option", { value: v }, label)));
  el.value = value;
  return el;
}
function text(el: Control): string | undefined {
  const value = el.value.trim();
  return value === "" ? undefined : value;
}
export function composer(existing: Campaign | null): Composer {
  const errors = new Map<string, HTMLElement>();
  const rows: HTMLElement[] = [];
  const onChange: (() => void)[] = [];
  function add(path: string, label: string, control: Control, hint?: string): HTMLElement {
    const { row, error } = field(label, control, hint);
    control.dataset["path"] = path;
    control.addEventListener("input", () => onChange.forEach((f) => f()));
    errors.set(path, error);
    rows.push(row);
    return row;
  }
  const def = existing;
  const msg: Message | undefined = def?.message ?? undefined;

  const id = input("text", { required: true, maxlength: 64, autocomplete: "off", value: def?.id ?? "" });
  if (def) id.readOnly = true;
  const name = input("text", { required: true, maxlength: 200, value: def?.name ?? "" });
  const description = h("textarea", { rows: 2, maxlength: 2000 });
  description.value = def?.description ?? "";
  const channelBoxes = (["inApp", "notify", "email"] as Channel[]).map((ch) => {
    const box = input("checkbox", { value: ch });
    box.checked = def ? def.channels.includes(ch) : ch !== "email";
    box.id = `channel-${ch}`;
    box.addEventListener("change", () => onChange.forEach((f) => f()));
    return box;
  });
  const channelError = h("p", { className: "field-error", id: "channels-error", hidden: true });
  errors.set("channels", channelError);
  const channelLabels: Record<Channel, string> = { inApp: "In-app message", notify: "Notification (inbox/push)", email: "Email" };

  // In-app message
  const mTitle = input("text", { maxlength: 120, value: msg?.title ?? "" });
  const mBody = h("textarea", { rows: 3, maxlength: 2000 });
  mBody.value = msg?.body ?? "";
  const mPresentation = select([["modal", "Modal"], ["banner", "Banner"], ["toast", "Toast"]], msg?.presentation ?? "modal");
  const mEmoji = input("text", { maxlength: 16, value: msg?.emoji ?? "" });
  const mPriority = input("number", { min: 0, max: 1000, value: msg?.priority ?? 0 });
  const freq = msg?.frequency ?? "once";
  const mFrequency = select([["once", "Once"], ["session", "Every session"], ["always", "Always"], ["everyDays", "Every N days"]], typeof freq === "string" ? freq : "everyDays");
  const mEveryDays = input("number", { min: 1, max: 365, value: typeof freq === "object" ? freq.everyDays : 7 });
  const mDismissible = input("checkbox");
  mDismissible.checked = msg?.dismissible ?? true;
  const mMediaType = select([["", "No media"], ["image", "Image"], ["gif", "GIF"], ["youtube", "YouTube"]], msg?.media?.type ?? "");
  const mMediaUrl = input("url", { value: msg?.media?.url ?? "", placeholder: "https://" });
  const mMediaAlt = input("text", { maxlength: 300, value: msg?.media?.alt ?? "" });
  const mMediaAspect = input("text", { value: msg?.media?.aspect ?? "", placeholder: "16:9" });
  const actionRows = [0, 1, 2].map((i) => {
    const a: Action | undefined = msg?.actions?.[i];
    const label = input("text", { maxlength: 40, value: a?.label ?? "" });
    const style = select([["primary", "Primary"], ["secondary", "Secondary"], ["positive", "Positive"], ["dismiss", "Dismiss"]], a?.style ?? "primary");
    const kind = select([["internalLink", "App path"], ["externalLink", "Web link"], ["appStore", "App store page"], ["capgoUpdate", "App update"], ["dismiss", "Dismiss"]], a?.action.type ?? "internalLink");
    const target = input("text", { value: a ? (a.action.type === "internalLink" ? a.action.path : a.action.type === "externalLink" ? a.action.url : "") : "" });
    return { label, style, kind, target, original: a }; // what the form does not edit is kept as it was
  });

  // Notification and email copy
  // No maxlength here: the admin sees where the banner cuts longer copy, and the API says it is too long.
  const nTitle = input("text", { value: def?.notification?.title ?? "" });
  const nBody = h("textarea", { rows: 2 });
  nBody.value = def?.notification?.body ?? "";
  const eSubject = input("text", { maxlength: 150, value: def?.email?.subject ?? "" });
  const eTitle = input("text", { maxlength: 200, value: def?.email?.title ?? "" });
  const eBody = h("textarea", { rows: 5, maxlength: 20000 });
  eBody.value = def?.email?.body ?? "";
  const eCta = input("text", { maxlength: 40, value: def?.email?.ctaLabel ?? "" });
  const eHero = input("url", { value: def?.email?.heroImageUrl ?? "", placeholder: "https://" });

  const startsAt = input("datetime-local", { value: localInput(def?.startsAt) });
  const endsAt = input("datetime-local", { value: localInput(def?.endsAt) });
  const excludeMinors = input("checkbox");
  excludeMinors.checked = def?.excludeMinors ?? true;
  const discoverable = input("checkbox");
  discoverable.checked = def?.discoverable ?? false;
  // The lane the send waits in: critical skips quiet hours and caps (a publisher's, where the tenant allows).
  const sendPriority = select([["normal", "Normal"], ["bulk", "Bulk: after normal and critical sends"], ["critical", "Critical: skips quiet hours and frequency caps"]], def?.priority ?? "normal");
  // Minors the age policy excludes get nothing, or their consenting guardians get it instead,
  // with the guardian copy below where it is given (never naming the child).
  const minors = select([["exclude", "Exclude them (nobody gets it in their place)"], ["guardians", "Send to their guardians instead"]], def?.minors ?? "exclude");
  minors.id = "minors";
  const guardianSlot = h("div", { id: "guardian-copy-slot" });

  const checkbox = (path: string, label: string, box: HTMLInputElement): HTMLElement => {
    box.id ||= `cb-${path.replace(/\W/g, "-")}`;
    box.dataset["path"] = path;
    const error = h("p", { className: "field-error", id: `${box.id}-error`, hidden: true });
    box.setAttribute("aria-describedby", error.id);
    errors.set(path, error);
    return h("div", { className: "field check" }, box, h("label", { for: box.id }, label), error);
  };

  const translations = translationsEditor(def?.locale ?? "en", def?.translations ?? {}, {
    message: () => readMessage(),
    email: () => (text(eSubject) || text(eBody) ? { subject: eSubject.value, title: eTitle.value, body: eBody.value, ctaLabel: eCta.value, heroImageUrl: text(eHero) ?? null } : undefined),
  }, (path, error) => errors.set(path, error), () => onChange.forEach((f) => f()));

  const variants = variantsEditor(def?.variants ?? [], {
    message: () => readMessage(),
    email: () => (text(eHero) ? { subject: "", title: "", body: "", ctaLabel: "", heroImageUrl: text(eHero) ?? null } : undefined),
    languages: () => [translations.locale.value.trim() || "en", ...translations.tags()],
  }, (path, error) => errors.set(path, error), () => onChange.forEach((f) => f()));

  const guardian = guardianCopyEditor(def?.guardianCopy ?? undefined, add, () => read(), () => readMessage(), () => onChange.forEach((f) => f()));
  onChange.push(guardian.render);
  const form = h(
    "div",
    { className: "composer" },
    h("fieldset", {}, h("legend", {}, "Campaign"),
      add("id", "Campaign id", id, "Lower-case letters, digits and dashes; fixed once created."),
      add("name", "Name", name),
      add("description", "Description (admins only)", description),
      h("fieldset", { className: "channels" }, h("legend", {}, "Channels"),
        ...channelBoxes.map((box) => h("div", { className: "check" }, box, h("label", { for: box.id }, channelLabels[box.value as Channel]))),
        channelError)),
    h("fieldset", {}, h("legend", {}, "In-app message"),
      add("message.title", "Title", mTitle), add("message.body", "Body", mBody),
      add("message.presentation", "Presentation", mPresentation), add("message.emoji", "Emoji", mEmoji),
      add("message.frequency", "Frequency", mFrequency), add("message.frequency.everyDays", "Every N days", mEveryDays),
      add("message.priority", "Priority (0-1000)", mPriority),
      checkbox("message.dismissible", "Recipients can dismiss it", mDismissible),
      h("fieldset", {}, h("legend", {}, "Media"),
        add("message.media.type", "Media type", mMediaType), add("message.media.url", "Media URL (https)", mMediaUrl),
        add("message.media.alt", "Alternative text", mMediaAlt), add("message.media.aspect", "Aspect ratio", mMediaAspect)),
      ...actionRows.map((a, i) => h("fieldset", { className: "action" }, h("legend", {}, `Action ${i + 1}`),
        add(`message.actions.${i}.label`, `Action ${i + 1} label`, a.label),
        add(`message.actions.${i}.style`, `Action ${i + 1} style`, a.style),
        add(`message.actions.${i}.action.type`, `Action ${i + 1} kind`, a.kind),
        add(`message.actions.${i}.action.target`, `Action ${i + 1} path or URL`, a.target, "An app path like /news, or an https:// link.")))),
    h("fieldset", {}, h("legend", {}, "Notification"),
      add("notification.title", `Title (banner shows ${NOTIFY_TITLE_MAX} characters)`, nTitle),
      add("notification.body", `Body (banner shows ${NOTIFY_BODY_MAX} characters)`, nBody)),
    h("fieldset", {}, h("legend", {}, "Email"),
      add("email.subject", "Subject", eSubject), add("email.title", "Heading", eTitle), add("email.body", "Body", eBody),
      add("email.ctaLabel", "Button label", eCta), add("email.heroImageUrl", "Hero image URL (https)", eHero)),
    translations.element,
    variants.element,
    h("fieldset", {}, h("legend", {}, "Window and audience policy"),
      add("startsAt", `Starts at (your time, ${zoneName()})`, startsAt, " "), add("endsAt", `Ends at (your time, ${zoneName()})`, endsAt, " "),
      checkbox("excludeMinors", "Exclude minors (age policy)", excludeMinors),
      checkbox("discoverable", "Discoverable: people may join it themselves", discoverable),
      add("priority", "Send priority", sendPriority, "Critical needs the publisher role and the tenant's allowance; it never skips opt-outs, suppressions, the age policy or consent."),
      add("minors", "Members the age policy excludes", minors)),
    guardianSlot,
  );
  // The guardian copy is on the page only while minors go to their guardians.
  const showGuardianCopy = (): void => replace(guardianSlot, minors.value === "guardians" ? guardian.element : null);
  minors.addEventListener("change", showGuardianCopy);
  showGuardianCopy();

  // The window is typed in local time: each field's hint echoes it with its UTC instant.
  for (const control of [startsAt, endsAt]) {
    const hint = form.querySelector<HTMLElement>(`#${CSS.escape(control.id)}-hint`);
    if (hint) echoUtc(control, hint);
  }

  /** The chosen channels; none chosen is sent as such, for the API to say a channel is required. */
  function channels(): [Channel, ...Channel[]] {
    return channelBoxes.filter((b) => b.checked).map((b) => b.value as Channel) as [Channel, ...Channel[]];
  }

  function readMessage(): Message | undefined {
    const title = text(mTitle);
    if (!title && !channels().includes("inApp")) return undefined;
    const message: Message = {
      title: mTitle.value,
      presentation: mPresentation.value as NonNullable<Message["presentation"]>,
      dismissible: mDismissible.checked,
      priority: Number(mPriority.value || 0),
      frequency: mFrequency.value === "everyDays" ? { everyDays: Number(mEveryDays.value) } : (mFrequency.value as "once"),
      actions: actionRows.flatMap((a): Action[] => {
        // A row with a link but no label is sent, for the API to say the label is required.
        if (!text(a.label) && !a.target.value.trim()) return [];
        const style = a.style.value as NonNullable<Action["style"]>;
        const target = a.target.value.trim();
        const action: Action["action"] = a.kind.value === "dismiss" ? { type: "dismiss" } : a.kind.value === "appStore" ? (a.original?.action.type === "appStore" ? a.original.action : { type: "appStore" }) : a.kind.value === "capgoUpdate" ? { type: "capgoUpdate" } : a.kind.value === "externalLink" ? { type: "externalLink", url: target } : { type: "internalLink", path: target };
        return [{ label: a.label.value, style, action, ...(a.original?.closeOnComplete === false ? { closeOnComplete: false } : {}) }];
      }),
      ...(msg?.id ? { id: msg.id } : {}), ...(msg?.targeting ? { targeting: msg.targeting } : {}), // kept as they were
    };
    const body = text(mBody);
    if (body) message.body = body;
    const emoji = text(mEmoji);
    if (emoji) message.emoji = emoji;
    if (mMediaType.value) {
      message.media = { type: mMediaType.value as "image", url: mMediaUrl.value.trim() };
      const alt = text(mMediaAlt);
      if (alt) message.media.alt = alt;
      const aspect = text(mMediaAspect);
      if (aspect) message.media.aspect = aspect;
    }
    return message;
  }

  function read(): Definition & { id: string } {
    const out: Definition & { id: string } = {
      id: id.value.trim(),
      name: name.value,
      channels: channels(),
      excludeMinors: excludeMinors.checked,
      discoverable: discoverable.checked,
      priority: sendPriority.value as NonNullable<Definition["priority"]>,
    };
    const desc = text(description);
    if (desc) out.description = desc;
    const message = readMessage();
    if (message) out.message = message;
    if (text(nTitle) || text(nBody) || out.channels.includes("notify")) out.notification = { title: nTitle.value, body: nBody.value };
    if (text(eSubject) || text(eBody) || out.channels.includes("email")) {
      out.email = { subject: eSubject.value, title: eTitle.value, body: eBody.value, ctaLabel: eCta.value };
      const hero = text(eHero);
      if (hero) out.email.heroImageUrl = hero;
    }
    out.locale = translations.locale.value.trim() || "en";
    out.translations = translations.read();
    // One arm alone is sent as typed, for the API to say two are needed.
    out.variants = variants.read() as NonNullable<Definition["variants"]> | null;
    out.minors = minors.value as "exclude" | "guardians";
    // Guardian copy: a channel with any field typed is sent whole, for the API to name a missing one;
    // what the API stored that the form does not edit is kept (guardian_copy.ts).
    out.guardianCopy = guardian.read();
    const s = instant(startsAt);
    if (s) out.startsAt = s;
    const e = instant(endsAt);
    if (e) out.endsAt = e;
    return out;
  }

  const preview = previews(readMessage, () => ({ title: nTitle.value, body: nBody.value }));
  onChange.push(preview.render);
  preview.render();
  guardian.render();
  const element = h("div", { className: "composer-layout" }, form, preview.element);

  function clearIssues(): void {
    for (const el of errors.values()) {
      el.hidden = true;
      el.textContent = "";
      el.removeAttribute("title");
    }
    element.querySelectorAll("[aria-invalid]").forEach((el) => el.removeAttribute("aria-invalid"));
  }

  /** Shows each issue beside the field its path names; returns the messages no field could take. */
  function showIssues(issues: Issue[]): string[] {
    clearIssues();
    const unplaced: string[] = [];
    for (const issue of issues) {
      const key = bestKey(issue.path.map(String), [...errors.keys()]);
      const slot = key ? errors.get(key) : undefined;
      if (!slot || !key) {
        unplaced.push(issue.message);
        continue;
      }
      slot.hidden = false;
      slot.textContent = slot.textContent ? `${slot.textContent} ${issue.message}` : issue.message;
      if (issue.detail) slot.title = `The server said: ${issue.detail}`;
      element.querySelector(`[data-path="${CSS.escape(key)}"]`)?.setAttribute("aria-invalid", "true");
    }
    const first = element.querySelector<HTMLElement>("[aria-invalid]");
    first?.focus();
    return unplaced;
  }

  const languages = (): string[] => [translations.locale.value.trim() || "en", ...translations.tags()];
  return { element, read, showIssues, clearIssues, languages };
}

/**
 * The registered field whose path segments appear, in order, in the issue's path, preferring the
 * longest: pydantic puts union tags between segments (`message.actions.0.action.externalLink.url`).
 */
function bestKey(path: string[], keys: string[]): string | undefined {
  // An action's url or path is typed in one "path or URL" box.
  const inAction = path.includes("actions");
  const target = path.map((p) => (inAction && (p === "url" || p === "path") ? "target" : p));
  let best: string | undefined;
  let bestLen = 0;
  for (const key of keys) {
    const parts = key.split(".");
    if (parts[0] !== target[0]) continue;
    let i = 0;
    for (const seg of target) if (seg === parts[i]) i += 1;
    if (i === parts.length && parts.length > bestLen) {
      best = key;
      bestLen = parts.length;
    }
  }
  return best;
}
