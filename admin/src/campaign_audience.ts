// A campaign page's Audience section: a source (profile ids, DIDs, a tag, a profile's connections, or
// everyone) previewed, added or removed, and the members listed ten at a time.
import type { Source } from "./api";
import { field, h, replace } from "./dom";
import type { CampaignPage } from "./kit";

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
    replace(members, ...answer.records.map((r) => h("tr", {}, h("td", {}, r.profileId), h("td", {}, r.did ?? "–"))));
    if (!answer.records.length) members.appendChild(h("tr", {}, h("td", { colspan: 2 }, "No members yet.")));
    replace(pager,
      h("span", { className: "muted" }, `Page ${starts.length}`),
      starts.length > 1 ? kit.button("Previous page", () => { starts.pop(); void loadMembers(false); }) : null,
      answer.hasMore && answer.cursor ? kit.button("Next page", () => { starts.push(answer.cursor); void loadMembers(false); }) : null);
  }
  const element = h("section", { id: "audience", "aria-labelledby": "audience-h" },
    h("h2", { id: "audience-h" }, "Audience"),
    field("Source type", sourceType).row, valueField.row,
    h("div", { className: "actions" },
      kit.can("campaigns.previewAudience") ? audienceAction("Preview count", "campaigns.previewAudience") : null,
      kit.can("campaigns.addAudience") ? audienceAction("Add to audience", "campaigns.addAudience") : null,
      kit.can("campaigns.removeAudience") ? audienceAction("Remove from audience", "campaigns.removeAudience") : kit.roleNote("Changing the audience", "campaigns.removeAudience")),
    audienceOut,
    h("div", { className: "table-wrap" }, h("table", { id: "members" }, h("caption", {}, "Members"), h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Profile id"), h("th", { scope: "col" }, "DID"))), members)),
    pager);
  return { element, show: () => loadMembers(true).catch((err: unknown) => replace(pager, kit.errorBox(err))) };
}
