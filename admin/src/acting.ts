// The tenant the console acts in, in the header of every screen: a platform admin picks any tenant
// (tenants.list), a person signed in by the organisation's provider picks among the tenants they hold
// roles in (access.me's `tenants`); a credential that names its tenant shows it and offers no pick. The
// pick rides on every call as the API's tenant header (tab.ts), and the audit entry records it.
import type { Me } from "./api";
import { h } from "./dom";
import { actIn, api } from "./tab";

let known: Promise<string[]> | null = null; // a platform admin's tenants, read once per page load

async function platformTenants(): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | undefined;
  for (let i = 0; i < 50; i += 1) {
    const page = await api.call("tenants.list", { limit: 200, ...(cursor ? { cursor } : {}) });
    ids.push(...page.records.map((t) => t.tenantId));
    if (!page.hasMore || !page.cursor) break;
    cursor = page.cursor;
  }
  return ids;
}

/** Forgets the tenants read, so a tenant created since is offered (settings.ts calls it on create). */
export function tenantsChanged(): void {
  known = null;
}

/** The tenant in view: a labelled picker where there is a choice, else its id. */
export function tenantInView(me: Me): HTMLElement {
  const shown = h("strong", { id: "whoami-tenant" }, me.tenantId);
  if (!me.platform && (me.tenants ?? []).length < 2) return shown;
  const select = h("select", { id: "acting-tenant", name: "acting-tenant", "aria-label": "Tenant to act in" },
    h("option", { value: me.tenantId, selected: true }, me.tenantId));
  const fill = (ids: string[]): void => {
    for (const id of ids) if (id !== me.tenantId) select.append(h("option", { value: id }, id));
  };
  if (me.platform) {
    known ??= platformTenants().catch(() => {
      known = null;
      return [];
    });
    void known.then(fill);
  } else fill(me.tenants ?? []);
  select.addEventListener("change", () => {
    actIn(select.value);
    if (location.hash === "#/") window.dispatchEvent(new HashChangeEvent("hashchange"));
    else location.hash = "#/"; // a campaign of one tenant is no page of another
  });
  return h("span", { className: "acting" }, h("span", { hidden: true }, shown), select);
}
