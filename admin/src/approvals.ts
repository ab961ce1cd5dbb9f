// Approvals (#/approvals): the sends this tenant's approval policy held back until a second publisher
// approves them (campaigns.listAwaitingApproval), each approvable in place (campaigns.approveDispatch
// with the preview token the requester saw). The server decides who may approve: a refusal (the
// campaign's last editor, a stale preview) is shown on the row it concerns, in the server's words.
import { roleName } from "./access";
import { ApiError, type AwaitingApproval } from "./api";
import { h, replace } from "./dom";
import { timeEl } from "./time";
import type { Kit } from "./kit";

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

function row(kit: Kit, item: AwaitingApproval, reload: () => void): HTMLElement {
  const out = h("div", { className: "approval-out", "aria-live": "polite" });
  const approvable = kit.session.can("campaigns.approveDispatch");
  const approve: HTMLButtonElement = kit.button(`Approve send to ${item.recipients}`, () => void kit.guarded(approve,
    () => kit.api.call("campaigns.approveDispatch", { campaignId: item.campaignId, previewToken: item.previewToken }),
    (err) => replace(out, refusal(kit, err))).then((done) => {
    if (!done) return;
    approve.disabled = true;
    replace(out, h("p", { className: "ok" }, `Approved by ${done.approvedBy} for ${done.recipients} recipients. A publisher other than you can now confirm the send on the campaign's page.`));
    kit.announce(`Approved ${item.name}.`);
    window.setTimeout(reload, 1500);
  }));
  return h("article", { className: "approval", "data-campaign": item.campaignId, "data-changed-since": String(item.changedSince) },
    h("h2", {}, h("a", { href: `#/c/${encodeURIComponent(item.campaignId)}` }, item.name), " ", h("span", { className: "muted id" }, item.campaignId)),
    h("dl", { className: "counts" },
      h("dt", {}, "Recipients"), h("dd", { "data-field": "recipients" }, String(item.recipients)),
      h("dt", {}, "Requested by"), h("dd", { "data-field": "requestedBy" }, item.requestedBy ?? "–"),
      h("dt", {}, "Requested at"), h("dd", {}, when(item.requestedAt))),
    item.changedSince ? h("p", { className: "notice", "data-field": "changedSince" }, "Edited since this was requested: approving this preview will be refused. The requester reviews and sends again to ask for a new approval.") : null,
    approvable ? h("div", { className: "actions" }, approve) : h("p", { className: "hint role-note" }, `Approving needs ${roleName(kit.session.needs("campaigns.approveDispatch"))}.`),
    out);
}

export async function renderApprovals(kit: Kit): Promise<void> {
  const mine = kit.generation();
  const list = h("div", { id: "approvals" });
  kit.shell("Approvals",
    h("p", { className: "hint" }, "Sends this tenant's policy holds back until a second publisher approves them: not the campaign's last editor, and not who will send it."),
    list);
  const load = async (): Promise<void> => {
    if (mine !== kit.generation()) return;
    const page = await kit.guarded(null, () => kit.api.call("campaigns.listAwaitingApproval", undefined), (err) => replace(list, kit.errorBox(err)));
    if (!page || mine !== kit.generation()) return;
    replace(list, ...(page.records.length ? page.records.map((item) => row(kit, item, () => void load())) : [h("p", { className: "muted" }, "Nothing awaits approval.")]));
  };
  await load();
}
