// One dispatch's progress, per channel: the counters that move on that channel, any exception counter
// that is not zero, and the rest (pages, passes, zeros) behind "Details". A counter the server adds later
// is shown without console work: in the list when it is not zero, under Details otherwise.
import type { Dispatch } from "./api";
import { h } from "./dom";
import { words } from "./explain";
import { reasonSentence } from "./messages";
import { timeEl } from "./time";
import { deadlineNotice } from "./deliver_by";

/** What moves on each channel as it goes well: recipients handed on, and recipients reached. */
const MOVING: Record<string, string[]> = { notify: ["enqueued", "acknowledged"], email: ["enqueued", "emailed"] };
/** What only moves when something did not go to plan; shown whenever it is not zero. */
const EXCEPTIONS = ["rejected", "hardBounces", "complaints", "suppressed", "uncertain", "throttled", "capped", "deferred", "missed", "pageFailures"];
/** Counters of the other channel, which never move on this one: left out while zero ("Emailed 0" on a
 *  notification dispatch says nothing). A new counter is in neither list, so it always shows. */
const OTHER_CHANNEL: Record<string, Set<string>> = {
  notify: new Set(["emailed", "uncertain", "throttled", "hardBounces", "complaints"]),
  email: new Set(["acknowledged", "suppressed"]),
};
/** Numbers of DispatchPublic that are settings, not counts. */
const NOT_COUNTERS = new Set(["maxLateSeconds"]);
// (the experiment's numbers are settings too, but they sit in a nested object, never in this list)

const LABELS: Record<string, Record<string, string>> = {
  notify: { enqueued: "Sent to their inbox", acknowledged: "Received", rejected: "Refused by their inbox", suppressed: "Skipped: opted out since the review" },
  email: { enqueued: "Handed to the email provider", emailed: "Accepted by the provider", rejected: "Refused by the provider", hardBounces: "Hard bounces reported", complaints: "Spam complaints reported" },
  any: {
    uncertain: "Uncertain: the provider's answer was lost (not retried)",
    throttled: "Slowed down by the provider (retried)",
    capped: "Held back by the frequency cap",
    deferred: "Waiting for their local send time",
    missed: "Missed: ready too late to send",
    pageFailures: "Failed attempts at the current page",
    pages: "Pages walked",
    pass: "Pass over the audience",
    acknowledged: "Acknowledged",
    emailed: "Emailed",
    suppressed: "Suppressed",
    rejected: "Rejected",
    enqueued: "Handed on",
  },
};
const STATUS: Record<string, string> = {
  scheduled: "Scheduled",
  sending: "Sending",
  paused: "Paused by the health guard",
  completed: "Completed",
  stopped: "Stopped",
  failed: "Failed",
  missed: "Missed",
  cancelled: "Cancelled",
  needs_review: "Needs review",
};

function label(channel: string, key: string): string {
  return LABELS[channel]?.[key] ?? LABELS["any"]?.[key] ?? words(key);
}

/** Recipients whose outcome is known: each counter belongs to one channel, so one sum serves both. */
export function settled(d: Dispatch): number {
  return d.acknowledged + d.rejected + d.suppressed + (d.emailed ?? 0) + (d.uncertain ?? 0);
}

/** Pages are all walked but deliveries are still out: a notification counts once its receiver
 *  acknowledged it, after the page. Watched for ten minutes after the end, not forever. */
export function inFlight(d: Dispatch): boolean {
  const recent = !d.finishedAt || Date.now() - Date.parse(d.finishedAt) < 10 * 60 * 1000;
  return d.status === "completed" && recent && settled(d) < d.enqueued;
}

/** A dispatch's fields by name: the screen also shows counters a newer server adds (any number it does
 *  not know), so it reads them by name rather than by the generated type's closed set. */
function fields(d: Dispatch): Record<string, unknown> {
  return d as unknown as Record<string, unknown>;
}

function counterList(d: Dispatch, keys: string[], id?: string): HTMLElement {
  return h("dl", { className: "counts", ...(id ? { id } : {}) }, ...keys.flatMap((k) => [
    h("dt", {}, k === "deferred" && d.phase === "testing" ? "Waiting: their local send time, or the test's decision" : label(d.channel, k)),
    h("dd", { "data-counter": k.toLowerCase() }, String(fields(d)[k] as number)),
  ]));
}

