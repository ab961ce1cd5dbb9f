// A scheduled dispatch in the progress list: when it is due, in the admin's time (UTC on hover, time.ts),
// what it does if the campaign changes meanwhile and how late it may start, with Cancel for who may
// (campaigns.cancelScheduledDispatch cancels every channel of the schedule); and once due, what became of
// it: started, missed, cancelled, held for review or failed, with the reason the API recorded (lastError).
import type { Dispatch } from "./api";
import { h } from "./dom";
import { timeEl } from "./time";

/** Why a schedule was cancelled: by an admin, or because the campaign was not live when it was due. */
function cancelledWhy(reason: string | null | undefined): string {
  if (!reason || reason === "cancelled") return "an admin cancelled it.";
  const status = /^campaign_(\w+)$/.exec(reason)?.[1];
  return status ? `the campaign was ${status} when it was due.` : `${reason}.`;
}

const OUTCOME: Record<string, (d: Dispatch) => string> = {
  missed: (d) => `Missed: nothing was sent, because nothing could start it in time (${(d.lastError ?? "the sweeper ran too late").replace(/^missed: /, "")}).`,
  cancelled: (d) => `Cancelled, nothing was sent: ${cancelledWhy(d.lastError)}`,
  needs_review: (d) => `Held for review, nothing was sent: ${d.lastError ?? "the campaign changed since the review"}. Review and send, or schedule again.`,
  failed: (d) => `Failed, nothing was sent: ${d.lastError ?? "no reason recorded"}.`,
};

function lateness(seconds: number | null | undefined): string {
  if (seconds == null) return "";
  if (seconds === 0) return "It must start on time, or it is missed.";
  const minutes = Math.round(seconds / 60);
  return `If it cannot start within ${minutes >= 120 ? `${Math.round(minutes / 60)} hours` : `${minutes} minutes`} of that, it is missed and nothing is sent.`;
}

/** The schedule's notice; `cancel` builds the Cancel control (absent: the caller may not cancel). */
export function scheduleNotice(d: Dispatch, cancel?: (d: Dispatch) => HTMLElement | null): HTMLElement | null {
  if (!d.sendAt) return null;
  const due = d.perRecipient
    ? h("span", {}, `${d.sendLocalTime ?? "the chosen time"} in each recipient's own zone, from `, timeEl(d.sendAt))
    : timeEl(d.sendAt);
  if (d.startedAt) return h("p", { className: "muted schedule-line", id: `scheduled-${d.dispatchId}` }, "Scheduled for ", due, "; started ", timeEl(d.startedAt));
  const outcome = OUTCOME[d.status];
  if (outcome) {
    return h("div", { role: "alert", className: "notice paused schedule-outcome", id: `scheduled-${d.dispatchId}`, "data-outcome": d.status },
      h("p", {}, h("strong", {}, outcome(d))), h("p", { className: "muted" }, "It was scheduled for ", due));
  }
  return h("div", { className: "notice schedule-pending", id: `scheduled-${d.dispatchId}` },
    h("p", {}, h("strong", {}, "Scheduled for "), due, "."),
    h("p", {}, d.onChange === "send_current"
      ? "If the campaign or its recipients change before then, it sends the campaign as it is then."
      : "If the campaign or its recipients change before then, it is held for review and nothing is sent.", " ", lateness(d.maxLateSeconds)),
    d.approvedBy ? h("p", { className: "muted" }, `Approved by ${d.approvedBy}.`) : null,
    cancel ? cancel(d) : null);
}
