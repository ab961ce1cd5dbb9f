// The review's deadline: "Deliver by" a time (the admin's, or each recipient's own), the plan's verdict
// before sending (previewDispatch with deliverBy: met, with the pause between waves it keeps, or who
// would be late and why), the refusal in words (PRECONDITION_FAILED names the binding constraint and
// the late count) and an explicit "accept late" choice. campaigns.dispatch and scheduleDispatch take
// both as `deliverBy` and `acceptLate`; under an approval policy the approval pins them too. The
// progress says when a send fell behind its deadline (getDispatch's `deadline`). The verdict is asked
// with the review's test wave too (the decision's wait delays the rest); each change tells the review
// (``changed``), which asks again for its forecast.
import { ApiError, type Dispatch, type DispatchPreview } from "./api";
import { field, h, replace } from "./dom";
import type { CampaignPage } from "./kit";
import type { Experiment } from "./review_experiment";
import { localText, timeEl, zoneName } from "./time";

type DeliverBy = string | { localTime: string; perRecipient: true };

export interface DeliverByChoice {
  element: HTMLElement;
  /** What a send or schedule carries: nothing without a deadline. */
  value(): { deliverBy?: DeliverBy; acceptLate?: boolean };
  /** A refused send or schedule that is about the deadline, in words; null for any other refusal. */
  refusal(err: unknown): HTMLElement | null;
  /** Asks for the verdict again (the test wave changed). */
  check(): void;
}

/** The deadline's fieldset for the review of preview `p` (module comment). */
export function deliverByChoice(page: CampaignPage, p: DispatchPreview, experiment: () => { experiment?: Experiment }, changed: () => void): DeliverByChoice {
  const { kit, id } = page;
  const mine = h("input", { type: "radio", name: "deliver-by-zone", id: "deliver-by-mine", value: "mine", checked: true });
  const theirs = h("input", { type: "radio", name: "deliver-by-zone", id: "deliver-by-theirs", value: "theirs" });
  const when = h("input", { type: "datetime-local", name: "deliver-by", id: "deliver-by-at" });
  const whenRow = field("Deliver by (optional)", when, `Everyone should have it by then: your time (${zoneName()}), or each recipient's own.`);
  const late = h("input", { type: "checkbox", id: "accept-late", name: "accept-late" });
  const verdict = h("div", { id: "deliver-by-verdict", "aria-live": "polite" });

  function value(): { deliverBy?: DeliverBy; acceptLate?: boolean } {
    if (!when.value) return {};
    const deliverBy: DeliverBy = theirs.checked ? { localTime: when.value, perRecipient: true } : new Date(when.value).toISOString();
    return { deliverBy, ...(late.checked ? { acceptLate: true } : {}) };
  }

  let asked = 0;
  function check(): void {
    const chosen = value().deliverBy;
    const mineAsked = ++asked;
    if (!chosen) {
      replace(verdict);
      return;
    }
    void kit.api.call("campaigns.previewDispatch", { campaignId: id, deliverBy: chosen, ...experiment() }).then((answer) => {
      if (mineAsked !== asked) return;
      const d = answer.deadline;
      if (!d) return replace(verdict);
      if (answer.previewToken !== p.previewToken) {
        return replace(verdict, h("p", { role: "alert", className: "error" }, "The campaign changed since this review: review again."));
      }
      const paced = Object.entries(d.waveDelaySeconds ?? {}).map(([ch, s]) => `${ch} waves ${s} s apart`).join(", ");
      replace(verdict, d.met
        ? h("p", { className: "ok", id: "deliver-by-met", "data-met": "true" }, `Meets it: every recipient gets it by ${d.deliverBy}`, paced ? ` (${paced}).` : ".")
        : h("div", { role: "alert", className: "notice late", id: "deliver-by-late", "data-met": "false" },
          h("p", {}, h("strong", {}, "Too late for some. "), `${d.message}.`),
          h("p", { className: "hint" }, "Choose a later time, or accept that they get it late (the audit trail records it).")));
    }, (err: unknown) => {
      if (mineAsked === asked) replace(verdict, err instanceof ApiError && err.code === "BAD_REQUEST" ? h("p", { role: "alert", className: "error" }, err.message) : kit.errorBox(err));
    });
  }
  const recheck = (): void => {
    check();
    changed();
  };
  for (const control of [when, mine, theirs]) control.addEventListener("change", recheck);
  when.addEventListener("input", recheck);

  function refusal(err: unknown): HTMLElement | null {
    if (!(err instanceof ApiError) || err.code !== "PRECONDITION_FAILED") return null;
    return h("div", { role: "alert", className: "notice late", id: "deliver-by-refused" },
      h("p", {}, h("strong", {}, "Not sent: it would be late. "), err.message),
      h("p", {}, "Choose a later “Deliver by”, or tick “Send anyway if some get it late” and confirm again."));
  }

  const element = h("fieldset", { className: "deliver-by", id: "deliver-by" }, h("legend", {}, "Deadline"),
    whenRow.row,
    h("div", { className: "field check" }, mine, h("label", { for: mine.id }, `My time (${zoneName()})`)),
    h("div", { className: "field check" }, theirs, h("label", { for: theirs.id }, "Each recipient's own local time")),
    verdict,
    h("div", { className: "field check" }, late, h("label", { for: late.id }, "Send anyway if some get it late")));
  return { element, value, refusal, check };
}

/** The deadline a held send asked for, on its approval request: approving pins it (and acceptLate). */
export function askedDeadline(spelled: string | null, acceptLate: boolean): HTMLElement | null {
  if (!spelled) return null;
  const local = spelled.startsWith("{") ? (JSON.parse(spelled) as { localTime?: string; timeZone?: string | null }) : null;
  const when = local ? `${(local.localTime ?? "").replace("T", " ")} ${local.timeZone ?? "in each recipient's own time"}` : timeEl(spelled);
  return h("p", { "data-field": "deliverBy" }, "Deliver by ", when,
    acceptLate ? ", sending anyway if some get it late" : "", ". Approving approves this deadline too.");
}

/** A dispatch behind its deadline, in words: "behind: expected to finish 07:40, 40 min after its
 *  deadline"; null for one on time or without a deadline. */
export function deadlineNotice(d: Dispatch): HTMLElement | null {
  const deadline = d.deadline;
  if (!deadline) return null;
  const behind = deadline.behindSeconds;
  if (d.status === "sending" && behind && d.plan) {
    const minutes = Math.max(1, Math.round(behind / 60));
    return h("p", { role: "status", className: "notice late deadline-behind", "data-behind": String(behind) },
      "Behind: expected to finish ", timeEl(d.plan.finishesAt, true), `, ${minutes} min after its deadline (${deadline.label}).`);
  }
  return h("p", { className: "muted deadline", "data-late": deadline.lateAt ? "true" : "false" }, `Deliver by ${deadline.label}`,
    deadline.lateAt ? ` · fell behind at ${localText(deadline.lateAt, true)}` : "",
    deadline.acceptLate ? ` · sent accepting ${deadline.lateForecast} late` : "");
}