/** Why the health guard paused this dispatch, in the admin's words, with the numbers. */
const RATE_WORDS: Record<string, string> = {
  hardBounce: "hard-bounce rate",
  complaint: "spam-complaint rate",
  rejection: "rejection rate",
};

function percent(value: number): string {
  return `${(value * 100).toFixed(value < 0.01 ? 2 : 1)}%`;
}

function pauseNotice(d: Dispatch, resume: ((d: Dispatch) => HTMLElement | null) | undefined): HTMLElement | null {
  if (d.status !== "paused") return null;
  const r = d.pauseReason;
  if (r && "approved" in r) {  // approval_exceeded: the audience outgrew its approval (approvals.ts approves anew)
    return h("div", { role: "alert", className: "notice paused", id: `paused-${d.dispatchId}` },
      h("p", {}, h("strong", {}, "Paused: nothing more is sent. "),
        `The approval covered ${r.approved} recipients; the next page would have reached ${r.reach}. ${reasonSentence(r.reason ?? "approval_exceeded")}`),
      h("p", { className: "api-message", "data-pause-reason": r.reason ?? "approval_exceeded" }, r.message),
      d.pausedAt ? h("p", { className: "muted" }, "Paused ", timeEl(d.pausedAt)) : null,
      resume ? resume(d) : null);
  }
  const why = r
    ? `Its ${RATE_WORDS[r.rate] ?? words(r.rate)} reached ${percent(r.value)} over ${r.sample} recipients, above the limit of ${percent(r.limit)}.`
    : "";
  return h("div", { role: "alert", className: "notice paused", id: `paused-${d.dispatchId}` },
    h("p", {}, h("strong", {}, "Paused: nothing more is sent. "), why,
      " Check the list or the copy; resuming goes on from where it stopped, and the guard then judges only what is sent after it."),
    r ? h("p", { className: "api-message", "data-pause-reason": r.rate }, r.message) : null,
    d.pausedAt ? h("p", { className: "muted" }, "Paused ", timeEl(d.pausedAt)) : null,
    resume ? resume(d) : null);
}

const METRIC_WORDS: Record<string, string> = { emailClicked: "email clicks", clicked: "in-app clicks", shown: "in-app views" };

/** An A/B test wave: while testing, who gets what and when it is decided, with `choose` (the
 *  "choose this variant now" controls, absent: the caller may not); once decided, the winner, each
 *  variant's rate over its test recipients, and who decided. */
function testWaveNotice(d: Dispatch, choose: ((d: Dispatch) => HTMLElement | null) | undefined): HTMLElement | null {
  const x = d.experiment;
  if (!x) return null;
  const metric = METRIC_WORDS[x.metric] ?? words(x.metric);
  if (d.decision) {
    const r = d.decision;
    // A tie or no evidence is no win: said in words, so nobody reads the first variant as the better one.
    const undecided = r.reason === "tie" || r.reason === "insufficient_evidence";
    return h("div", { className: "notice test-wave decided", id: `decision-${d.dispatchId}` },
      h("p", {}, h("strong", {}, undecided ? `Variant ${r.winner} is sent` : `Variant ${r.winner} won`), ` on ${metric}; everyone outside the ${percent(x.testShare)} test wave gets only it.`),
      undecided && r.reason ? h("p", { className: "undecided", "data-decision-reason": r.reason }, reasonSentence(r.reason)) : null,
      h("ul", { className: "rates" }, ...r.rates.map((v) => h("li", { "data-variant": v.variantId },
        `${v.variantId}: ${v.numerator} of ${v.denominator} test recipients (${percent(v.rate)})`))),
      h("p", { className: "muted" }, `Decided by ${r.decidedBy === "system:test-wave" ? "the system on time" : r.decidedBy} `, timeEl(r.decidedAt)));
  }
  if (d.phase !== "testing" || d.status !== "sending") return null;
  return h("div", { className: "notice test-wave", id: `testing-${d.dispatchId}` },
    h("p", {}, h("strong", {}, "Testing variants: "), `${percent(x.testShare)} of the recipients get their variant first; the variant with the highest rate of ${metric} wins at `,
      d.decideAt ? timeEl(d.decideAt) : "its decision time", ", and the rest then gets only the winner."),
    choose ? choose(d) : null);
}

