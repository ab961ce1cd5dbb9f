// A campaign page's Test and Review-and-send sections: a test to the admin alone, then the review of
// exactly what a send would do (recipients per channel, guardians, languages served, when each channel
// would finish) and the confirm
// that sends exactly that, or says why it waits (an approval policy, a stale approval).
import { ApiError, type DispatchPreview } from "./api";
import { h, replace } from "./dom";
import type { CampaignPage, Kit } from "./kit";
import { reasonSentence } from "./messages";
import { scheduleChoice } from "./campaign_schedule";
import { type Experiment, experimentChoice } from "./review_experiment";
import { deliverByChoice } from "./deliver_by";
import { timeEl } from "./time";

export function testSection(page: CampaignPage): HTMLElement {
  const { kit, id } = page;
  const testOut = h("div", { id: "test-result", "aria-live": "polite" });
  const testBtn: HTMLButtonElement = kit.button("Send test to me", () => void kit.guarded(testBtn, () => kit.api.call("campaigns.sendTestToMe", { campaignId: id }), (err) => replace(testOut, kit.errorBox(err))).then((r) => {
    if (r) replace(testOut, h("p", { className: "ok" }, `Test ${r.testId} sent on: ${r.channels.join(", ")}.`));
  }));
  return h("section", { id: "test", "aria-labelledby": "test-h" }, h("h2", { id: "test-h" }, "Test"), h("p", { className: "hint" }, "Sends the saved campaign to you only, on every channel it has content for."),
    kit.can("campaigns.sendTestToMe") ? testBtn : kit.roleNote("Sending a test", "campaigns.sendTestToMe"), testOut);
}

