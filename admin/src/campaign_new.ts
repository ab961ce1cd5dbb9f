// A new campaign (#/new): the composer, empty, an optional live segment, and a create that opens the
// new draft's page.
import { composer } from "./composer";
import { h, replace } from "./dom";
import type { Kit } from "./kit";
import { showSaveError } from "./save_refusal";
import { segmentBuilder } from "./segment_builder";
import { knowCampaignNames } from "./segment_words";

export function renderNew(kit: Kit): void {
  if (!kit.can("campaigns.create")) {
    kit.shell("New campaign", kit.roleNote("Creating a campaign", "campaigns.create"));
    return;
  }
  const form = composer(null);
  const segment = segmentBuilder(kit, null);
  void knowCampaignNames(kit); // a rule typed here names campaigns by name in its words
  const out = h("div", {});
  const save = kit.button("Create campaign", () => {
    form.clearIssues();
    replace(out);
    void kit.guarded(save, () => kit.api.call("campaigns.create", { ...form.read(), segment: segment.read() }), (err) => showSaveError(kit, err, form, out, null)).then((created) => {
      if (created) {
        kit.announce(`Created ${created.id}.`);
        location.hash = `#/c/${encodeURIComponent(created.id)}`;
      }
    });
  });
  const live = h("fieldset", { className: "new-segment" }, h("legend", {}, "Live segment (optional)"),
    h("p", { className: "hint" }, "Besides the members you add once it is created, everyone this rule matches when it is sent."), segment.element);
  kit.shell("New campaign", out, form.element, live, h("div", { className: "actions" }, save));
}
