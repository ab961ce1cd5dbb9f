// Approvals (#/approvals): the sends, go-lives and live changes (`publish`, with the changes since the
// last approved revision) this tenant's approval policy held back until a second publisher approves them (campaigns.listAwaitingApproval), each approvable in place (campaigns.approveDispatch
// with the preview token the requester saw, and acceptFallback when readers lack their language). Who
// may approve is the server's (notBy, mayApprove): the people it would refuse are not offered the
// button; a refusal (a stale preview) is shown on the row it concerns, in the server's words.
import { roleName } from "./access";
import { ApiError, type AwaitingApproval } from "./api";
import { h, replace } from "./dom";
import { timeEl } from "./time";
import type { Kit } from "./kit";
import { askedDeadline } from "./deliver_by";

/** A stored time in the admin's local time with its zone, UTC on hover (time.ts). */
function when(value: string | null): Node | string {
  return value ? timeEl(value) : "–";
}

function refusal(kit: Kit, err: unknown): HTMLElement {
  if (err instanceof ApiError && (err.code === "FORBIDDEN" || err.code === "CONFLICT")) {
    const what = err.code === "CONFLICT" ? "Not approved: the campaign changed since this preview." : "Not approved.";
    return h("div", { role: "alert", className: "error approval-refused" }, h("p", {}, h("strong", {}, what), " ", err.message));
  }
  return kit.errorBox(err);
}

const ACTION_WORDS: Record<string, string> = { dispatch: "Send now", schedule: "Scheduled send", resume: "Resume after the audience grew", publish: "Go live" };

function untranslatedList(item: AwaitingApproval): HTMLElement | null {
  const missing = Object.entries(item.untranslated ?? {});
  if (!missing.length) return null;
  return h("p", { "data-field": "untranslated" }, "No translation for: ",
    ...missing.map(([tag, n], i) => h("span", { "data-locale": tag }, `${i ? ", " : ""}${tag} (${n ?? 0})`)), " — they would get the base content.");
}

/** A go-live or a live change: what members would see differently, field by field (old → new). */
function changeList(item: AwaitingApproval): HTMLElement | null {
  const changes = item.changes ?? [];
  if (item.action !== "publish" || !changes.length) return null;
  const shown = (v: string | null | undefined): string => (v == null ? "(none)" : v.length > 160 ? `${v.slice(0, 157)}...` : v);
  return h("div", { "data-field": "changes" }, h("p", {}, "Changes since the last approved revision:"),
    h("ul", {}, ...changes.map((c) => h("li", { "data-change": c.field }, h("strong", {}, c.field), ": ", h("del", {}, shown(c.old)), " → ", h("ins", {}, shown(c.new))))));
}

function row(kit: Kit, item: AwaitingApproval, reload: () => void): HTMLElement {
  const out = h("div", { className: "approval-out", "aria-live": "polite" });
  // The requester and everyone who changed the campaign since its last approved send are not offered
  // Approve: the server would refuse them (notBy), and the row says who may approve instead.
  const me = kit.session.me.profileId;
  const mine = (item.notBy ?? []).includes(me);
  const approvable = kit.session.can("campaigns.approveDispatch") && !mine && !item.approvedBy;
  const fallback = Object.keys(item.untranslated ?? {}).length > 0;
  const accept = h("input", { type: "checkbox", id: `accept-fallback-${item.campaignId}`, name: "accept-fallback" });
  const publish = item.action === "publish";
  const approve: HTMLButtonElement = kit.button(publish ? `Approve what ${item.recipients} members see` : `Approve send to ${item.recipients}`, () => void kit.guarded(approve,
    () => kit.api.call("campaigns.approveDispatch", { campaignId: item.campaignId, previewToken: item.previewToken, ...(fallback ? { acceptFallback: accept.checked } : {}) }),
    (err) => replace(out, refusal(kit, err))).then((done) => {
    if (!done) return;
    approve.disabled = true;
    replace(out, h("p", { className: "ok" }, publish
      ? `Approved by ${done.approvedBy}: members now see this revision.`
      : `Approved by ${done.approvedBy} for ${done.recipients} recipients. ${item.requestedBy ?? "The requester"} (or another publisher than you) can now ${item.action === "schedule" ? "schedule" : "confirm"} the send on the campaign's page.`));
    kit.announce(`Approved ${item.name}.`);
    window.setTimeout(reload, 1500);
  }));
  const waiting = item.approvedBy
    ? h("p", { className: "ok", "data-field": "approvedBy" }, `Approved by ${item.approvedBy} `, when(item.approvedAt ?? null), `. Now ${item.requestedBy ?? "a publisher"} may send it (anyone but ${item.approvedBy}).`)
    : mine ? h("p", { className: "notice", "data-field": "waiting" }, `Waiting for another publisher: ${item.mayApprove ?? "another publisher"} may approve this.`) : null;
  return h("article", { className: "approval", "data-campaign": item.campaignId, "data-action": item.action ?? "dispatch", "data-changed-since": String(item.changedSince) },
    h("h2", {}, h("a", { href: `#/c/${encodeURIComponent(item.campaignId)}` }, item.name), " ", h("span", { className: "muted id" }, item.campaignId)),
    h("dl", { className: "counts" },
      h("dt", {}, "What"), h("dd", { "data-field": "action" }, item.liveChange ? "Change of what members see" : ACTION_WORDS[item.action ?? "dispatch"] ?? String(item.action)),
      h("dt", {}, "Recipients"), h("dd", { "data-field": "recipients" }, String(item.recipients)),
      h("dt", {}, "Requested by"), h("dd", { "data-field": "requestedBy" }, item.requestedBy ?? "–"),
      h("dt", {}, "Requested at"), h("dd", {}, when(item.requestedAt)),
      h("dt", {}, "Who may approve"), h("dd", { "data-field": "mayApprove" }, item.mayApprove ?? "another publisher")),
    changeList(item),
    untranslatedList(item),
    askedDeadline(item.deliverBy ?? null, item.acceptLate ?? false),
    item.changedSince ? h("p", { className: "notice", "data-field": "changedSince" }, "Edited since this was requested: approving this preview will be refused. The requester reviews and sends again to ask for a new approval.") : null,
    waiting,
    approvable
      ? h("div", { className: "actions" },
        fallback ? h("div", { className: "field check" }, accept, h("label", { for: accept.id }, "Send the base content to the recipients without a translation")) : null,
        approve)
      : !kit.session.can("campaigns.approveDispatch") ? h("p", { className: "hint role-note" }, `Approving needs ${roleName(kit.session.needs("campaigns.approveDispatch"))}.`) : null,
    out);
}

export async function renderApprovals(kit: Kit): Promise<void> {
  const mine = kit.generation();
  const list = h("div", { id: "approvals" });
  kit.shell("Approvals",
    h("p", { className: "hint" }, "Sends, go-lives and live changes this tenant's policy holds back until a second publisher approves them: not who asked, not anyone who changed the campaign since its last approved send, and not who will send it."),
    list);
  const load = async (): Promise<void> => {
    if (mine !== kit.generation()) return;
    const page = await kit.guarded(null, () => kit.api.call("campaigns.listAwaitingApproval", undefined), (err) => replace(list, kit.errorBox(err)));
    if (!page || mine !== kit.generation()) return;
    replace(list, ...(page.records.length ? page.records.map((item) => row(kit, item, () => void load())) : [h("p", { className: "muted" }, "Nothing awaits approval.")]));
  };
  await load();
}
