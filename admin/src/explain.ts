// "Explain a recipient" on a campaign page: a profile-id search that asks campaigns.explainRecipient
// whether that profile would receive the campaign now, per channel. Each channel opens with one sentence
// saying what will happen, then every rule in the order the sends apply it, each named in words with
// what is true of this profile, then what already happened to it. The server owns every rule; this
// screen only words them. Times are the admin's local time, UTC on hover.
import type { Api, ChannelExplanation, ProfileFacts, RecipientExplanation, RuleVerdict, Segment } from "./api";
import { field, h, replace } from "./dom";
import { segmentVerdicts } from "./segment_words";
import { timeEl } from "./time";

type Child = Node | string;
type Channel = "notify" | "email";
interface Facts {
  x: RecipientExplanation;
  profile: ProfileFacts | null;
  channel: Channel;
  rule: RuleVerdict;
}

const THING: Record<Channel, string> = { notify: "the notification", email: "the email" };
const CHANNELS: Record<string, string> = { notify: "Notifications", email: "Email" };
const OPT_OUT: Record<Channel, string> = { notify: "announcement notifications", email: "announcement emails" };

/** A stored timestamp as a `<time>` with "(your time)", or the text itself when it is not one. */
function when(value: string | null | undefined): Child {
  if (!value || Number.isNaN(Date.parse(value))) return value ?? "an unknown time";
  return h("span", {}, timeEl(value), " (your time)");
}

/** How a member joined (the audience source the server recorded), in words. */
function joined(source: string | null | undefined): string {
  if (!source) return "added by an admin";
  if (source.startsWith("tag:")) return `added through the tag ${source.slice(4)}`;
  const known: Record<string, string> = {
    profileIds: "added by profile id",
    dids: "added by DID",
    connections: "added as a connection of a profile",
    all: "added with everyone",
    selfEnrolled: "who joined by themselves",
    segment: "matched by the live segment",
  };
  return known[source] ?? `added by ${source}`;
}

/** Why the age policy stops this profile, from its record when it could be read. */
function ageReason(f: Facts): string {
  const p = f.profile;
  if (f.channel === "email") {
    if (!p) return "email goes only to profiles of a known adult age, and this one is not";
    if (!p.dob) return "the profile's age is unknown, and email goes only to known adults";
    if (p.isManaged && !p.isServiceProfile) return "the profile is a managed account, and email goes only to adults' own profiles";
    return "the profile is under the adult age, and email goes only to adults";
  }
  if (!p) return "the campaign excludes minors, and this profile is not known to be an adult";
  if (!p.dob) return "the profile's age is unknown and the campaign excludes minors";
  return "the profile is under the adult age and the campaign excludes minors";
}

/** "at most 3 since 2026-…Z" → the cap with its window start in local time. */
function capText(detail: string | null | undefined, reached: boolean): Child[] {
  if (!detail || detail === "no frequency cap") return ["No frequency cap applies"];
  const m = /^at most (\d+) since (.+)$/.exec(detail);
  if (!m?.[1] || !m[2]) return [detail];
  return [reached ? `Cap reached: at most ${m[1]} announcements since ` : `Under the cap of ${m[1]} announcements since `, when(m[2])];
}

/** Per rule: what the check is, what is true when it allows the send, and what when it stops it (the
 *  last also ends the channel's sentence: "Will not receive the email: <reason>"). */
