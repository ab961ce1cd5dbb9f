// A campaign page's Audience section: a source (profile ids, DIDs, a tag, a profile's connections, or
// everyone) previewed, added or removed; the live segment (segment_builder.ts), saved with the campaign;
// and the audience listed ten at a time, static members apart from the segment's matches, with Remove
// only where removeAudience can remove (a match leaves when the rule stops matching it).
import type { Source } from "./api";
import { field, h, replace } from "./dom";
import type { CampaignPage } from "./kit";
import { refusal, segmentBuilder } from "./segment_builder";
import { segmentWords } from "./segment_words";

export interface AudienceSection {
  element: HTMLElement;
  /** Loads the first page of members; a failure shows beside the pager. */
  show(): Promise<void>;
}

export function audienceSection(page: CampaignPage): AudienceSection {
  const { kit, id } = page;
  const sourceType = h("select", { name: "source-type" }, ...[["profileIds", "Profile ids"], ["dids", "DIDs"], ["tag", "Tag"], ["connections", "Connections of a profile"], ["all", "Everyone"]].map(([v, l]) => h("option", { value: v ?? "" }, l ?? "")));
  const sourceValue = h("textarea", { rows: 3, name: "source-value", spellcheck: "false" });
  const valueField = field("Profile ids, DIDs, tag slug or profile id", sourceValue, "Lists: one per line or separated by commas.");
  sourceType.addEventListener("change", () => {
    valueField.row.hidden = sourceType.value === "all";
  });
  const audienceOut = h("div", { id: "audience-result", "aria-live": "polite" });
  function source(): Source {
    const items = sourceValue.value.split(/[\s,]+/).filter(Boolean);
    switch (sourceType.value) {
      case "dids":
        return { type: "dids", dids: items as [string, ...string[]] }; // an empty list: the API says so
      case "tag":
        return { type: "tag", slug: sourceValue.value.trim() };
      case "connections":
        return { type: "connections", profileId: sourceValue.value.trim() };
      case "all":
        return { type: "all" };
      default:
        return { type: "profileIds", profileIds: items as [string, ...string[]] };
    }
  }
  function audienceAction(label: string, path: "campaigns.previewAudience" | "campaigns.addAudience" | "campaigns.removeAudience"): HTMLButtonElement {
    const b: HTMLButtonElement = kit.button(label, () => void kit.guarded(b, async () => {
      replace(audienceOut, h("p", { className: "muted" }, `${label}…`));
      const changes = path !== "campaigns.previewAudience";
      let result: Node;
      if (path === "campaigns.removeAudience") {
        const r = await kit.api.call(path, { campaignId: id, source: source() });
        result = h("p", {}, `Removed: ${r.removed}`);
      } else {
        const r = await kit.api.call(path, { campaignId: id, source: source() });
        result = h("dl", { className: "counts" },
          h("dt", {}, "Matched"), h("dd", { id: "audience-count" }, String(r.count)),
          h("dt", {}, "Added"), h("dd", { id: "audience-added" }, String(r.added)),
          h("dt", {}, "Not found"), h("dd", { id: "audience-not-found" }, r.notFound.length ? r.notFound.join(", ") : "none"));
      }
      // The member list is reloaded before the result shows, so what the page shows agrees with itself.
      if (changes) {
        await loadMembers(true);
        void page.refreshStats();
      }
      replace(audienceOut, result);
    }, (err) => replace(audienceOut, kit.errorBox(err))));
    return b;
  }
  // The live segment: built and saved by whoever may update the campaign, read in words by anyone else.
  const segmentOut = h("div", { id: "segment-result", "aria-live": "polite" });
  function segmentPart(): HTMLElement {
    if (!kit.can("campaigns.update")) {
      return h("div", {}, segmentWords(page.current.segment), kit.roleNote("Changing the live segment", "campaigns.update"));
    }
    const builder = segmentBuilder(kit, page.current.segment);
    const save: HTMLButtonElement = kit.button("Save segment", () => void kit.guarded(save, async () => {
      replace(segmentOut);
      const c = await kit.api.call("campaigns.update", { campaignId: id, expectedUpdatedAt: page.current.updatedAt, segment: builder.read() });
      page.current = c;
      page.lifecycleChanged();
      await loadMembers(true);
      void page.refreshStats();
      replace(segmentOut, h("p", { className: "ok" }, c.segment ? `Segment saved (revision ${c.revision}).` : `Segment removed (revision ${c.revision}).`));
      kit.announce("Segment saved.");
    }, (err) => replace(segmentOut, refusal(kit, err))), { id: "save-segment" });
    return h("div", {}, builder.element, h("div", { className: "actions" }, save), segmentOut);
  }
  const segment = h("section", { id: "segment", "aria-labelledby": "segment-h" },
    h("h3", { id: "segment-h" }, "Live segment"),
    h("p", { className: "hint" }, "Besides the static members, everyone the rule matches when a send or the app asks; opt-outs, the age policy and caps still apply."),
    segmentPart());

  const removable = kit.can("campaigns.removeAudience");
  const members = h("tbody", {});
  const pager = h("div", { className: "actions" });
  const starts: (string | null)[] = [null]; // the cursor each page shown so far started from
  let membersLoad = 0; // only the latest load may draw: an older answer arriving late is dropped
  async function loadMembers(reset: boolean): Promise<void> {
    if (reset) starts.splice(1);
    const cursor = starts[starts.length - 1] ?? null;
    const mineLoad = ++membersLoad;
    const answer = await kit.api.call("campaigns.getAudience", { campaignId: id, limit: 10, ...(cursor ? { cursor } : {}) });
    if (mineLoad !== membersLoad) return;
    replace(members, ...answer.records.map((r) => h("tr", { "data-member": String(r.member) },
      h("td", {}, r.profileId), h("td", {}, r.did ?? "–"),
      h("td", {}, r.member ? "Static member" : "Matches the live segment"),
      h("td", {}, r.member ? (removable ? removeOne(r.profileId) : null) : h("span", { className: "muted" }, "Leaves when the rule stops matching")))));
    if (!answer.records.length) members.appendChild(h("tr", {}, h("td", { colspan: 4 }, "No members yet.")));
    replace(pager,
      h("span", { className: "muted" }, `Page ${starts.length}`),
      starts.length > 1 ? kit.button("Previous page", () => { starts.pop(); void loadMembers(false); }) : null,
      answer.hasMore && answer.cursor ? kit.button("Next page", () => { starts.push(answer.cursor); void loadMembers(false); }) : null);
  }
  function removeOne(profileId: string): HTMLButtonElement {
    const b: HTMLButtonElement = kit.button("Remove", () => void kit.guarded(b, async () => {
      const r = await kit.api.call("campaigns.removeAudience", { campaignId: id, source: { type: "profileIds", profileIds: [profileId] } });
      await loadMembers(true);
      void page.refreshStats();
      replace(audienceOut, h("p", {}, `Removed ${profileId}: ${r.removed}`));
    }, (err) => replace(audienceOut, kit.errorBox(err))), { "aria-label": `Remove ${profileId}` });
    return b;
  }
  const element = h("section", { id: "audience", "aria-labelledby": "audience-h" },
    h("h2", { id: "audience-h" }, "Audience"),
    field("Source type", sourceType).row, valueField.row,
    h("div", { className: "actions" },
      kit.can("campaigns.previewAudience") ? audienceAction("Preview count", "campaigns.previewAudience") : null,
      kit.can("campaigns.addAudience") ? audienceAction("Add to audience", "campaigns.addAudience") : null,
      kit.can("campaigns.removeAudience") ? audienceAction("Remove from audience", "campaigns.removeAudience") : kit.roleNote("Changing the audience", "campaigns.removeAudience")),
    audienceOut,
    segment,
    h("div", { className: "table-wrap" }, h("table", { id: "members" }, h("caption", {}, "Static members and the live segment's matches"),
      h("thead", {}, h("tr", {}, ...["Profile id", "DID", "In the audience as", "Remove"].map((t) => h("th", { scope: "col" }, t)))), members)),
    pager);
  return { element, show: () => loadMembers(true).catch((err: unknown) => replace(pager, kit.errorBox(err))) };
}
