// Suppressions (#/suppressions): the addresses provider feedback stopped email to (suppressions.list,
// paged by the API's cursor, optionally of one reason), a look-up of one address (suppressions.get), and
// lifting one (suppressions.remove) after a confirmation that says what it means. A suppression is per
// address and deployment-wide, so the server lets only a platform admin lift one; a tenant's credential
// sees its members' addresses, with the reason and dates only where its own sends caused them.
import { roleName } from "./access";
import { ApiError, type Suppression } from "./api";
import { field, h, replace } from "./dom";
import type { Kit } from "./kit";
import { timeEl } from "./time";

const PAGE = 50;
const REASONS: Record<string, string> = {
  hard_bounce: "Hard bounce",
  soft_bounce: "Repeated soft bounces",
  spam_complaint: "Spam complaint",
  manual: "Suppressed by the provider",
};
const REMOVING_MEANS = "The address may receive email again, from every tenant of this deployment; if it hard-bounces again it is suppressed again. Opt-outs of its profiles stay.";

function reasonText(s: Suppression): string {
  if (!s.detailed) return "Suppressed (not by this tenant's sends: no detail)";
  return s.reason ? REASONS[s.reason] ?? s.reason : "–";
}

export async function renderSuppressions(kit: Kit): Promise<void> {
  if (!kit.can("suppressions.list")) {
    kit.shell("Suppressions", h("p", { className: "hint role-note" }, `Suppressions need ${roleName(kit.session.needs("suppressions.list"))}.`));
    return;
  }
  const mine = kit.generation();
  const mayRemove = kit.can("suppressions.remove");
  const body = h("tbody", {});
  const listOut = h("div", { id: "suppressions-result", "aria-live": "polite" });
  const reason = h("select", { name: "reason", id: "suppressions-reason" }, h("option", { value: "" }, "Every reason"),
    ...Object.entries(REASONS).map(([v, l]) => h("option", { value: v }, l)));
  let cursor: string | null = null;

  /** Lift one suppression: the confirmation in place of the control, then the list read again. */
  function removeControl(s: Suppression, done: () => void): HTMLElement {
    if (!mayRemove) return h("span", {});
    const out = h("div", { "aria-live": "polite" });
    const ask = h("div", { className: "notice paused", role: "group", "aria-label": `Confirm removing ${s.address}`, hidden: true });
    const open: HTMLButtonElement = kit.button("Remove", () => {
      ask.hidden = false;
      open.hidden = true;
      yes.focus();
    }, { "aria-label": `Remove the suppression of ${s.address}` });
    const yes: HTMLButtonElement = kit.button(`Remove ${s.address}`, () => void kit.guarded(yes, () => kit.api.call("suppressions.remove", { address: s.address }), (err) => replace(out, kit.errorBox(err))).then((ok) => {
      if (!ok) return;
      kit.announce(`${s.address} is no longer suppressed.`);
      done();
    }), { className: "danger", "data-confirm": s.address });
    const no = kit.button("Keep it", () => {
      ask.hidden = true;
      open.hidden = false;
      open.focus();
    });
    replace(ask, h("p", {}, h("strong", {}, `Remove the suppression of ${s.address}? `), REMOVING_MEANS), h("div", { className: "actions" }, yes, no));
    return h("div", { className: "remove-suppression" }, open, ask, out);
  }

  function row(s: Suppression): HTMLElement {
    return h("tr", { "data-address": s.address },
      h("th", { scope: "row" }, s.address),
      h("td", { "data-field": "reason" }, reasonText(s)),
      h("td", {}, s.source ?? "–", s.detail ? h("span", { className: "muted" }, ` (${s.detail})`) : null),
      h("td", {}, s.suppressedAt ? timeEl(s.suppressedAt) : "–"),
      mayRemove ? h("td", {}, removeControl(s, () => void load(true))) : null);
  }

  const more: HTMLButtonElement = kit.button("Show more", () => void load(false, more), { hidden: true, id: "suppressions-more" });
  async function load(fresh: boolean, control: HTMLButtonElement | null = null): Promise<void> {
    if (fresh) cursor = null;
    const page = await kit.guarded(control, () => kit.api.call("suppressions.list", { limit: PAGE, ...(reason.value ? { reason: reason.value as NonNullable<Suppression["reason"]> } : {}), ...(cursor ? { cursor } : {}) }),
      (err) => replace(listOut, kit.errorBox(err)));
    if (!page || mine !== kit.generation()) return;
    const rows = page.records.map(row);
    if (fresh) replace(body, ...(rows.length ? rows : [h("tr", {}, h("td", { colspan: mayRemove ? 5 : 4, className: "muted" }, "No address is suppressed."))]));
    else body.append(...rows);
    cursor = page.hasMore ? page.cursor : null;
    more.hidden = cursor === null;
    replace(listOut);
  }
  reason.addEventListener("change", () => void load(true));

  // Look up one address, in any spelling (the API matches its normal form).
  const address = h("input", { type: "text", inputmode: "email", name: "address", id: "suppression-address", autocomplete: "off", spellcheck: "false", maxlength: 254 });
  const found = h("div", { id: "suppression-found", "aria-live": "polite" });
  const lookup = h("form", { className: "inline-form", id: "suppression-lookup", "aria-label": "Look up an address", novalidate: true },
    field("Address", address, "Whether this address is suppressed, why and since when.").row, h("div", { className: "actions" }, h("button", { type: "submit" }, "Look up")));
  lookup.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const typed = address.value.trim();
    if (!typed) return;
    void kit.guarded(null, () => kit.api.call("suppressions.get", { address: typed }), (err) => {
      replace(found, err instanceof ApiError && err.code === "NOT_FOUND"
        ? h("p", { className: "ok", "data-state": "not-suppressed" }, `${typed} is not suppressed: email to it goes out as usual.`)
        : kit.errorBox(err));
    }).then((s) => {
      if (!s) return;
      replace(found, h("dl", { className: "counts", "data-state": "suppressed" },
        h("dt", {}, "Address"), h("dd", {}, s.address),
        h("dt", {}, "Why"), h("dd", { "data-field": "reason" }, reasonText(s)),
        h("dt", {}, "Source"), h("dd", {}, s.source ?? "–", s.detail ? ` (${s.detail})` : ""),
        h("dt", {}, "Since"), h("dd", {}, s.suppressedAt ? timeEl(s.suppressedAt) : "–"),
        h("dt", {}, "Reports"), h("dd", {}, s.feedbackCount == null ? "–" : String(s.feedbackCount))),
      removeControl(s, () => {
        replace(found, h("p", { className: "ok" }, `Removed: ${s.address} may receive email again.`));
        void load(true);
      }));
    });
  });

  kit.shell("Suppressions",
    h("p", { className: "hint" }, "Addresses no email goes to, because the provider reported a hard bounce, repeated soft bounces or a spam complaint. A suppression covers the address for every tenant."),
    mayRemove ? null : h("p", { className: "hint role-note" }, `Removing a suppression needs ${roleName(kit.session.needs("suppressions.remove"))}: it affects every tenant.`),
    h("section", { "aria-labelledby": "lookup-h" }, h("h2", { id: "lookup-h" }, "Look up an address"), lookup, found),
    h("section", { "aria-labelledby": "list-h" }, h("h2", { id: "list-h" }, "Suppressed addresses"),
      h("div", { className: "toolbar" }, field("Reason", reason).row),
      h("div", { className: "table-wrap" }, h("table", { id: "suppressions" },
        h("thead", {}, h("tr", {}, ...["Address", "Reason", "Source", "Since", ...(mayRemove ? ["Remove"] : [])].map((t) => h("th", { scope: "col" }, t)))), body)),
      more, listOut));
  await load(true);
}