interface RuleWords {
  check: string;
  yes(f: Facts): Child[];
  no(f: Facts): Child[];
}
const campaignRule = (no: string): RuleWords => ({
  check: "The campaign can send on this channel",
  yes: () => ["The campaign is live, in its window and uses this channel"],
  no: () => [no],
});
const RULES: Record<string, RuleWords> = {
  campaign_can_send: campaignRule(""),
  not_live: campaignRule("the campaign is not live"),
  notify_disabled: campaignRule("the campaign does not send notifications"),
  email_disabled: campaignRule("the campaign does not send email"),
  not_started: campaignRule("the campaign's window has not started yet"),
  ended: campaignRule("the campaign's window has ended"),
  not_member: {
    check: "In the audience",
    yes: (f) => [`A member, ${joined(f.x.memberSource)}`, ...(f.x.memberAddedAt ? [" on ", when(f.x.memberAddedAt)] : [])],
    no: () => ["the profile is not in the audience"],
  },
  opted_out: {
    check: "Announcement opt-out",
    yes: (f) => [`Has not opted out of ${OPT_OUT[f.channel]}`],
    no: (f) => [`the profile opted out of ${OPT_OUT[f.channel]}`],
  },
  age_policy: {
    check: "Age policy",
    yes: (f) => [f.channel === "email" ? "A known adult: email is allowed" : f.rule.detail === "the campaign does not exclude minors" ? "The campaign does not exclude minors" : "Allowed: a known adult, or a profile not managed by a guardian"],
    no: (f) => [ageReason(f)],
  },
  suppressed: {
    check: "Suppression list",
    yes: () => ["The address is not suppressed"],
    no: () => ["the address is on the suppression list (after a bounce or a complaint)"],
  },
  no_email: {
    check: "Email address",
    yes: () => ["Exactly one verified primary address"],
    no: (f) => [`the profile has ${/^(\d+)/.exec(f.rule.detail ?? "")?.[1] ?? "no"} verified primary addresses, and exactly one is needed`],
  },
  already_notified: {
    check: "Notified before",
    yes: () => ["Not notified yet"],
    no: (f) => ["Notified ", when(f.rule.detail ?? f.x.past?.["notifiedAt"])],
  },
  already_claimed: {
    check: "Emailed before",
    yes: () => ["Not emailed yet"],
    no: (f) => (f.x.past?.["emailedAt"] ? ["Emailed ", when(f.x.past["emailedAt"])] : ["Being emailed since ", when(f.rule.detail ?? f.x.past?.["emailClaimedAt"])]),
  },
  capped: {
    check: "Frequency cap",
    yes: (f) => capText(f.rule.detail, false),
    no: (f) => capText(f.rule.detail, true),
  },
};

/** "kid-a", "kid-a and kid-b", "kid-a, kid-b and kid-c". */
function listed(ids: string[]): string {
  return ids.length < 2 ? (ids[0] ?? "") : `${ids.slice(0, -1).join(", ")} and ${ids[ids.length - 1] ?? ""}`;
}

const RECEIVED: Record<Channel, "notifiedAt" | "emailedAt"> = { notify: "notifiedAt", email: "emailedAt" };

/** The channel's sentence for a guardian the campaign is routed to: received, would receive, or why not
 *  (the first rule that stops it besides membership, which a guardian is not held to). */
function guardianVerdict(f: Omit<Facts, "rule">, c: ChannelExplanation, route: NonNullable<RecipientExplanation["guardian"]>): Child[] {
  const of = `as the guardian of ${listed(route.routedFrom)}`;
  const received = f.x.past?.[RECEIVED[f.channel]];
  if (typeof received === "string") return [`Received ${THING[f.channel]} ${of} on `, when(received), "."];
  if (route.channels[f.channel]) return [`Would receive ${THING[f.channel]} ${of} now.`];
  const blocking = c.rules.find((r) => !r.ok && r.rule !== "not_member");
  const words = blocking ? RULES[blocking.rule] : undefined;
  const reason = blocking && words ? words.no({ ...f, rule: blocking }) : ["the members routed to them receive it themselves"];
  return [`Will not receive ${THING[f.channel]} ${of}: `, ...reason, "."];
}