/** The review's forecast against the progress so far (getDispatch's plan): the finish re-estimated from
 *  the rate so far, the forecast's, and how far it was off. */
function liveEstimate(d: Dispatch): HTMLElement | null {
  const plan = d.plan;
  if (!plan) return null;
  const off = plan.error == null ? "" : ` (forecast ${plan.error >= 0 ? "+" : ""}${Math.round(plan.error * 100)}% on the duration)`;
  return h("p", { className: "muted live-estimate" },
    `${d.status === "sending" ? "Expected to finish" : "Estimated finish"} `, timeEl(plan.finishesAt),
    plan.rate == null ? "" : ` at ${plan.rate}/s`, " · forecast ", timeEl(plan.forecastFinishesAt), off);
}

/** The article for one channel's dispatch; `planned` is the reviewed recipient count, if known;
 *  `resume` builds the control that resumes a paused or failed one (absent: the caller may not);
 *  `choose` the controls that decide a test wave now. */
export function progressView(d: Dispatch, planned: number, resume?: (d: Dispatch) => HTMLElement | null,
  choose?: (d: Dispatch) => HTMLElement | null, schedule?: (d: Dispatch) => HTMLElement | null): HTMLElement {
  const heading = h("h3", {}, `${d.channel === "email" ? "Email" : "Notifications"}: `, h("span", { className: "dispatch-status" }, STATUS[d.status] ?? d.status));
  // A schedule that never started (waiting, missed, cancelled, held): its notice, no bars of nothing.
  if (d.sendAt && !d.startedAt) {
    return h("article", { className: `dispatch ${d.status}`, "data-channel": d.channel, "data-status": d.status }, heading, schedule ? schedule(d) : null);
  }
  const all = fields(d);
  const numbers = Object.keys(all).filter((k) => typeof all[k] === "number" && !NOT_COUNTERS.has(k))
    .filter((k) => all[k] !== 0 || !OTHER_CHANNEL[d.channel]?.has(k));
  const moving = (MOVING[d.channel] ?? ["enqueued"]).filter((k) => numbers.includes(k));
  const known = new Set([...moving, ...EXCEPTIONS, "pages", "pass"]);
  const raised = numbers.filter((k) => !moving.includes(k) && (EXCEPTIONS.includes(k) || !known.has(k)) && (all[k] as number) !== 0);
  const rest = numbers.filter((k) => !moving.includes(k) && !raised.includes(k));
  const done = settled(d);
  const total = Math.max(d.enqueued, done, d.status === "sending" ? planned : 0, 1);
  const barId = `bar-${d.dispatchId}`;
  if (d.status !== "sending" && inFlight(d)) heading.append(` (${d.enqueued - done} awaiting their inbox)`);
  return h("article", { className: `dispatch ${d.status}`, "data-channel": d.channel, "data-status": d.status },
    heading,
    h("label", { for: barId }, `${done} of ${total} recipients reached or settled`),
    h("progress", { id: barId, max: total, value: done }),
    counterList(d, moving, `counters-${d.channel}`),
    raised.length ? h("div", { className: "exceptions", role: "group", "aria-label": "Needs a look" }, counterList(d, raised)) : null,
    h("p", { className: "muted" },
      d.startedAt ? h("span", {}, "Started ", timeEl(d.startedAt)) : null,
      d.finishedAt ? h("span", {}, " · finished ", timeEl(d.finishedAt)) : null,
      d.nextPageAt && d.status === "sending" ? h("span", {}, " · next wave at ", timeEl(d.nextPageAt)) : null),
    d.sendAt && schedule ? schedule(d) : null,
    liveEstimate(d),
    deadlineNotice(d),
    pauseNotice(d, resume),
    testWaveNotice(d, choose),
    d.lastError ? h("p", { className: "error" }, `Last error: ${d.lastError}`) : null,
    d.status === "failed" && resume ? resume(d) : null,
    rest.length ? h("details", { className: "counter-details" }, h("summary", {}, "Details"), counterList(d, rest)) : null);
}
