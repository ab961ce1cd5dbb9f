// Deleting a campaign (campaigns.delete), on its page for who may by the server's table: first a
// confirmation in the page that names the campaign and what goes with it (its dispatches, a scheduled
// one included, its stats and who was reached, its audience; the id becomes free) and what stays (the
// audit trail); then back to the campaign list.
import type { Campaign } from "./api";
import { h, replace } from "./dom";
import type { Kit } from "./kit";

export function deleteControl(kit: Kit, campaign: Campaign): HTMLElement | null {
  if (!kit.can("campaigns.delete")) return null;
  const out = h("div", { id: "delete-result", "aria-live": "polite" });
  const confirmBox = h("div", { className: "notice paused confirm-delete", id: "delete-confirm", role: "group", "aria-labelledby": "delete-confirm-h", hidden: true });
  const open: HTMLButtonElement = kit.button("Delete campaign…", () => {
    confirmBox.hidden = false;
    open.setAttribute("aria-expanded", "true");
    yes.focus();
  }, { id: "delete-button", "aria-expanded": "false", "aria-controls": "delete-confirm", className: "danger" });
  const yes: HTMLButtonElement = kit.button(`Delete ${campaign.name}`, () => void kit.guarded(yes, () => kit.api.call("campaigns.delete", { campaignId: campaign.id }), (err) => replace(out, kit.errorBox(err))).then((done) => {
    if (!done) return;
    kit.announce(`Deleted ${campaign.name}.`);
    location.hash = "#/";
  }), { id: "delete-yes", className: "danger" });
  const no = kit.button("Keep it", () => {
    confirmBox.hidden = true;
    open.setAttribute("aria-expanded", "false");
    replace(out);
    open.focus();
  }, { id: "delete-no" });
  replace(confirmBox,
    h("p", { id: "delete-confirm-h" }, h("strong", {}, `Delete “${campaign.name}” (${campaign.id})?`)),
    h("p", {}, "Its dispatches (a scheduled one too), its stats and the record of who received it, and its audience are deleted for good; members no longer see its in-app message, and its id becomes free. The audit trail keeps what was done with it."),
    h("div", { className: "actions" }, yes, no));
  return h("div", { className: "delete-campaign" }, open, confirmBox, out);
}
