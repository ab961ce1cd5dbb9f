// The composer's live previews: the in-app card and the push banner as the recipient's device shows
// them, redrawn from the composer's fields on every change.
import type { Message } from "./api";
import { h, replace } from "./dom";

export const NOTIFY_TITLE_MAX = 65; // push banners truncate here (NotificationCopy in domain/campaign.py)
export const NOTIFY_BODY_MAX = 240;

export function truncate(value: string, max: number): string {
  return value.length > max ? `${value.slice(0, max - 1)}…` : value;
}

export interface Previews {
  element: HTMLElement;
  render(): void;
}

/** `readMessage` is the in-app message as typed; `notification` the banner's title and body as typed. */
export function previews(readMessage: () => Message | undefined, notification: () => { title: string; body: string }): Previews {
  const card = h("div", { className: "preview-card", id: "preview-inapp" });
  const banner = h("div", { className: "preview-banner", id: "preview-push" });
  function renderPreviews(): void {
    const m = readMessage();
    if (m && m.title) {
      replace(card,
        m.media && m.media.type !== "youtube" && m.media.url.startsWith("https://")
          ? h("img", { src: m.media.url, alt: m.media.alt ?? "", className: "media" })
          : m.media ? h("p", { className: "media-placeholder" }, `Video: ${m.media.url}`) : null,
        h("p", { className: "card-title" }, `${m.emoji ? `${m.emoji} ` : ""}${m.title}`),
        m.body ? h("p", { className: "card-body" }, m.body) : null,
        h("div", { className: "card-actions" }, ...(m.actions ?? []).map((a) => h("span", { className: `fake-button ${a.style}` }, a.label))),
        m.dismissible ? h("span", { className: "card-dismiss" }, "×") : null);
    } else replace(card, h("p", { className: "muted" }, "No in-app message."));
    const typed = notification();
    const nt = typed.title.trim();
    if (nt) {
      const nb = typed.body.trim();
      const over = nt.length > NOTIFY_TITLE_MAX || nb.length > NOTIFY_BODY_MAX;
      replace(banner, h("p", { className: "banner-app" }, "Notification"), h("p", { className: "banner-title" }, truncate(nt, NOTIFY_TITLE_MAX)),
        h("p", { className: "banner-body" }, truncate(nb, NOTIFY_BODY_MAX)),
        h("p", { className: over ? "banner-count over" : "banner-count" }, `Title ${nt.length}/${NOTIFY_TITLE_MAX}, body ${nb.length}/${NOTIFY_BODY_MAX} characters${over ? ": the banner cuts the rest" : ""}`));
    } else replace(banner, h("p", { className: "muted" }, "No notification."));
  }
  const element = h("aside", { className: "previews", "aria-label": "Previews" },
    h("h3", {}, "In-app card"), card, h("h3", {}, "Push banner"), banner);
  return { element, render: renderPreviews };
}
