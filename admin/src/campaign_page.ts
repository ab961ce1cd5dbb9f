// One campaign's page (#/c/<id>): its status and lifecycle, a duplicate, a delete, and one section each for the
// definition, the audience, a test send, the review and send, live progress, stats and "explain a
// recipient" (each in its own campaign_*.ts module, sharing the CampaignPage of kit.ts).
import type { Status } from "./api";
import { audienceSection } from "./campaign_audience";
import { deleteControl } from "./campaign_delete";
import { definitionSection } from "./campaign_definition";
import { progressSection } from "./campaign_progress";
import { reviewSection, testSection } from "./campaign_send";
import { statsSection } from "./campaign_stats";
import { field, h, replace } from "./dom";
import { explainSection } from "./explain";
import type { CampaignPage, Kit } from "./kit";
import { inFlight } from "./progress";
import { campaignsNamed, knowCampaignNames } from "./segment_words";

export async function renderCampaign(kit: Kit, id: string): Promise<void> {
  const mine = kit.generation();
  const campaign = await kit.guarded(null, () => kit.api.call("campaigns.get", { campaignId: id }), (err) => kit.shell("Campaign", kit.errorBox(err)));
  if (!campaign || mine !== kit.generation()) return;
  await knowCampaignNames(kit, campaignsNamed(campaign.segment)); // the rule's words name campaigns
  if (mine !== kit.generation()) return;

  const statusBadge = h("span", { className: `badge ${campaign.status}`, id: "campaign-status" }, campaign.status);
  const lifecycleOut = h("div", {});
  // A go-live or a live change the tenant's approval policy holds: members see nothing new until then.
  const held = h("div", { id: "held-publish", "aria-live": "polite" });
  async function showHeld(): Promise<void> {
    if (!kit.can("campaigns.listAwaitingApproval")) return;
    const page = await kit.api.call("campaigns.listAwaitingApproval", undefined).catch(() => null);
    const request = page?.records.find((r) => r.campaignId === id && r.action === "publish");
    if (mine !== kit.generation()) return;
    replace(held, request ? h("p", { className: "notice", "data-field": "waiting" }, h("strong", {}, "Waiting for another publisher. "),
      `Members see the last approved revision (nothing, for a go-live) until ${request.mayApprove ?? "another publisher"} approves this one under Approvals.`) : null);
  }
  const lifecycle = h("div", { className: "actions", role: "group", "aria-label": "Lifecycle" });
  const page: CampaignPage = {
    kit,
    id,
    current: campaign,
    planned: null,
    onScreen: () => mine === kit.generation(),
    lifecycleChanged: renderLifecycle,
    poll,
    refreshStats: () => stats.refresh(),
  };
  function renderLifecycle(): void {
    statusBadge.className = `badge ${page.current.status}`;
    statusBadge.textContent = page.current.status;
    const to = (label: string, status: Status): HTMLButtonElement => {
      const b: HTMLButtonElement = kit.button(label, () => void kit.guarded(b, () => kit.api.call("campaigns.setStatus", { campaignId: id, status }), (err) => replace(lifecycleOut, kit.errorBox(err))).then((c) => {
        if (c) {
          page.current = c;
          replace(lifecycleOut);
          renderLifecycle();
          void showHeld();
          kit.announce(`Campaign is ${c.status}.`);
        }
      }));
      return b;
    };
    const s = page.current.status;
    if (!kit.can("campaigns.setStatus")) {
      replace(lifecycle, kit.roleNote("Going live, pausing and archiving", "campaigns.setStatus"));
      return;
    }
    replace(lifecycle,
      s === "draft" ? to("Go live", "live") : null,
      s === "live" ? to("Pause", "paused") : null,
      s === "paused" ? to("Resume", "live") : null,
      s !== "archived" ? to("Archive", "archived") : null);
  }
  renderLifecycle();
  void showHeld();

  const definition = definitionSection(page);
  const audience = audienceSection(page);
  const test = testSection(page);
  const review = reviewSection(page);
  const progress = progressSection(page);
  const stats = statsSection(page);

  let dueTimer = 0;
  async function poll(): Promise<void> {
    if (!page.onScreen()) return;
    const [dispatches] = await Promise.all([kit.api.call("campaigns.listDispatches", { campaignId: id }).catch(() => null), stats.refresh()]);
    if (!page.onScreen() || !dispatches) return;
    progress.draw(dispatches);
    // Poll while anything is sending; the list and stats answer in one batched request.
    if (dispatches.some((d) => d.status === "sending" || inFlight(d))) window.setTimeout(() => void poll(), 1000);
    else kit.announce("No dispatch is sending.");
    // A scheduled one: read again when it is due (the sweeper starts it within a minute), at most hourly.
    const due = dispatches.filter((d) => d.status === "scheduled" && d.sendAt).map((d) => Date.parse(d.sendAt ?? ""));
    window.clearTimeout(dueTimer); // one watch of the schedule, however many polls ran
    if (due.length && !dispatches.some((d) => d.status === "sending")) {
      dueTimer = window.setTimeout(() => void poll(), Math.min(Math.max(Math.min(...due) - Date.now(), 10_000), 3_600_000));
    }
  }

  // Duplicate: the definition, translations included, into a new draft; never the
  // audience, state or dispatches. Folded away (it is not what a campaign page is for), and the copy is
  // named apart from its original so the list tells them apart.
  const dupId = h("input", { type: "text", name: "duplicate-id", id: "duplicate-id", maxlength: 64, autocomplete: "off", spellcheck: "false", value: `${id}-copy` });
  const dupName = h("input", { type: "text", name: "duplicate-name", id: "duplicate-name", maxlength: 200, value: `${campaign.name} (copy)` });
  const dupOut = h("div", { id: "duplicate-result" });
  const dupBtn: HTMLButtonElement = kit.button("Duplicate", () => {
    const newId = dupId.value.trim();
    const name = dupName.value.trim() || null;
    void kit.guarded(dupBtn, () => kit.api.call("campaigns.duplicate", { campaignId: id, id: newId, name }), (err) => replace(dupOut, kit.errorBox(err))).then((copy) => {
      if (!copy) return;
      kit.announce(`Duplicated as ${copy.name}.`);
      location.hash = `#/c/${encodeURIComponent(copy.id)}`;
    });
  }, { id: "duplicate-button" });
  const duplicate = kit.can("campaigns.duplicate")
    ? h("details", { className: "duplicate", id: "duplicate" }, h("summary", {}, "Duplicate this campaign"),
      h("div", { className: "inline-form", role: "group", "aria-label": "Duplicate the campaign" },
        field("Id of the copy", dupId, "A new draft with this definition and its translations; no audience.").row,
        field("Name of the copy", dupName).row, h("div", { className: "actions" }, dupBtn), dupOut))
    : null;

  kit.shell(page.current.name,
    h("div", { className: "campaign-head" }, h("p", {}, "Status: ", statusBadge, " · id ", h("code", {}, id), campaign.priority && campaign.priority !== "normal" ? h("span", { className: `badge priority-${campaign.priority}`, id: "campaign-priority" }, campaign.priority) : null), lifecycle, lifecycleOut, held, duplicate, deleteControl(kit, campaign)),
    h("nav", { className: "sections", "aria-label": "Campaign sections" }, ...[["definition", "Definition"], ["audience", "Audience"], ["test", "Test"], ["review", "Review and send"], ["progress", "Progress"], ["stats", "Stats"], ["explain", "Explain a recipient"]].map(([a, l]) => h("a", { href: `#/c/${encodeURIComponent(id)}`, "data-target": a ?? "", onclick: jump as EventListener }, l ?? ""))),
    definition, audience.element, test, review, progress.element, stats.element, explainSection(kit.api, id, kit.guarded, kit.errorBox, () => page.current.segment));
  await Promise.all([audience.show(), poll()]);
}

/** In-page section links keep the route in the fragment and move focus to the section heading. */
function jump(ev: Event): void {
  ev.preventDefault();
  const target = (ev.currentTarget as HTMLElement).dataset["target"];
  const heading = target ? document.getElementById(`${target}-h`) : null;
  if (heading) {
    heading.tabIndex = -1;
    heading.focus();
    heading.scrollIntoView();
  }
}
