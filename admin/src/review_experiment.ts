// The review's A/B test wave, for a campaign with variants: a share of the recipients gets their own
// variant first, the variant with the best rate of the chosen metric wins at the decision time, and
// the rest then gets only the winner (campaigns.dispatch and scheduleDispatch take it as `experiment`).
// Each choice asks the API again (previewDispatch with the experiment) for the test wave's recipients
// per variant, and says a refusal in words: too few per variant, a test already decided, a metric the
// campaign cannot measure. The preview token is the same with or without the test wave, so the review
// (and an approval of it under the tenant's two-person policy) stands; the dispatch carries the choice.
// Each change also tells the review (``changed``), which asks again for its forecast with the test wave
// (the rest waits for the decision, so "finishes at" moves) and for the deadline's verdict.
import { ApiError, type Campaign, type DispatchPreview } from "./api";
import { field, h, replace } from "./dom";
import type { CampaignPage } from "./kit";
import { reasonSentence } from "./messages";

export interface Experiment {
  testShare: number;
  metric: "clicked" | "shown" | "emailClicked";
  decideAfterSeconds: number;
}

export interface ExperimentChoice {
  /** The fieldset in the review; null for a campaign without variants (nothing to test). */
  element: HTMLElement | null;
  /** The test wave to send with, or undefined when the publisher chose none. */
  value(): Experiment | undefined;
  /** A refused send or schedule that is about the test wave, in words; null for any other refusal. */
  refusal(err: unknown): HTMLElement | null;
}

const METRICS: { value: Experiment["metric"]; label: string; fits(c: Campaign): boolean }[] = [
  { value: "emailClicked", label: "Email clicks", fits: (c) => c.channels.includes("email") },
  { value: "clicked", label: "In-app clicks", fits: (c) => Boolean(c.message) },
  { value: "shown", label: "In-app views", fits: (c) => Boolean(c.message) },
];

/** The test wave's fieldset for the review of preview `p` (module comment). */
export function experimentChoice(page: CampaignPage, p: DispatchPreview, changed: () => void): ExperimentChoice {
  const { kit, id } = page;
  const variants = page.current.variants ?? [];
  const metrics = METRICS.filter((m) => m.fits(page.current));
  if (variants.length < 2) return { element: null, value: () => undefined, refusal: () => null };
  const on = h("input", { type: "checkbox", id: "experiment-on", name: "experiment-on" });
  const share = h("input", { type: "number", id: "experiment-share", name: "experiment-share", min: 5, max: 50, step: 1, value: 20, inputmode: "numeric" });
  const metric = h("select", { id: "experiment-metric", name: "experiment-metric" },
    ...metrics.map((m) => h("option", { value: m.value }, m.label)));
  const hours = h("input", { type: "number", id: "experiment-decide", name: "experiment-decide", min: 0.25, max: 168, step: 0.25, value: 24, inputmode: "decimal" });
  const out = h("div", { id: "experiment-result", "aria-live": "polite" });
  const shareRow = field("Test wave (% of the recipients)", share, "From 5% to 50%: they get their own variant first.");
  const metricRow = field("The variant wins on", metric, "Only what this campaign's channels can measure.");
  const decideRow = field("Decide after (hours)", hours, "Then everyone else gets only the winner; an admin may choose one earlier.");
  const rows = h("div", { className: "experiment-fields", hidden: true }, shareRow.row, metricRow.row, decideRow.row, out);

  function value(): Experiment | undefined {
    if (!on.checked || !metrics.length) return undefined;
    return {
      testShare: Math.min(0.5, Math.max(0.05, Number(share.value || "20") / 100)),
      metric: metric.value as Experiment["metric"],
      decideAfterSeconds: Math.max(1, Math.round(Number(hours.value || "24") * 3600)),
    };
  }

  let asked = 0;
  async function check(): Promise<void> {
    const experiment = value();
    if (!experiment) return;
    const mine = (asked += 1);
    replace(out, h("p", { className: "muted" }, "Counting the test wave…"));
    try {
      const answer = await kit.api.call("campaigns.previewDispatch", { campaignId: id, experiment });
      if (mine !== asked || !page.onScreen()) return;
      replace(out, waveTable(answer, variants.map((v) => v.id), experiment, answer.previewToken !== p.previewToken));
    } catch (err) {
      if (mine !== asked || !page.onScreen()) return;
      replace(out, refusal(err) ?? kit.errorBox(err));
    }
  }
  let timer: number | undefined;
  const recheck = (): void => {
    void check();
    changed();
  };
  const later = (): void => {
    window.clearTimeout(timer);
    timer = window.setTimeout(recheck, 300);
  };
  on.addEventListener("change", () => {
    rows.hidden = !on.checked;
    if (on.checked) recheck();
    else {
      asked += 1; // an answer still on its way is about the test just turned off
      replace(out);
      changed();
    }
  });
  share.addEventListener("input", later);
  hours.addEventListener("input", later);
  metric.addEventListener("change", recheck);

  const element = h("fieldset", { id: "experiment", className: "experiment" }, h("legend", {}, "A/B test wave"),
    metrics.length
      ? h("div", { className: "field check" }, on, h("label", { for: on.id }, `Test the ${variants.length} variants on part of the audience first`))
      : h("p", { className: "hint", id: "experiment-unavailable" }, "A test wave needs something to measure: an in-app message (clicks, views) or the email channel (clicks)."),
    rows);
  return { element, value, refusal };
}

/** Each variant's test recipients, as the API counted them for this share. */
function waveTable(answer: DispatchPreview, order: string[], x: Experiment, changed: boolean): HTMLElement {
  const wave = answer.testWave ?? {};
  const total = order.reduce((sum, v) => sum + (wave[v] ?? 0), 0);
  return h("div", { id: "experiment-wave" },
    h("div", { className: "table-wrap" }, h("table", {}, h("caption", {}, `Test wave: ${total} of ${answer.recipientCount} recipients (${Math.round(x.testShare * 100)}%)`),
      h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Variant"), h("th", { scope: "col" }, "Test recipients"))),
      h("tbody", {}, ...order.map((v) => h("tr", { "data-variant": v }, h("th", { scope: "row" }, v), h("td", {}, String(wave[v] ?? 0))))))),
    // The forecast with the test wave: when the rest waits for the decision (plan.py's test_wave).
    ...Object.values(answer.plan ?? {}).flatMap((plan) => (plan?.shapedBy ?? []).filter((s) => s.kind === "test_wave"))
      .map((s) => h("p", { className: "hint wave-forecast" }, s.message)),
    changed ? h("p", { role: "alert", className: "error" }, "The campaign or its audience changed since the review: review again before confirming.") : null);
}

/** A refusal that is about the test wave, in words; null for any other. */
function refusal(err: unknown): HTMLElement | null {
  if (!(err instanceof ApiError) || err.code !== "BAD_REQUEST" || !err.message.includes("experiment")) return null;
  const tooFew = err.issues.some((i) => i.code === "too_few_per_variant");
  const decided = err.message.includes("already decided");
  const why = tooFew
    ? reasonSentence("too_few_per_variant")
    : decided
      ? "This campaign already decided an A/B test: its readers got the winner, and a second test would serve some of them another variant. Send without a test wave."
      : "This campaign cannot run this test wave.";
  return h("div", { role: "alert", className: "error", id: "experiment-refused", "data-refusal": tooFew ? "too_few_per_variant" : decided ? "decided" : "other" },
    h("p", {}, h("strong", {}, "No test wave: "), why),
    h("p", { className: "api-message" }, `The server said: ${err.message.replace(/^experiment: /, "")}`));
}
