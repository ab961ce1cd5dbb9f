// Files in and out: the CSV import of profiles with its report (#/import), and the downloads
// of a campaign's recipients and of the audit trail. They are plain HTTP routes of the API, called with
// the same bearer token and renewal as every procedure (Api.http); a file is handed to the browser as a
// download from memory, never through a URL that would carry the token.
import type { Api } from "./api";
import { field, h, replace } from "./dom";
import type { Kit } from "./kit";

interface Rejection {
  line: number;
  column: string | null;
  reason: string;
}
/** What POST /imports/profiles answers (campaigns/profiles/csv_import.py `CsvImportReport`). */
interface ImportReport {
  rows: number;
  created: number;
  updated: number;
  /** Existing profiles that already held every fact their row names (a dry run does not compare: 0). */
  unchanged: number;
  rejected: Rejection[];
  rejectedCount: number;
  unknownColumns: string[];
  dryRun: boolean;
}

/** Saves `blob` as `filename` the way a link with `download` would. */
function save(blob: Blob, filename: string): void {
  const url = URL.createObjectURL(blob);
  const link = h("a", { href: url, download: filename, hidden: true });
  document.body.appendChild(link);
  link.click();
  link.remove();
  window.setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

/** The file name the server's Content-Disposition gives, else `fallback`. */
function filenameOf(answer: Response, fallback: string): string {
  const match = /filename="([^"]+)"/.exec(answer.headers.get("content-disposition") ?? "");
  return match?.[1] ?? fallback;
}

/** Downloads one export; resolves to the file name saved. */
export async function download(api: Api, procedure: string, url: string, fallback: string): Promise<string> {
  const answer = await api.http({ procedure, url });
  const name = filenameOf(answer, fallback);
  save(await answer.blob(), name);
  return name;
}

/** A campaign page's "Download recipients" control: one row per member with what happened to each. */
export function recipientsDownload(kit: Kit, campaignId: string): HTMLElement | null {
  if (!kit.session.can("campaigns.getAudience")) return null;
  const out = h("p", { id: "recipients-download-result", "aria-live": "polite" });
  const url = `/exports/campaigns/${encodeURIComponent(campaignId)}/recipients.csv`;
  const go: HTMLButtonElement = kit.button("Download recipients (CSV)", () => {
    void kit.guarded(go, () => download(kit.api, "exports.recipients", url, `${campaignId}-recipients.csv`),
      (err) => replace(out, kit.errorBox(err))).then((name) => {
      if (name) replace(out, h("span", { className: "ok" }, `Saved ${name}.`));
    });
  }, { id: "recipients-download" });
  return h("div", { className: "download" }, go, out);
}

function reportView(report: ImportReport): HTMLElement {
  const [create, update] = report.dryRun ? ["would create", "would update"] : ["created", "updated"];
  const summary = h("p", { id: "import-summary", className: report.rejectedCount ? "notice" : "ok" },
    `${report.rows} rows read: ${create} ${report.created}, ${update} ${report.updated}, `
      + (report.dryRun ? "" : `unchanged ${report.unchanged}, `) + `rejected ${report.rejectedCount}.`,
    report.dryRun ? " Nothing was written (dry run)." : "");
  const unknown = report.unknownColumns.length
    ? h("p", { id: "import-unknown", className: "muted" }, `Ignored columns: ${report.unknownColumns.join(", ")}.`)
    : null;
  if (!report.rejected.length) return h("div", {}, summary, unknown);
  const rows = report.rejected.map((r) => h("tr", {},
    h("td", {}, String(r.line)), h("td", {}, r.column ?? "(row)"), h("td", {}, r.reason)));
  const more = report.rejectedCount > report.rejected.length
    ? h("p", { className: "muted" }, `The first ${report.rejected.length} of ${report.rejectedCount} rejected rows are listed.`)
    : null;
  return h("div", {}, summary, unknown,
    h("table", { id: "import-rejections", className: "data" },
      h("caption", {}, "Rejected rows: fix them in the file and import it again (rows already written stay as they are)."),
      h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Line"), h("th", { scope: "col" }, "Column"), h("th", { scope: "col" }, "Reason"))),
      h("tbody", {}, ...rows)), more);
}

/** #/import: a CSV file of profiles in, the report out; and the audit trail as a file. */
export function renderTransfer(kit: Kit): void {
  const file = h("input", { type: "file", accept: ".csv,text/csv", id: "import-file", required: true });
  const fileRow = field("CSV file", file, "Columns: profileId (required), email, emailVerified, dob, locale, timeZone, tags (separated by ;). UTF-8.").row;
  const dryRun = h("input", { type: "checkbox", id: "import-dry-run" });
  const dryRow = h("label", { className: "check" }, dryRun, " Dry run: check the file and count, write nothing");
  const out = h("div", { id: "import-result", "aria-live": "polite" });
  const submit = h("button", { type: "submit", id: "import-submit" }, "Import");
  const form = h("form", { "aria-label": "Import profiles" }, fileRow, dryRow, submit, out);
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const chosen = file.files?.[0];
    if (!chosen) {
      replace(out, h("p", { role: "alert", className: "error" }, "Choose a CSV file first."));
      return;
    }
    const url = `/imports/profiles${dryRun.checked ? "?dryRun=true" : ""}`;
    void kit.guarded(submit, async () => {
      const answer = await kit.api.http({ procedure: "imports.profiles", url, method: "POST", body: chosen, contentType: "text/csv" });
      return (await answer.json()) as ImportReport;
    }, (err) => replace(out, kit.errorBox(err))).then((report) => {
      if (!report) return;
      replace(out, reportView(report));
      kit.announce(`Import ${report.dryRun ? "checked" : "done"}: ${report.rejectedCount} rows rejected.`);
    });
  });
  const sections: HTMLElement[] = [];
  if (kit.session.can("profiles.upsert")) sections.push(h("section", { "aria-labelledby": "import-h" }, h("h2", { id: "import-h" }, "Import profiles"), form));
  if (kit.session.can("audit.list")) {
    const auditOut = h("p", { id: "audit-download-result", "aria-live": "polite" });
    const go: HTMLButtonElement = kit.button("Download the audit trail (CSV)", () => {
      void kit.guarded(go, () => download(kit.api, "exports.audit", "/exports/audit.csv", "audit.csv"),
        (err) => replace(auditOut, kit.errorBox(err))).then((name) => {
        if (name) replace(auditOut, h("span", { className: "ok" }, `Saved ${name}.`));
      });
    }, { id: "audit-download" });
    sections.push(h("section", { "aria-labelledby": "audit-h" }, h("h2", { id: "audit-h" }, "Audit trail"),
      h("p", { className: "hint" }, "Every admin change in this tenant, newest first."), go, auditOut));
  }
  kit.shell("Import and export", ...(sections.length ? sections : [h("p", {}, "Your role can neither import profiles nor read the audit trail.")]));
}