export function reviewSection(page: CampaignPage): HTMLElement {
  const { kit, id } = page;
  const reviewOut = h("div", { id: "review-result" });
  const reviewBtn: HTMLButtonElement = kit.button("Review dispatch", () => void kit.guarded(reviewBtn, () => kit.api.call("campaigns.previewDispatch", { campaignId: id }), (err) => replace(reviewOut, kit.errorBox(err))).then((p) => {
    if (!p) return;
    page.planned = p;
    // Too many recipients without their language block the send until the admin accepts, explicitly,
    // that they get the base content (missing_translation, lifted by acceptFallback).
    const fallbackOnly = p.blockedReason === "missing_translation";
    // The forecast follows the choices below: asked again with the test wave and the deadline chosen
    // (the wave's decision delays the rest), the review's own without either.
    const planOut = h("div", { id: "review-forecast" }, planReview(p));
    let planAsked = 0;
    const replan = (): void => {
      const mine = (planAsked += 1);
      const { deliverBy } = deadline.value();
      const choices = { ...experiment(), ...(deliverBy ? { deliverBy } : {}) };
      if (!Object.keys(choices).length) return replace(planOut, planReview(p));
      void kit.api.call("campaigns.previewDispatch", { campaignId: id, ...choices }).then((answer) => {
        if (mine === planAsked && page.onScreen()) replace(planOut, planReview(answer));
      }, () => undefined); // the choice's own section shows a refusal
    };
    const wave = experimentChoice(page, p, () => {
      deadline.check();
      replan();
    }); // the A/B test wave, for a campaign with variants
    const experiment = (): { experiment?: Experiment } => {
      const x = wave.value();
      return x ? { experiment: x } : {};
    };
    const deadline = deliverByChoice(page, p, experiment, replan); // "Deliver by", its verdict and "accept late"
    const accept = h("input", { type: "checkbox", id: "accept-fallback", name: "accept-fallback" });
    const confirm: HTMLButtonElement = kit.button(`Confirm and send to ${p.recipientCount}`, () => void kit.guarded(confirm, () => kit.api.call("campaigns.dispatch", { campaignId: id, expectedPreviewToken: p.previewToken, ...(fallbackOnly ? { acceptFallback: accept.checked } : {}), ...experiment(), ...deadline.value() }), (err) => replace(confirmOut, deadline.refusal(err) ?? wave.refusal(err) ?? dispatchRefusal(kit, err))).then((started) => {
      if (started) {
        replace(confirmOut, h("p", { className: "ok" }, `Dispatch ${started.dispatchId} started (${started.channels.join(", ")}).`));
        confirm.disabled = true;
        kit.announce("Dispatch started.");
        void page.poll();
      }
    }), { id: "confirm-send", disabled: Boolean(p.blockedReason) || p.recipientCount === 0 });
    accept.addEventListener("change", () => {
      confirm.disabled = !accept.checked || p.recipientCount === 0;
    });
    const confirmOut = h("div", {});
    const priority = page.current.priority ?? "normal";
    replace(reviewOut, h("dl", { className: "counts" },
      h("dt", {}, "Priority"), h("dd", { id: "review-priority", "data-priority": priority }, PRIORITY_WORDS[priority]),
      h("dt", {}, "Audience"), h("dd", { id: "review-audience" }, String(p.audienceCount)),
      h("dt", {}, "Already notified"), h("dd", {}, String(p.alreadyNotifiedCount)),
      h("dt", {}, "Recipients"), h("dd", { id: "review-recipients" }, String(p.recipientCount)),
      h("dt", {}, "Notifications"), h("dd", { id: "review-notify" }, String(p.notificationRecipientCount)),
      h("dt", {}, "Emails"), h("dd", { id: "review-email" }, String(p.emailRecipientCount)),
      // Guardians reached in place of excluded minors (minors: guardians), counted in the above.
      ...(p.guardianRecipientCount ? [
        h("dt", {}, "Guardians (of excluded minors)"),
        h("dd", { id: "review-guardians" },
          `${p.guardianRecipientCount} (notify ${p.guardianNotificationRecipientCount ?? 0}, email ${p.guardianEmailRecipientCount ?? 0})`),
      ] : [])),
      languagesReview(p),
      planOut,
      p.blockedReason ? h("p", { role: "alert", className: "error", id: "review-blocked" }, `Blocked: ${reasonSentence(p.blockedReason)}`) : null,
      fallbackOnly ? h("div", { className: "field check" }, accept, h("label", { for: accept.id }, `Send the base content to the ${untranslatedTotal(p)} recipients without a translation`)) : null,
      wave.element,
      deadline.element,
      h("p", { className: "hint" }, "Confirming sends exactly this: if anything changed since the review, the server refuses and you review again."),
      kit.can("campaigns.dispatch") ? confirm : kit.roleNote("Sending", "campaigns.dispatch"), confirmOut,
      scheduleChoice(page, p, () => (fallbackOnly ? accept.checked : undefined), (err, scheduling) => deadline.refusal(err) ?? wave.refusal(err) ?? dispatchRefusal(kit, err, scheduling), () => wave.value(), deadline.value));
  }));
  return h("section", { id: "review", "aria-labelledby": "review-h" }, h("h2", { id: "review-h" }, "Review and send"),
    kit.can("campaigns.previewDispatch") ? reviewBtn : kit.roleNote("Reviewing a send", "campaigns.previewDispatch"), reviewOut);
}

/** What each priority does to the send, in the review: a critical one skips quiet hours and caps. */
const PRIORITY_WORDS = {
  critical: "Critical: sent ahead of other sends, through quiet hours and frequency caps (never opt-outs or the age policy)",
  normal: "Normal",
  bulk: "Bulk: yields to normal and critical sends",
} as const;

function untranslatedTotal(p: DispatchPreview): number {
  return Object.values(p.untranslated ?? {}).reduce<number>((sum, n) => sum + (n ?? 0), 0);
}

/** Per channel, how many recipients get each language, and who gets the base content for want of theirs.
 *  Routed guardians are counted by the guardian copy they are served (its own translations, not the
 *  campaign's) and shown apart in their own column. */
