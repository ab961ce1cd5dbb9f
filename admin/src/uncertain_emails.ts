// The recipients of an email dispatch whose email is uncertain (campaigns.listUncertainEmails), read a
// page at a time by the API's cursor (nextAfter) when the admin asks: each profile id, why (a timeout
// after the request left, an answer that could not be read, a claim a stopped worker left) and when.
// Addresses are not listed: the profile id is the handle, as the API gives it.
import type { Dispatch } from "./api";
import { h, replace } from "./dom";
import type { Kit } from "./kit";
import { timeEl } from "./time";

const PAGE = 50;

const REASON_WORDS: Record<string, string> = {
  claim_abandoned: "the worker sending it stopped before it recorded the answer",
  unreadable_answer: "the provider's answer could not be read",
  unreadable_result: "the provider's answer for this message could not be read",
  error: "the request failed after it left",
};
/** Reasons with a detail after a colon: the kind in words, the API's detail kept in brackets. */
const REASON_KINDS: Record<string, string> = {
  transport: "the connection failed after the request left",
  http: "the provider answered with HTTP status",
  postmark: "the provider answered with error code",
  error: "the connection failed after the message was sent",
};

/** An uncertain reason in words ("transport:ReadTimeout" → "the connection failed ... (ReadTimeout)"). */
function reasonWords(reason: string): string {
  const known = REASON_WORDS[reason];
  if (known) return known;
  const [kind = "", detail = ""] = reason.split(/:(.*)/s);
  const words = REASON_KINDS[kind];
  if (!words) return reason.replace(/_/g, " ");
  return kind === "http" || kind === "postmark" ? `${words} ${detail}` : `${words} (${detail})`;
}

/** What "uncertain" means, in one sentence (the progress shows it beside the list). */
export const UNCERTAIN_MEANS = "Uncertain: the email provider may or may not have accepted the message, and the engine never sends it to these recipients again (a second attempt could deliver it twice).";

/** The "who" of an email dispatch's uncertain counter; null when there is none or the role may not read. */
export function uncertainSection(kit: Kit, d: Dispatch): HTMLElement | null {
  if (d.channel !== "email" || !(d.uncertain ?? 0) || !kit.can("campaigns.listUncertainEmails")) return null;
  const body = h("tbody", {});
  const table = h("div", { className: "table-wrap", hidden: true }, h("table", { id: `uncertain-${d.dispatchId}` },
    h("caption", {}, "Recipients whose email is uncertain"),
    h("thead", {}, h("tr", {}, ...["Profile", "Why", "Claimed"].map((t) => h("th", { scope: "col" }, t)))), body));
  const out = h("div", { "aria-live": "polite" });
  let after: string | null = null;
  const more: HTMLButtonElement = kit.button("Show more", () => void read(more), { hidden: true });
  const show: HTMLButtonElement = kit.button(`List the ${d.uncertain} uncertain recipients`, () => {
    show.hidden = true;
    void read(show);
  }, { id: `uncertain-list-${d.dispatchId}` });

  async function read(control: HTMLButtonElement): Promise<void> {
    const page = await kit.guarded(control, () => kit.api.call("campaigns.listUncertainEmails", { dispatchId: d.dispatchId, limit: PAGE, ...(after ? { after } : {}) }),
      (err) => replace(out, kit.errorBox(err)));
    if (!page) return;
    table.hidden = false;
    body.append(...page.items.map((item) => h("tr", { "data-profile": item.profileId },
      h("th", { scope: "row" }, h("code", {}, item.profileId)),
      h("td", { title: item.reason ?? "" }, item.reason ? reasonWords(item.reason) : "–"),
      h("td", {}, item.claimedAt ? timeEl(item.claimedAt) : "–"))));
    after = page.nextAfter ?? null;
    more.hidden = after === null;
    replace(out, after === null ? h("p", { className: "muted" }, `${body.childElementCount} listed: that is all of them.`) : null);
  }

  return h("div", { className: "uncertain", id: `uncertain-${d.dispatchId}-section` },
    h("p", { className: "hint" }, UNCERTAIN_MEANS), show, table, more, out);
}
