// The campaign list (#/, #/?status=...): every campaign of the tenant, 25 at a time, with each row's
// headline stats, filtered by status in the address so a filtered list can be linked.
import type { Stats, Status } from "./api";
import { field, h, replace } from "./dom";
import type { Kit } from "./kit";
import { timeEl } from "./time";

function windowText(c: { startsAt?: string | null; endsAt?: string | null }): Node {
  if (!c.startsAt && !c.endsAt) return document.createTextNode("Always");
  return h("span", {}, c.startsAt ? timeEl(c.startsAt) : "now", " → ", c.endsAt ? timeEl(c.endsAt) : "open");
}

export async function renderList(kit: Kit): Promise<void> {
  const mine = kit.generation();
  const filter = h("select", { name: "status" }, ...["", "draft", "live", "paused", "archived"].map((s) => h("option", { value: s }, s || "All")));
  filter.value = new URLSearchParams(location.hash.split("?")[1] ?? "").get("status") ?? "";
  filter.addEventListener("change", () => {
    location.hash = filter.value ? `#/?status=${filter.value}` : "#/";
  });
  const { row } = field("Filter by status", filter);
  const body = h("tbody", {});
  const more = h("div", {});
  const table = h("div", { className: "table-wrap" }, h("table", { id: "campaigns" },
    h("caption", {}, "Campaigns"),
    h("thead", {}, h("tr", {}, ...["Campaign", "Status", "Channels", "Window", "Audience", "Notified", "Emailed", "Shown", "Clicked"].map((t) => h("th", { scope: "col" }, t)))), body));
  kit.shell("Campaigns", h("div", { className: "toolbar" }, row, kit.can("campaigns.create") ? h("a", { href: "#/new", className: "button" }, "New campaign") : null), table, more);

  async function load(cursor?: string): Promise<void> {
    const status = (filter.value || undefined) as Status | undefined;
    const page = await kit.guarded(null, () => kit.api.call("campaigns.list", { limit: 25, ...(status ? { status } : {}), ...(cursor ? { cursor } : {}) }), (err) => replace(more, kit.errorBox(err)));
    if (!page || mine !== kit.generation()) return;
    // One batched request for every row's headline stats (httpBatchLink joins same-tick calls).
    const stats = await Promise.all(page.records.map((c) => kit.api.call("campaigns.getStats", { campaignId: c.id }).catch(() => null)));
    if (mine !== kit.generation()) return;
    page.records.forEach((c, i) => {
      const s = stats[i] ?? null;
      const n = (k: keyof Stats): string => (s ? String(s[k]) : "–");
      body.appendChild(h("tr", {},
        h("th", { scope: "row" }, h("a", { href: `#/c/${encodeURIComponent(c.id)}` }, c.name), h("span", { className: "muted id" }, c.id)),
        h("td", {}, h("span", { className: `badge ${c.status}` }, c.status)),
        h("td", {}, c.channels.join(", ")), h("td", {}, windowText(c)),
        h("td", {}, n("audience")), h("td", {}, n("notified")), h("td", {}, n("emailed")), h("td", {}, n("shown")), h("td", {}, n("clicked"))));
    });
    if (!body.childElementCount) body.appendChild(h("tr", {}, h("td", { colspan: 9 }, "No campaigns yet.")));
    replace(more, page.hasMore && page.cursor ? kit.button("Load more", () => void load(page.cursor ?? undefined)) : null);
  }
  await load();
}