function languagesReview(p: DispatchPreview): HTMLElement | null {
  const channels = Object.entries(p.localeCounts ?? {});
  if (!channels.length) return null;
  const missing = Object.entries(p.untranslated ?? {});
  const guardians = p.guardianLocaleCounts ?? {};
  const routed = Object.keys(guardians).length > 0;
  const guardiansIn = (channel: string, tag: string): number => (guardians as Record<string, Record<string, number> | undefined>)[channel]?.[tag] ?? 0;
  const ofGuardians = (tag: string): string => {
    const n = p.guardianUntranslated?.[tag] ?? 0;
    return n ? `, ${n} of them guardians` : "";
  };
  return h("div", { id: "review-languages" },
    h("div", { className: "table-wrap" }, h("table", { id: "locale-counts" }, h("caption", {}, "Recipients by language served"),
      h("thead", {}, h("tr", {}, ...["Channel", "Language", "Recipients", ...(routed ? ["Of them guardians (guardian copy)"] : [])].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, ...channels.flatMap(([channel, counts]) => Object.entries(counts ?? {}).map(([tag, n]) =>
        h("tr", { "data-channel": channel, "data-locale": tag }, h("th", { scope: "row" }, channel), h("td", { lang: tag }, tag), h("td", {}, String(n ?? 0)),
          routed ? h("td", { className: "guardians" }, String(guardiansIn(channel, tag))) : null)))))),
    missing.length
      ? h("p", { id: "review-untranslated" }, "No translation for: ", ...missing.map(([tag, n], i) => h("span", { "data-locale": tag }, `${i ? ", " : ""}${tag} (${n ?? 0}${ofGuardians(tag)})`)), " — they get the base content.")
      : h("p", { className: "hint", id: "review-untranslated" }, "Every recipient's language has a translation or is the base."));
}

const CHANNEL_WORDS: Record<string, string> = { notify: "Notifications", email: "Emails" };

/** The forecast: per channel when it would start and finish if confirmed now, the rate it assumes and
 *  where that comes from (this deployment's recent sends, or the configured rate), and what moves it. */
function planReview(p: DispatchPreview): HTMLElement | null {
  const channels = Object.entries(p.plan ?? {});
  if (!channels.length) return null;
  return h("div", { id: "review-plan" }, h("h3", {}, "Forecast if confirmed now"),
    ...channels.map(([channel, plan]) => plan ? h("div", { className: "plan", "data-channel": channel },
      h("p", {}, h("strong", {}, `${CHANNEL_WORDS[channel] ?? channel}: `), "from ", timeEl(plan.startsAt), " to ",
        h("span", { className: "finishes" }, timeEl(plan.finishesAt)),
        h("span", { className: "rate", "data-source": plan.rateSource },
          ` at ${plan.rate}/s (${plan.rateSource === "measured" ? "measured on recent sends" : "configured: nothing measured yet"})`)),
      plan.shapedBy?.length ? h("ul", {}, ...plan.shapedBy.map((s) => h("li", { "data-kind": s.kind }, s.message))) : null) : null));
}

/** A refused dispatch, explained. Under the tenant's approval policy a large send is FORBIDDEN until a
 *  second publisher approves it (the server has then listed it under Approvals), and an approval made
 *  before a change is CONFLICT: both say what happens next, with the server's own words below. */
function dispatchRefusal(kit: Kit, err: unknown, scheduling = false): HTMLElement {
  if (err instanceof ApiError && (err.code === "FORBIDDEN" || err.code === "CONFLICT") && err.message.includes("approveDispatch")) {
    const stale = err.code === "CONFLICT";
    // The refusal names who may approve ("by another publisher than pia and ana:").
    const who = /by (another publisher[^:]*):/.exec(err.message)?.[1];
    return h("div", { role: "alert", className: "notice awaiting", id: scheduling ? "schedule-awaits" : "dispatch-awaits" },
      h("p", {}, h("strong", {}, stale ? "The approval is stale. " : "Waiting for another publisher. "),
        stale ? "The campaign changed after it was approved: review again and have the new preview approved." : `It is listed under Approvals; once another publisher approves it, ${scheduling ? "schedule it" : "confirm the send"} again here.`),
      !stale && who ? h("p", { id: "may-approve" }, `Who may approve: ${who}.`) : null,
      h("p", { className: "api-message" }, `The server said: ${err.message}`),
      kit.can("campaigns.listAwaitingApproval") ? h("p", {}, h("a", { href: "#/approvals" }, "Open approvals")) : null);
  }
  return kit.errorBox(err);
}
