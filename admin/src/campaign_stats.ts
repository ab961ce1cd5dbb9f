// A campaign page's Stats section: distinct profiles at each step as plain SVG bars (with a table for
// screen readers; "Unsubscribed": opted out through this campaign's email link), the A/B variants side by side, a follow-up draft for those who never saw the
// campaign, and the recipients download.
import type { Campaign, Definition, Stats, VariantStats } from "./api";
import { h, replace, svg } from "./dom";
import type { CampaignPage } from "./kit";
import { recipientsDownload } from "./transfer";

export interface StatsSection {
  element: HTMLElement;
  /** Reads the stats again and redraws the chart (a failure shows in its place). */
  refresh(): Promise<void>;
}

export function statsSection(page: CampaignPage): StatsSection {
  const { kit, id } = page;
  // Stats chart: distinct profiles at each step, plain SVG bars.
  const statsOut = h("div", { id: "stats-chart" });
  async function refreshStats(): Promise<void> {
    const s = await kit.api.call("campaigns.getStats", { campaignId: id }).catch((err: unknown) => {
      replace(statsOut, kit.errorBox(err));
      return null;
    });
    if (s && page.onScreen()) replace(statsOut, chart(s));
  }
  // Follow-up: a draft with this campaign's content over a live segment of its audience
  // who never saw it, opened for editing; its own window, no dispatch of its own yet.
  const remindOut = h("div", { id: "remind-result" });
  const remindBtn: HTMLButtonElement = kit.button("Remind those who did not see it", () => {
    void kit.guarded(remindBtn, () => kit.api.call("campaigns.create", reminderOf(page.current)), (err) => replace(remindOut, kit.errorBox(err))).then((draft) => {
      if (!draft) return;
      kit.announce(`Created the reminder draft ${draft.id}.`);
      location.hash = `#/c/${encodeURIComponent(draft.id)}`;
    });
  }, { id: "remind-button" });
  const element = h("section", { id: "stats", "aria-labelledby": "stats-h" }, h("h2", { id: "stats-h" }, "Stats"),
    h("p", { className: "hint" }, "Distinct profiles at each step."), statsOut, kit.button("Refresh stats", () => void refreshStats()),
    kit.can("campaigns.create") ? h("div", { className: "inline-form", role: "group", "aria-label": "Follow up" }, remindBtn,
      h("p", { className: "hint" }, "A new draft with this content for this campaign's audience who have not been shown it, evaluated when it is sent."), remindOut) : null,
    recipientsDownload(kit, id));
  return { element, refresh: refreshStats };
}

/** The follow-up of ``c``: its content (not its window) as a draft over a live segment, members of
 *  ``c`` who were never shown it. */
function reminderOf(c: Campaign): Definition & { id: string } {
  const { id, status: _status, tenantId: _tenant, createdAt: _created, updatedAt: _updated, revision: _revision,
    startsAt: _starts, endsAt: _ends, segment: _segment, ...content } = c;
  return {
    ...content,
    id: `${id}-reminder`.slice(0, 64).replace(/-+$/, ""),
    name: `${c.name} (reminder)`.slice(0, 200),
    segment: { all: [{ memberOf: id }, { engaged: { campaignId: id, event: "shown" }, not: true }] },
  };
}

