// A refused save of a campaign's definition, shown beside the composer (new campaign and a campaign's
// Definition section): field errors on their fields, and an edit conflict with what the other save
// changed and the two ways out of it.
import { ApiError, type Campaign, type Definition } from "./api";
import type { Composer } from "./composer";
import { h, replace } from "./dom";
import type { Kit } from "./kit";
import { timeEl } from "./time";

/** The edit the page started from, and what the two ways out of a stale edit do. */
export interface Conflict {
  base: Campaign;
  /** Drop my edits and show their version. */
  reload(latest: Campaign): void;
  /** Save my edits over theirs: the latest version becomes the one my save expects. */
  keepMine(latest: Campaign): void;
}

/** A refused save, beside the form: field errors on their fields, an edit conflict with what changed. */
export function showSaveError(kit: Kit, err: unknown, form: Composer, out: HTMLElement, conflict: Conflict | null): void {
  if (err instanceof ApiError && err.code === "CONFLICT" && conflict) {
    void showConflict(kit, out, conflict);
    return;
  }
  if (err instanceof ApiError && err.issues.length) {
    const rest = form.showIssues(err.issues);
    replace(out, h("div", { role: "alert", className: "error" }, h("p", {}, "Not saved: fix the fields marked below."), rest.length ? h("ul", {}, ...rest.map((m) => h("li", {}, m))) : null));
    return;
  }
  replace(out, kit.errorBox(err));
}

const DEFINITION_FIELDS: [keyof Definition, string][] = [
  ["name", "Name"], ["description", "Description"], ["channels", "Channels"], ["message", "In-app message"],
  ["notification", "Notification"], ["email", "Email"], ["startsAt", "Start"], ["endsAt", "End"],
  ["excludeMinors", "Exclude minors"], ["discoverable", "Discoverable"],
];

/** Optimistic concurrency: someone saved after this page loaded. Says what they changed (the latest
 *  version against the one this edit started from), then reload theirs or keep mine. */
async function showConflict(kit: Kit, out: HTMLElement, conflict: Conflict): Promise<void> {
  const latest = await kit.api.call("campaigns.get", { campaignId: conflict.base.id }).catch(() => null);
  const changed = latest ? DEFINITION_FIELDS.filter(([k]) => JSON.stringify(latest[k] ?? null) !== JSON.stringify(conflict.base[k] ?? null)) : [];
  const shown = (v: unknown): string => (typeof v === "string" ? `“${v}”` : Array.isArray(v) ? v.join(", ") : typeof v === "boolean" ? (v ? "yes" : "no") : "edited");
  replace(out, h("div", { role: "alert", className: "conflict" },
    h("p", {}, h("strong", {}, "This campaign changed since you opened it. "), "Someone (or another tab) saved a newer version",
      latest ? h("span", {}, ` (revision ${latest.revision}, at `, timeEl(latest.updatedAt), ")") : "", ", so your changes were not saved: nothing of theirs was overwritten."),
    latest && changed.length
      ? h("ul", { id: "conflict-changes" }, ...changed.map(([k, what]) => h("li", { "data-field": k }, `${what}: now ${latest[k] === undefined ? "empty" : shown(latest[k])}`)))
      : h("p", { id: "conflict-changes" }, latest ? "Their save changed nothing you can see here (only its revision)." : "The latest version could not be read; reload to see it."),
    h("p", {}, "Reload their version (your edits here are dropped), or keep yours and save them over theirs."),
    kit.button("Reload their version", () => latest ? conflict.reload(latest) : location.reload()),
    latest ? kit.button("Keep mine and save over theirs", () => conflict.keepMine(latest)) : null));
}