/** The channel's one sentence: what will happen now, in words. */
function verdict(f: Omit<Facts, "rule">, c: ChannelExplanation): Child[] {
  const thing = THING[f.channel];
  if (c.wouldReceive) return [`Would receive ${thing} now.`];
  const blocking = c.rules.find((r) => !r.ok);
  if (blocking?.rule === "not_member" && f.x.guardian?.routedFrom.length) return guardianVerdict(f, c, f.x.guardian);
  if (blocking?.rule === "already_notified") return ["Already received it on ", when(blocking.detail ?? f.x.past?.["notifiedAt"]), "."];
  if (blocking?.rule === "already_claimed") {
    return f.x.past?.["emailedAt"] ? ["Already received it on ", when(f.x.past["emailedAt"]), "."] : ["Already being emailed (since ", when(blocking.detail), ")."];
  }
  const words = blocking ? RULES[blocking.rule] : undefined;
  const reason = blocking && words ? words.no({ ...f, rule: blocking }) : [c.blockedBy ?? "a rule stops it"];
  return [`Will not receive ${thing}: `, ...reason, "."];
}

/** Rules that stop a second send because the first one happened: success, not a refusal. */
const DONE = new Set(["already_notified", "already_claimed"]);

function channelView(x: RecipientExplanation, profile: ProfileFacts | null, c: ChannelExplanation): HTMLElement {
  const base = { x, profile, channel: c.channel };
  const state = c.wouldReceive ? "yes" : DONE.has(c.blockedBy ?? "") ? "done" : "no";
  return h("article", { className: `explain-channel ${state}`, "data-channel": c.channel, "data-would-receive": String(c.wouldReceive) },
    h("h3", {}, CHANNELS[c.channel] ?? c.channel),
    h("p", { className: "explain-verdict" }, ...verdict(base, c)),
    h("div", { className: "table-wrap" }, h("table", {},
      h("caption", {}, `${CHANNELS[c.channel] ?? c.channel}: every check, in the order a send applies them`),
      h("thead", {}, h("tr", {}, ...["Check", "Outcome", "For this profile"].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, ...c.rules.map((r) => {
        const words = RULES[r.rule];
        const facts = words ? (r.ok ? words.yes({ ...base, rule: r }) : words.no({ ...base, rule: r })) : [r.detail ?? ""];
        const said = facts.map((part, i) => (i === 0 && typeof part === "string" ? part.charAt(0).toUpperCase() + part.slice(1) : part));
        return h("tr", { "data-rule": r.rule, "data-ok": String(r.ok) },
          h("th", { scope: "row" }, words?.check ?? r.rule),
          r.ok ? h("td", { className: "ok" }, "Allows it") : DONE.has(r.rule) ? h("td", { className: "done" }, "Done already") : h("td", { className: "bad" }, "Stops it"),
          h("td", {}, ...said));
      })))));
}

/** What already happened, in words, each time local. */
const PAST: Record<string, string> = {
  notifiedAt: "Notified",
  emailClaimedAt: "Email claimed for sending",
  emailedAt: "Emailed",
  emailOutcome: "Email provider's outcome",
  emailOutcomeReason: "Reason given",
  emailOutcomeAt: "Outcome received",
  bouncedAt: "Bounced",
  complainedAt: "Complained (marked as spam)",
  emailClickedAt: "First clicked the email's link",
  unsubscribedAt: "Unsubscribed through this campaign's email",
  shownFirstAt: "First shown in the app",
  clickedFirstAt: "First clicked",
  dismissedFirstAt: "First dismissed",
  notifyCappedAt: "Held back by the notification cap",
  emailCappedAt: "Held back by the email cap",
  variantId: "A/B variant recorded",
};

/** camelCase field name → "Camel case", for facts and counters the console has no words for. */
export function words(key: string): string {
  const spaced = key.replace(/([a-z0-9])([A-Z])/g, "$1 $2").toLowerCase();
  return spaced.charAt(0).toUpperCase() + spaced.slice(1);
}

/** Each guardian of an excluded member, and what routing does for them, one sentence each. */
const ROUTE_OUTCOME: Record<string, string> = {
  routed: "receives it in their place",
  consent_revoked: "will not receive it: consent revoked",
  guardian_not_eligible: "will not receive it: a rule stops them (explain them to see which)",
  guardian_is_a_member: "receives it as a member of the audience, not as a guardian",
};

function guardianLines(x: RecipientExplanation): HTMLElement | null {
  const lines: Child[][] = [];
  if (x.guardian?.routedFrom.length) lines.push([`${x.profileId} is the guardian of ${listed(x.guardian.routedFrom)}, who the age policy routes to them.`]);
  for (const to of x.routedTo ?? []) lines.push([`${x.profileId}'s guardian ${to.guardianId} ${ROUTE_OUTCOME[to.outcome] ?? to.outcome.replace(/_/g, " ")}.`]);
  return lines.length ? h("ul", { id: "explain-guardian", "aria-label": "Guardian routing" }, ...lines.map((l) => h("li", {}, ...l))) : null;
}

const CONTENT_WORDS: Record<string, string> = { message: "the in-app card", notification: "the notification", email: "the email" };

function view(x: RecipientExplanation, profile: ProfileFacts | null, rule: Segment | null | undefined): HTMLElement {
  const facts = Object.entries(x.past ?? {}).filter((entry): entry is [string, string] => typeof entry[1] === "string");
  return h("div", {},
    h("p", { id: "explain-member" }, x.member
      ? h("span", {}, `${x.profileId} is a member, ${joined(x.memberSource)}`, ...(x.memberAddedAt ? [" on ", when(x.memberAddedAt)] : []), ".")
      : `${x.profileId} is not a member of the audience.`),
    segmentVerdicts(x.segment, rule, x.profileId),
    guardianLines(x),
    ...x.channels.map((c) => channelView(x, profile, c)),
    // The language each content is served in (a routed guardian's: the guardian copy's), and why.
    x.language ? h("p", { id: "explain-language", "data-guardian": String(x.language.why.includes("routed guardian")) },
      `Reads ${Object.entries(x.language.served).map(([field, tag]) => `${CONTENT_WORDS[field] ?? field} in ${tag ?? "?"}`).join(", ")}: ${x.language.why}.`) : null,
    // The A/B content variant every channel serves this profile, and why.
    x.variant ? h("p", { id: "explain-variant", "data-variant": x.variant.variantId }, `Variant ${x.variant.variantId}: ${x.variant.why}.`) : null,
    h("h3", {}, "What already happened"),
    facts.length
      ? h("dl", { className: "counts", id: "explain-past" }, ...facts.flatMap(([k, v]) => [h("dt", {}, PAST[k] ?? words(k)), h("dd", { "data-fact": k }, k.endsWith("At") ? when(v) : v)]))
      : h("p", { className: "muted", id: "explain-past" }, "Nothing yet."));
}

/** The section; `run` is the page's guarded call (sign-in problems go back to sign-in, others to onError). */
export function explainSection(
  api: Api,
  campaignId: string,
  run: <T>(control: HTMLButtonElement | null, work: () => Promise<T>, onError: (err: unknown) => void) => Promise<T | undefined>,
  errorBox: (err: unknown) => HTMLElement,
  /** The campaign's live segment as last read or saved: its verdicts are worded from it. */
  segment: () => Segment | null | undefined = () => null,
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
    // The profile record words the age policy (unknown age, a minor, a managed account); without it
    // (not found, or not readable) the sentence says less, never something wrong.
    const both = Promise.all([
      api.call("campaigns.explainRecipient", { campaignId, profileId }),
      api.call("profiles.get", { profileId }).catch(() => null),
    ]);
    void run(submit, () => both, (err) => {
      if (mine === latest) replace(out, errorBox(err));
    }).then((answer) => {
      if (answer && mine === latest) replace(out, view(answer[0], answer[1], segment()));
    });
  });
  return h("section", { id: "explain", "aria-labelledby": "explain-h" }, h("h2", { id: "explain-h" }, "Explain a recipient"), form, out);
}
