// A campaign page's Definition section: the composer over the saved campaign, saved with the revision
// it started from (an edit conflict shows what changed), and the email preview rendered by the server
// per language and per A/B variant. Read only for a role that may not update campaigns.
import { composer } from "./composer";
import { field, h, replace } from "./dom";
import type { CampaignPage } from "./kit";
import { showEmailFrame } from "./preview_frame";
import { type Conflict, showSaveError } from "./save_refusal";

export function definitionSection(page: CampaignPage): HTMLElement {
  const { kit, id } = page;
  const defSection = h("section", { id: "definition", "aria-labelledby": "definition-h" });
  let fillVariants = (): void => {}; // the email preview's variant picker, refilled after a save
  function renderDefinition(): void {
    const form = composer(page.current);
    const out = h("div", {});
    const conflict: Conflict = {
      base: page.current,
      reload: (latest) => {
        page.current = latest;
        page.lifecycleChanged();
        renderDefinition();
        kit.announce(`Reloaded revision ${latest.revision}.`);
      },
      keepMine: (latest) => {
        page.current = latest; // my save now expects their version, and replaces it
        conflict.base = latest;
        page.lifecycleChanged();
        saveMine();
      },
    };
    const save: HTMLButtonElement = kit.button("Save changes", () => saveMine());
    function saveMine(): void {
      form.clearIssues();
      replace(out);
      const { id: _id, ...def } = form.read();
      const patch: Record<string, unknown> = { ...def, campaignId: id, expectedUpdatedAt: page.current.updatedAt };
      // Clearable fields are cleared with null; the message can only be replaced.
      for (const key of ["description", "notification", "email", "startsAt", "endsAt"]) if (!(key in def)) patch[key] = null;
      void kit.guarded(save, () => kit.api.call("campaigns.update", { ...patch, campaignId: id, expectedUpdatedAt: page.current.updatedAt }), (err) =>
        showSaveError(kit, err, form, out, conflict),
      ).then((c) => {
        if (c) {
          page.current = c;
          conflict.base = c;
          fillVariants();
          replace(out, h("p", { className: "ok" }, `Saved (revision ${c.revision}).`));
          kit.announce("Saved.");
        }
      });
    }
    const frameOut = h("div", { className: "email-preview" });
    const previewBtn: HTMLButtonElement = kit.button("Render email preview", () => void showEmail());
    // Each language of the campaign previews as a reader of that language gets it.
    const previewLang = h("select", { name: "preview-locale", id: "preview-locale" });
    const fillLanguages = (): void => {
      const chosen = previewLang.value;
      replace(previewLang, ...form.languages().map((tag, i) => h("option", { value: i === 0 ? "" : tag }, i === 0 ? `${tag} (base)` : tag)));
      if ([...previewLang.options].some((o) => o.value === chosen)) previewLang.value = chosen;
    };
    fillLanguages();
    previewLang.addEventListener("focus", fillLanguages);
    const langRow = field("Preview language", previewLang, "Save first: the preview renders the saved translations.").row;
    // Each A/B variant of the saved campaign previews as its recipients get it.
    const previewVariant = h("select", { name: "preview-variant", id: "preview-variant" });
    const variantRow = field("Preview variant", previewVariant, "The saved variants.").row;
    fillVariants = (): void => {
      const chosen = previewVariant.value;
      replace(previewVariant, ...(page.current.variants ?? []).map((v) => h("option", { value: v.id }, `Variant ${v.id}`)));
      if ([...previewVariant.options].some((o) => o.value === chosen)) previewVariant.value = chosen;
      variantRow.hidden = !page.current.variants?.length;
    };
    fillVariants();
    async function showEmail(): Promise<void> {
      const locale = previewLang.value;
      const variantId = page.current.variants?.length ? previewVariant.value : "";
      const preview = await kit.guarded(previewBtn, () => kit.api.call("campaigns.previewEmail", { campaignId: id, ...(locale ? { locale } : {}), ...(variantId ? { variantId } : {}) }), (err) => replace(frameOut, kit.errorBox(err)));
      if (!preview) return;
      showEmailFrame(frameOut, {
        ...preview, id: "email-frame", subjectId: "email-subject", title: `Email preview: ${preview.subject}`,
        notes: [h("span", { className: "muted" }, " · Language "), h("span", { id: "email-locale" }, preview.locale),
          ...(preview.variantId ? [h("span", { className: "muted" }, " · Variant "), h("span", { id: "email-variant" }, preview.variantId)] : [])],
      });
    }
    const editable = kit.can("campaigns.update");
    if (!editable) {
      // Read only: every control of the composer shows the definition but cannot change it.
      for (const control of form.element.querySelectorAll<HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement | HTMLButtonElement>("input, select, textarea, button")) control.disabled = true;
    }
    replace(defSection, h("h2", { id: "definition-h" }, "Definition"), out, form.element, h("div", { className: "actions" }, editable ? save : kit.roleNote("Editing the campaign", "campaigns.update")),
      h("h3", {}, "Email preview"), h("p", { className: "hint" }, "Rendered by the server with the same renderer the worker sends with (save first)."), langRow, variantRow, previewBtn, frameOut);
  }
  renderDefinition();
  return defSection;
}