function chart(s: Stats): Node {
  const steps: [string, number][] = [["Audience", s.audience], ["Notified", s.notified], ["Emailed", s.emailed], ["Email clicks", s.emailClicked], ["Shown", s.shown], ["Clicked", s.clicked], ["Dismissed", s.dismissed], ["Unsubscribed", s.unsubscribed]];
  const max = Math.max(1, ...steps.map(([, v]) => v));
  const rowH = 28;
  const labelW = 90;
  const barW = 200;
  const graphic = svg("svg", { viewBox: `0 0 ${labelW + barW + 60} ${steps.length * rowH}`, role: "img", "aria-labelledby": "stats-title", class: "chart" },
    svg("title", { id: "stats-title" }, `Distinct profiles: ${steps.map(([k, v]) => `${k} ${v}`).join(", ")}`),
    ...steps.map(([label, value], i) => svg("g", { transform: `translate(0 ${i * rowH})` },
      svg("text", { x: 0, y: 18, class: "chart-label" }, label),
      svg("rect", { x: labelW, y: 4, width: Math.round((value / max) * barW), height: 18, class: `chart-bar bar-${label.toLowerCase().replace(" ", "-")}` }),
      svg("text", { x: labelW + Math.round((value / max) * barW) + 6, y: 18, class: "chart-value" }, String(value)))));
  const table = h("table", { className: "visually-hidden" }, h("caption", {}, "Stats"), h("tbody", {}, ...steps.map(([k, v]) => h("tr", {}, h("th", { scope: "row" }, k), h("td", { "data-stat": k.toLowerCase().replace(" ", "-") }, String(v))))));
  return h("div", {}, graphic, table, variantChart(s.variants ?? {}));
}

// Per A/B variant: each step's distinct profiles, the arms' bars side by side, and the rate
// of each step over the arm's recipients in the table beside it.
const VARIANT_STEPS: [string, keyof VariantStats][] = [
  ["Recipients", "recipients"], ["Notified", "notified"], ["Emailed", "emailed"], ["Shown", "shown"],
  ["Clicked", "clicked"], ["Email clicked", "emailClicked"], ["Bounced", "bounced"], ["Complained", "complained"],
  ["Unsubscribed", "unsubscribed"],
];

function variantChart(variants: Record<string, VariantStats | undefined>): Node | null {
  const ids = Object.keys(variants);
  if (!ids.length) return null;
  const max = Math.max(1, ...ids.flatMap((id) => VARIANT_STEPS.map(([, k]) => variants[id]?.[k] ?? 0)));
  const barH = 12;
  const groupH = ids.length * barH + 10;
  const labelW = 110;
  const barW = 200;
  const graphic = svg("svg", { viewBox: `0 0 ${labelW + barW + 80} ${VARIANT_STEPS.length * groupH}`, role: "img", "aria-labelledby": "variant-stats-title", class: "chart", id: "variant-chart" },
    svg("title", { id: "variant-stats-title" }, `Per variant: ${ids.map((id) => `${id} ${VARIANT_STEPS.map(([label, k]) => `${label} ${variants[id]?.[k] ?? 0}`).join(", ")}`).join("; ")}`),
    ...VARIANT_STEPS.map(([label, k], i) => svg("g", { transform: `translate(0 ${i * groupH})` },
      svg("text", { x: 0, y: barH, class: "chart-label" }, label),
      ...ids.map((id, j) => {
        const value = variants[id]?.[k] ?? 0;
        const width = Math.round((value / max) * barW);
        return svg("g", { transform: `translate(0 ${j * barH})` },
          svg("rect", { x: labelW, y: 1, width, height: barH - 2, class: `chart-bar variant-bar variant-${j % 4}` }),
          svg("text", { x: labelW + width + 4, y: barH - 2, class: "chart-value" }, `${id} ${value}`));
      }))));
  const rate = (n: number, of: number): string => (of ? `${Math.round((n / of) * 1000) / 10}%` : "–");
  const table = h("table", { id: "variant-stats" }, h("caption", {}, "Per variant (distinct profiles, rate of recipients)"),
    h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Step"), ...ids.map((id) => h("th", { scope: "col" }, id)))),
    h("tbody", {}, ...VARIANT_STEPS.map(([label, k]) => h("tr", {}, h("th", { scope: "row" }, label),
      ...ids.map((id) => {
        const v = variants[id];
        const n = v?.[k] ?? 0;
        return h("td", { "data-variant": id, "data-stat": k }, k === "recipients" ? String(n) : `${n} (${rate(n, v?.recipients ?? 0)})`);
      })))));
  return h("div", { className: "variant-stats" }, h("h3", {}, "A/B variants"), graphic, h("div", { className: "table-wrap" }, table));
}
