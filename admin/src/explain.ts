// "Explain a recipient" on a campaign page: a profile-id search that asks campaigns.explainRecipient
// whether that profile would receive the campaign now, per channel, and shows every rule's verdict in
// the order the sends apply them, plus what already happened to it. The server owns every rule; this
// screen only names them.
import type { Api, ChannelExplanation, RecipientExplanation } from "./api";
import { field, h, replace } from "./dom";

/** The rule codes the server sends today, in words; an unknown code is shown as it is. */
const RULES: Record<string, string> = {
  campaign_can_send: "The campaign can send on this channel (live, in its window, channel on)",
  not_member: "Member of the audience",
  opted_out: "Not opted out",
  age_policy: "Age policy",
  already_notified: "Not notified yet",
  suppressed: "Address not suppressed",
  no_email: "Exactly one primary verified email address",
  already_claimed: "Not emailed yet",
};
const CHANNELS: Record<string, string> = { notify: "Notifications", email: "Email" };

/** camelCase field name → "Camel case", for facts and counters the console has no words for. */
export function words(key: string): string {
  const spaced = key.replace(/([a-z0-9])([A-Z])/g, "$1 $2").toLowerCase();
  return spaced.charAt(0).toUpperCase() + spaced.slice(1);
}

function channelView(c: ChannelExplanation): HTMLElement {
  const verdict = c.wouldReceive ? "would receive it now" : `blocked by ${c.blockedBy ?? "a rule"}`;
  return h("article", { className: `explain-channel ${c.wouldReceive ? "yes" : "no"}`, "data-channel": c.channel, "data-would-receive": String(c.wouldReceive) },
    h("div", { className: "table-wrap" }, h("table", {},
      h("caption", {}, `${CHANNELS[c.channel] ?? c.channel}: `, h("span", { className: "explain-verdict" }, verdict)),
      h("thead", {}, h("tr", {}, ...["Rule", "Verdict", "Detail"].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, ...c.rules.map((r) => h("tr", { "data-rule": r.rule, "data-ok": String(r.ok) },
        h("th", { scope: "row" }, RULES[r.rule] ?? r.rule, h("code", { className: "id" }, r.rule)),
        h("td", { className: r.ok ? "ok" : "bad" }, r.ok ? "pass" : "fail"),
        h("td", {}, r.detail ?? "")))))));
}

function view(x: RecipientExplanation): HTMLElement {
  const facts = Object.entries(x.past ?? {}).filter((entry): entry is [string, string] => typeof entry[1] === "string");
  return h("div", {},
    h("p", { id: "explain-member" }, x.member
      ? `${x.profileId} is a member (${x.memberSource ?? "unknown source"}${x.memberAddedAt ? `, added ${new Date(x.memberAddedAt).toLocaleString()}` : ""}).`
      : `${x.profileId} is not a member of the audience.`),
    ...x.channels.map(channelView),
    h("h3", {}, "What already happened"),
    facts.length
      ? h("dl", { className: "counts", id: "explain-past" }, ...facts.flatMap(([k, v]) => [h("dt", {}, words(k)), h("dd", { "data-fact": k }, v)]))
      : h("p", { className: "muted", id: "explain-past" }, "Nothing yet."));
}

/** The section; `run` is the page's guarded call (sign-in problems go back to sign-in, others to onError). */
export function explainSection(
  api: Api,
  campaignId: string,
  run: <T>(control: HTMLButtonElement | null, work: () => Promise<T>, onError: (err: unknown) => void) => Promise<T | undefined>,
  errorBox: (err: unknown) => HTMLElement,
): HTMLElement {
  const input = h("input", { type: "text", name: "profile-id", autocomplete: "off", spellcheck: "false", required: true, maxlength: 128 });
  const out = h("div", { id: "explain-result", "aria-live": "polite" });
  const submit = h("button", { type: "submit" }, "Explain");
  const form = h("form", { role: "search", "aria-label": "Explain a recipient", className: "toolbar" }, field("Profile id", input, "Why this profile would, or would not, get the campaign now.").row, submit);
  let latest = 0; // only the latest search may draw: an older answer arriving late is dropped
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const profileId = input.value.trim();
    if (!profileId) return;
    const mine = ++latest;
    replace(out, h("p", { className: "muted" }, `Explaining ${profileId}…`));
    void run(submit, () => api.call("campaigns.explainRecipient", { campaignId, profileId }), (err) => {
      if (mine === latest) replace(out, errorBox(err));
    }).then((x) => {
      if (x && mine === latest) replace(out, view(x));
    });
  });
  return h("section", { id: "explain", "aria-labelledby": "explain-h" }, h("h2", { id: "explain-h" }, "Explain a recipient"), form, out);
}
