// The review's "Schedule" choice, beside "Confirm and send": the reviewed send confirmed now, for later
// (campaigns.scheduleDispatch with the previewed token). When: a date and time typed in the admin's own
// zone (sent as the instant the hint echoes in UTC, so what is sent is what was read), or a wall-clock
// time in each recipient's own zone (perRecipient). How late it may still start (maxLateSeconds, typed
// in minutes) and what happens if the campaign changes before then (onChange); under the tenant's
// approval policy the API accepts only "review" and says so on that field, and a large send needs its
// approval first: the refusal (FORBIDDEN) is the same as a send's, in words (campaign_send.ts).
import { ApiError, type DispatchPreview } from "./api";
import { field, h, replace } from "./dom";
import type { CampaignPage } from "./kit";
import type { Experiment } from "./review_experiment";
import { echoUtc, timeEl, zoneName } from "./time";

type Refusal = (err: unknown, scheduling: boolean) => HTMLElement;

/** Blocks the schedule lifts: a window not started yet (judged at sendAt by the API) and missing
 *  translations once accepted; any other block stops a schedule as it stops a send. */
const SCHEDULABLE_BLOCKS = new Set(["not_started", "missing_translation"]);

/** The Schedule form for preview `p`; `fallback()` is the review's "send the base content" box and
 *  `experiment()` its A/B test wave (review_experiment.ts), both carried by the schedule as chosen. */
export function scheduleChoice(page: CampaignPage, p: DispatchPreview, fallback: () => boolean | undefined, refusal: Refusal,
  experiment: () => Experiment | undefined = () => undefined, deadline: () => object = () => ({})): HTMLElement | null {
  const { kit, id } = page;
  if (!kit.can("campaigns.scheduleDispatch")) {
    // One note for a role that may do neither: the send's own says which role sending needs.
    return kit.can("campaigns.dispatch") ? kit.roleNote("Scheduling a send", "campaigns.scheduleDispatch") : null;
  }
  const out = h("div", { id: "schedule-result", "aria-live": "polite" });
  const errors = new Map<string, HTMLElement>();

  const mine = h("input", { type: "radio", name: "schedule-zone", id: "schedule-zone-mine", value: "mine", checked: true });
  const theirs = h("input", { type: "radio", name: "schedule-zone", id: "schedule-zone-theirs", value: "theirs" });
  const when = h("input", { type: "datetime-local", name: "send-at", id: "schedule-at", required: true });
  const whenRow = field("Send at", when, `Your time (${zoneName()}).`);
  errors.set("sendAt", whenRow.error);
  const hint = whenRow.row.querySelector<HTMLElement>(".hint");
  const perRecipientHint = "Each recipient gets it at this time in their own zone (without a known zone: the campaign's zone, else UTC). It starts when the first zone (UTC+14) reaches it.";
  const echo = (): void => {
    if (!hint) return;
    if (theirs.checked) {
      hint.textContent = perRecipientHint;
      when.title = "";
    } else when.dispatchEvent(new Event("input"));
  };
  if (hint) echoUtc(when, hint, "choose when");
  mine.addEventListener("change", echo);
  theirs.addEventListener("change", echo);
  when.addEventListener("input", () => {
    if (theirs.checked && hint) hint.textContent = perRecipientHint;
  });

  const late = h("input", { type: "number", name: "max-late", id: "schedule-max-late", min: 0, max: 10080, step: 1, value: 60, inputmode: "numeric" });
  const lateRow = field("May start up to (minutes late)", late, "If nothing could start it by then (the machine was down), it is missed and nothing is sent.");
  errors.set("maxLateSeconds", lateRow.error);
  const onChange = h("select", { name: "on-change", id: "schedule-on-change" },
    h("option", { value: "review" }, "Hold it for review"),
    h("option", { value: "send_current" }, "Send the campaign as it is then"));
  const changeRow = field("If the campaign or its recipients change before then", onChange,
    "Under an approval policy a change always holds it for review: nobody approved the new version.");
  errors.set("onChange", changeRow.error);

  function clearErrors(): void {
    for (const el of errors.values()) {
      el.hidden = true;
      el.textContent = "";
    }
    for (const control of [when, late, onChange]) control.removeAttribute("aria-invalid");
  }
  function say(path: string, message: string, control: HTMLElement): void {
    const slot = errors.get(path);
    if (!slot) return;
    slot.hidden = false;
    slot.textContent = message;
    control.setAttribute("aria-invalid", "true");
  }

  const blocked = p.blockedReason && !SCHEDULABLE_BLOCKS.has(p.blockedReason);
  const go: HTMLButtonElement = kit.button("Schedule", () => {
    clearErrors();
    if (!when.value) {
      say("sendAt", "Choose the date and time to send at.", when);
      when.focus();
      return;
    }
    if (!theirs.checked && new Date(when.value).getTime() <= Date.now()) {
      say("sendAt", "Choose a time in the future, or confirm and send now.", when);
      when.focus();
      return;
    }
    const minutes = Number(late.value || "60");
    const sendAt = theirs.checked ? { localTime: when.value, perRecipient: true as const } : new Date(when.value).toISOString();
    const accept = fallback();
    const wave = experiment();
    void kit.guarded(go, () => kit.api.call("campaigns.scheduleDispatch", {
      campaignId: id, expectedPreviewToken: p.previewToken, sendAt,
      maxLateSeconds: Math.round(minutes * 60), onChange: onChange.value as "review" | "send_current",
      ...(accept === undefined ? {} : { acceptFallback: accept }), ...(wave ? { experiment: wave } : {}), ...deadline(),
    }), (err) => {
      const placed = placeIssues(err, say, { sendAt: when, maxLateSeconds: late, onChange });
      replace(out, placed ? h("p", { role: "alert", className: "error" }, "Fix the marked fields: nothing was scheduled.") : refusal(err, true));
    }).then((made) => {
      const first = made?.[0];
      if (!first) return;
      replace(out, h("p", { className: "ok", id: "schedule-done" }, "Scheduled for ", first.sendAt ? timeEl(first.sendAt) : "later",
        first.perRecipient ? ` (${first.sendLocalTime ?? when.value} in each recipient's zone)` : "",
        `: ${made.map((d) => d.channel).join(", ")}. Cancel it under Dispatch progress.`));
      go.disabled = true;
      kit.announce("Send scheduled.");
      void page.poll();
    });
  }, { id: "schedule-send", disabled: Boolean(blocked) });

  return h("details", { className: "schedule", id: "schedule" },
    h("summary", {}, "Schedule for later"),
    h("fieldset", {}, h("legend", {}, "Whose time"),
      h("div", { className: "field check" }, mine, h("label", { for: mine.id }, `My time (${zoneName()})`)),
      h("div", { className: "field check" }, theirs, h("label", { for: theirs.id }, "Each recipient's own local time"))),
    whenRow.row, lateRow.row, changeRow.row,
    h("p", { className: "hint" }, "Scheduling confirms exactly this review: if anything changed since, the server refuses and you review again."),
    h("div", { className: "actions" }, go), out);
}

/** Field issues of a refused schedule on the fields they name; true when any was placed. */
function placeIssues(err: unknown, say: (path: string, message: string, control: HTMLElement) => void, controls: Record<string, HTMLElement>): boolean {
  const issues = err instanceof ApiError && err.code === "BAD_REQUEST" ? err.issues : [];
  let placed = false;
  for (const issue of issues) {
    const key = issue.path.map(String).find((k) => k in controls);
    const control = key ? controls[key] : undefined;
    if (!key || !control) continue;
    say(key, issue.message, control);
    placed = true;
  }
  return placed;
}
