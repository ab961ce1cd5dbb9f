// A campaign page's Dispatch progress section: each dispatch's bars (progress.ts), with the admin's
// decisions on it: resume a paused or failed send, choose an A/B test wave's variant now, or cancel a
// scheduled one (schedule_notice.ts); and the recipients of an uncertain email (uncertain_emails.ts).
import type { Dispatch } from "./api";
import { h, replace } from "./dom";
import type { CampaignPage } from "./kit";
import { progressView } from "./progress";
import { scheduleNotice } from "./schedule_notice";
import { uncertainSection } from "./uncertain_emails";

export interface ProgressSection {
  element: HTMLElement;
  /** Draws the dispatches as last polled. */
  draw(dispatches: Dispatch[]): void;
}

export function progressSection(page: CampaignPage): ProgressSection {
  const { kit } = page;
  const progressOut = h("div", { id: "progress-list", "aria-live": "polite" });
  function renderProgress(dispatches: Dispatch[]): void {
    if (!dispatches.length) {
      replace(progressOut, h("p", { className: "muted" }, "Nothing sent yet."));
      return;
    }
    const planned = page.planned;
    const cancel = kit.can("campaigns.cancelScheduledDispatch") ? cancelControl : undefined;
    replace(progressOut, ...dispatches.map((d) => {
      const article = progressView(d, planned ? (d.channel === "email" ? planned.emailRecipientCount : planned.notificationRecipientCount) : 0,
        kit.can("campaigns.resumeDispatch") ? resumeControl : undefined,
        kit.can("campaigns.chooseVariant") ? chooseControl : undefined,
        (x) => scheduleNotice(x, cancel));
      const uncertain = uncertainKept(d);
      if (uncertain) article.append(uncertain);
      return article;
    }));
  }
  /** An uncertain list keeps what was read across redraws while its count stays the same. */
  const uncertainLists = new Map<string, { count: number; element: HTMLElement | null }>();
  function uncertainKept(d: Dispatch): HTMLElement | null {
    const kept = uncertainLists.get(d.dispatchId);
    if (kept && kept.count === (d.uncertain ?? 0)) return kept.element;
    const element = uncertainSection(kit, d);
    uncertainLists.set(d.dispatchId, { count: d.uncertain ?? 0, element });
    return element;
  }
  /** Cancel a scheduled send before it fires: every channel of it, audited; refused once it fired. */
  function cancelControl(d: Dispatch): HTMLElement {
    const out = h("div", {});
    const b: HTMLButtonElement = kit.button("Cancel the scheduled send", () => void kit.guarded(b, () => kit.api.call("campaigns.cancelScheduledDispatch", { dispatchId: d.dispatchId }), (err) => replace(out, kit.errorBox(err))).then((done) => {
      if (done) {
        kit.announce("Scheduled send cancelled.");
        void page.poll();
      }
    }), { id: `cancel-${d.dispatchId}` });
    return h("div", { className: "actions" }, b, out);
  }
  /** Decide a test wave now, for one variant: the admin's decision, audited. */
  function chooseControl(d: Dispatch): HTMLElement {
    const out = h("div", {});
    const buttons = (page.current.variants ?? []).map((v) => {
      const b: HTMLButtonElement = kit.button(`Choose ${v.id} now`, () => void kit.guarded(b, () => kit.api.call("campaigns.chooseVariant", { dispatchId: d.dispatchId, variantId: v.id }), (err) => replace(out, kit.errorBox(err))).then((chosen) => {
        if (chosen) {
          kit.announce(`Variant ${v.id} chosen: the rest of the audience gets it.`);
          void page.poll();
        }
      }), { id: `choose-${d.dispatchId}-${v.id}` });
      return b;
    });
    return h("div", { className: "choose" }, ...buttons, out);
  }
  /** Resume a paused (health guard) or failed dispatch from its cursor: the admin's decision, audited. */
  function resumeControl(d: Dispatch): HTMLElement {
    const out = h("div", {});
    const b: HTMLButtonElement = kit.button("Resume", () => void kit.guarded(b, () => kit.api.call("campaigns.resumeDispatch", { dispatchId: d.dispatchId }), (err) => replace(out, kit.errorBox(err))).then((resumed) => {
      if (resumed) {
        kit.announce("Dispatch resumed.");
        void page.poll();
      }
    }), { id: `resume-${d.dispatchId}` });
    return h("div", { className: "resume" }, b, out);
  }
  const element = h("section", { id: "progress", "aria-labelledby": "progress-h" }, h("h2", { id: "progress-h" }, "Dispatch progress"), progressOut);
  return { element, draw: renderProgress };
}
