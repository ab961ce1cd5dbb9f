// The console's one table of error wording: the API's field errors (pydantic's `loc` as `path`, its
// error `type` as `code`) in the admin's words, naming the field and the rule. A row matches an issue by
// path pattern, and optionally by code and by the API's own message; the first row that matches says it.
// An issue no row knows keeps the API's message, so a new server rule still shows, only less kindly.
import type { ApiError, Issue } from "./api";

type Say = string | ((noun: string, issue: Issue, match: RegExpExecArray) => string);
interface Row {
  /** The issue's path joined with dots; a capture group numbers an action (`message.actions.0.label`). */
  path: RegExp;
  /** What the field is called on screen, with `{n}` for the action number. */
  noun: string;
  /** Sentences by pydantic error type, for this field only; the generic ones below otherwise. */
  codes?: Record<string, Say>;
  /** A rule the server words in its message (custom `ValueError`s): the pattern and the sentence. */
  when?: [RegExp, Say][];
  /** Where the sentence shows, when the API reports it on the whole object (`[]`). */
  at?: (string | number)[];
}

const HTTPS: [RegExp, Say] = [/https/, (n) => `Use an https:// address for ${n}.`];
const APP_PATH: [RegExp, Say] = [/app path/, (n) => `${cap(n)} must be an app path starting with a single /, like /news/spring.`];
const PLAIN: Record<string, Say> = { string_pattern_mismatch: (n) => `${cap(n)} must be plain text on one line, without line breaks or control characters.` };
const HEX: Record<string, Say> = { string_pattern_mismatch: (n) => `${cap(n)} must be a hex colour such as #0b7285 or #222.` };

const MESSAGES: Row[] = [
  // Campaign definition (domain/campaign.py)
  { path: /^id$/, noun: "the campaign id", codes: { string_pattern_mismatch: "The campaign id may use only lower-case letters, digits and dashes (not first or last), at most 64.", duplicate: (_n, i) => `A campaign with the id ${quoted(i.message)} already exists: choose another id.` } },
  { path: /^name$/, noun: "the name" },
  { path: /^description$/, noun: "the description" },
  { path: /^channels$/, noun: "the channels", codes: { too_short: "Choose at least one channel." }, when: [[/must not repeat/, "Choose each channel once."]] },
  { path: /^message$/, noun: "the in-app message" },
  { path: /^message\.title$/, noun: "the in-app title" },
  { path: /^message\.body$/, noun: "the in-app body" },
  { path: /^message\.emoji$/, noun: "the emoji" },
  { path: /^message\.priority$/, noun: "the priority" },
  { path: /^message\.frequency\b.*everyDays$/, noun: "the number of days between showings" },
  { path: /^message\.media\.url$/, noun: "the media URL", when: [HTTPS] },
  { path: /^message\.media\.alt$/, noun: "the alternative text" },
  { path: /^message\.media\.aspect$/, noun: "the aspect ratio", codes: { string_pattern_mismatch: "Write the aspect ratio as width:height, like 16:9." } },
  { path: /^message\.actions\.(\d+)\.label$/, noun: "the label of action {n}" },
  { path: /^message\.actions\.(\d+)\.action\b.*\.(url|path)$/, noun: "the link of action {n}", when: [HTTPS, APP_PATH] },
  { path: /^message\.actions$/, noun: "the actions", codes: { too_long: "A message can have at most three actions." } },
  { path: /^notification\.title$/, noun: "the notification title" },
  { path: /^notification\.body$/, noun: "the notification body" },
  { path: /^email\.subject$/, noun: "the email subject" },
  { path: /^email\.title$/, noun: "the email heading" },
  { path: /^email\.body$/, noun: "the email body" },
  { path: /^email\.ctaLabel$/, noun: "the button label" },
  { path: /^email\.heroImageUrl$/, noun: "the hero image URL", when: [HTTPS] },
  { path: /^startsAt$/, noun: "the start" },
  { path: /^endsAt$/, noun: "the end" },
  // Rules the API checks across fields, reported on the whole definition.
  { path: /^$/, noun: "the end", at: ["endsAt"], when: [[/endsAt must be after startsAt/, "The end must be after the start."]] },
  { path: /^$/, noun: "the channels", at: ["channels"], when: [[/channel '(\w+)' needs/, (_n, i) => `The ${channelName(i.message)} channel is on but has nothing to send: write its content or turn the channel off.`]] },
  // A live segment's rule (domain/segment.py): a condition's value, then the rule as a whole (its limits).
  { path: /^segment\b.*\.tag$/, noun: "the tag", codes: { string_pattern_mismatch: "A tag is lower-case letters, digits and dashes, like news or year-7." } },
  { path: /^segment\b.*\.(memberOf|campaignId)$/, noun: "the campaign id", codes: { string_pattern_mismatch: "A campaign id is lower-case letters, digits and dashes, like spring-launch." } },
  { path: /^segment\b.*\.locale$/, noun: "the language tag", codes: { string_pattern_mismatch: "A language tag is letters, digits and dashes, like fr or en-GB." } },
  { path: /^segment\b.*\.timeZone$/, noun: "the time zone", codes: { string_pattern_mismatch: "Write a time zone like Europe/Paris." } },
  { path: /^segment\b.*\.(ageAtLeast|ageBelow)$/, noun: "the age" },
  { path: /^segment\b.*\.connectedTo$/, noun: "the profile id" },
  { path: /^segment\b/, noun: "the rule" },
  // Tenant settings (domain/tenant.py)
  { path: /^tenantId$/, noun: "the tenant id", codes: { duplicate: (_n, i) => `A tenant with the id ${quoted(i.message)} already exists: choose another id.` } },
  { path: /^(layout\.)?logoUrl$/, noun: "the logo URL", when: [HTTPS] },
  { path: /^(layout\.)?primaryColor$/, noun: "the primary colour", codes: HEX },
  { path: /^(layout\.)?textColor$/, noun: "the text colour", codes: HEX },
  // The email layout: plain text on one line, for the footer and the From header.
  { path: /^(layout\.)?footerText$/, noun: "the footer text", codes: PLAIN },
  { path: /^(layout\.)?footerAddress$/, noun: "the postal address", codes: PLAIN },
  { path: /^(layout\.)?senderName$/, noun: "the sender name", codes: PLAIN },
  { path: /^appOrigin$/, noun: "the app origin", when: [[/exactly https/, "The app origin must be exactly https://host[:port], like https://app.school.example, with no path (http only for localhost)."]] },
  { path: /^emailFrom$/, noun: "the sender", when: [[/address like/, "The sender must be an address like news@school.example or School <news@school.example>."]] },
  { path: /^frequencyCaps\.notify\.max$/, noun: "the notification cap" },
  { path: /^frequencyCaps\.notify\.windowSeconds$/, noun: "the notification cap window" },
  { path: /^frequencyCaps\.email\.max$/, noun: "the email cap" },
  { path: /^frequencyCaps\.email\.windowSeconds$/, noun: "the email cap window" },
  { path: /^approval\.minRecipients$/, noun: "the approval threshold" },
  // Keys and grants
  { path: /^expiresAt$/, noun: "the expiry", when: [[/past/, "The expiry must be in the future."]] },
  { path: /^subject$/, noun: "the profile id" },
  // A scheduled send (sending/schedule_input.py); under an approval policy a change always holds it.
  { path: /^sendAt\b/, noun: "the send time" },
  { path: /^maxLateSeconds$/, noun: "how late it may start", codes: { less_than_equal: "It may start at most 7 days (10080 minutes) late.", greater_than_equal: "How late it may start cannot be negative." } },
  { path: /^onChange$/, noun: "what a change does", when: [[/approval policy/, "This tenant approves large sends, so a change before the send must hold it for review: choose “Hold it for review”."]] },
  // Event webhooks (the URL passes the egress rules: the API's reason in words)
  { path: /^url$/, noun: "the endpoint URL", when: [HTTPS, [/http\(s\) URL|not valid|no host/, "The endpoint URL must be a web address like https://crm.school.example/hooks."]] },
  { path: /^events$/, noun: "the events", codes: { too_short: "Choose at least one event, or All events." } },
];

/** Sentences by pydantic error type, for any field a row names. `{N}` comes from the API's message. */
const BY_CODE: Record<string, Say> = {
  missing: (n) => `${cap(n)} is required.`,
  string_too_short: (n, i) => (limit(i) <= 1 ? `${cap(n)} is required.` : `${cap(n)} needs at least ${limit(i)} characters.`),
  string_too_long: (n, i) => `${cap(n)} can have at most ${limit(i)} characters.`,
  too_short: (n, i) => `${cap(n)} needs at least ${limit(i)}.`,
  too_long: (n, i) => `${cap(n)} can have at most ${limit(i)}.`,
  string_pattern_mismatch: (n) => `${cap(n)} is not written the way it must be.`,
  int_parsing: (n) => `${cap(n)} must be a whole number.`,
  int_type: (n) => `${cap(n)} must be a whole number.`,
  int_from_float: (n) => `${cap(n)} must be a whole number.`,
  greater_than_equal: (n, i) => `${cap(n)} must be at least ${limit(i)}.`,
  greater_than: (n, i) => `${cap(n)} must be more than ${limit(i)}.`,
  less_than_equal: (n, i) => `${cap(n)} can be at most ${limit(i)}.`,
  less_than: (n, i) => `${cap(n)} must be less than ${limit(i)}.`,
  literal_error: (n) => `Choose one of the offered options for ${n}.`,
  enum: (n) => `Choose one of the offered options for ${n}.`,
  string_type: (n) => `${cap(n)} must be text.`,
};
/** Messages the API writes itself (not pydantic's), for any field a row names. */
const BY_MESSAGE: [RegExp, Say][] = [
  [/^cannot be null$/, (n) => `${cap(n)} cannot be cleared.`],
  [/RFC 3339|datetime/, (n) => `${cap(n)} must be a date and time.`],
];

/** One issue in the admin's words; the API's own message is kept in `detail` for the hover text. */
export function worded(issue: Issue): Issue {
  const key = issue.path.join(".");
  for (const row of MESSAGES) {
    const match = row.path.exec(key);
    if (!match) continue;
    const noun = row.noun.replace("{n}", match[1] !== undefined ? String(Number(match[1]) + 1) : "");
    const say = pick(row, issue);
    if (say === undefined) continue; // a whole-object row for another rule: keep looking
    const message = typeof say === "string" ? say : say(noun, issue, match);
    return { ...issue, path: row.at ?? issue.path, message, detail: issue.message };
  }
  return issue;
}

function pick(row: Row, issue: Issue): Say | undefined {
  for (const [pattern, say] of row.when ?? []) if (pattern.test(issue.message)) return say;
  if (row.path.source === "^$") return undefined; // whole-object rows speak only for their own rules
  const code = issue.code ?? "";
  if (row.codes?.[code] !== undefined) return row.codes[code];
  for (const [pattern, say] of BY_MESSAGE) if (pattern.test(issue.message)) return say;
  if (BY_CODE[code] !== undefined) return BY_CODE[code];
  if (/https/.test(issue.message)) return HTTPS[1];
  return (n: string) => `${cap(n)}: ${issue.message.replace(/^Value error, /, "")}.`;
}

/** A CONFLICT on create is the id already taken (the only conflict a create has): said on the id field. */
export function conflictIssues(procedure: string, message: string): Issue[] {
  if (procedure === "campaigns.create") return [worded({ path: ["id"], message, code: "duplicate" })];
  if (procedure === "tenants.create") return [worded({ path: ["tenantId"], message, code: "duplicate" })];
  return [];
}

/** What a procedure does, for a refusal that names it; any other reads "This action". */
const DOING: Record<string, string> = {
  "campaigns.create": "Creating a campaign",
  "campaigns.update": "Saving the campaign",
  "campaigns.setStatus": "Changing the campaign's status",
  "campaigns.addAudience": "Changing the audience",
  "campaigns.removeAudience": "Changing the audience",
  "campaigns.sendTestToMe": "Sending a test",
  "campaigns.previewDispatch": "Reviewing a send",
  "campaigns.dispatch": "Sending",
  "campaigns.explainRecipient": "Explaining a recipient",
  "tenants.update": "Changing tenant settings",
  "access.grant": "Granting a role",
  "access.revoke": "Revoking a role",
  "apiKeys.create": "Creating an API key",
  "apiKeys.revoke": "Revoking an API key",
  "webhookEndpoints.create": "Creating an event webhook",
  "webhookEndpoints.update": "Changing an event webhook",
  "webhookEndpoints.delete": "Deleting an event webhook",
  "webhookEndpoints.rotateSecret": "Rotating a webhook secret",
  "webhookEndpoints.replay": "Replaying events",
  "campaigns.scheduleDispatch": "Scheduling a send",
  "campaigns.cancelScheduledDispatch": "Cancelling a scheduled send",
  "campaigns.delete": "Deleting a campaign",
  "suppressions.remove": "Removing a suppression",
};

/** Every reason code the API answers, as the admin reads it (``reasonSentence``; an unknown code keeps
 *  its words): why a send cannot go now (a preview's `blockedReason`, also named by a refused send), why
 *  a Dispatch paused (`pauseReason`), why a test wave's winner won (`decision.reason`), and the codes of
 *  our own refusals. The codes live in campaign_engine/domain/reasons.py, and
 *  tests/unit/test_console_messages.py fails for a code without a row here. */
export const REASONS: Record<string, string> = {
  not_live: "the campaign is not live: set it live first",
  not_started: "the campaign's window has not started yet",
  ended: "the campaign's window has ended",
  notify_disabled: "the campaign has no notification or email channel to send on",
  email_disabled: "the campaign has no email channel",
  channel_removed: "the campaign no longer has this channel",
  no_recipients: "nobody would receive it: the audience is empty or nobody in it is eligible",
  notify_not_configured: "this deployment cannot deliver notifications (no webhook secret is set)",
  email_not_configured: "this deployment has no email provider (set CAMPAIGN_EMAIL_PROVIDER)",
  missing_translation: "too many recipients read a language this campaign has no translation for: add it, or accept that they get the base content",
  approval_exceeded: "the audience grew past what the approval covered: another publisher approves a new preview, then resume",
  hardBounce: "too many emails bounced",
  complaint: "too many recipients marked the email as spam",
  rejection: "the receivers refused too many notifications",
  highest_rate: "the variant with the highest rate won",
  tie: "the test was a tie: the best variants had the same rate, so the first of them is sent; the test does not show that one is better",
  insufficient_evidence: "the test gave no evidence: no test recipient did what it measures, or a variant reached nobody, so the first variant is sent; the test does not show that one is better",
  chosen: "an admin chose this variant",
  too_few_per_variant: "the test wave is too small to tell the variants apart: raise the test share, widen the audience, or send without a test",
};

/** A reason code as a sentence, capitalised with a full stop; an unknown code as the API spelled it. */
export function reasonSentence(code: string): string {
  return sentence(REASONS[code] ?? code.replace(/_/g, " "));
}

/** Who is refused: the role the failed procedure needs ("the publisher role") and what the caller
 *  holds ("you are an author"), from the server's access table (access.ts). */
export interface Refused {
  needs: string;
  mine: string;
}

/** A refused call in the admin's words, by its tRPC code; any other code keeps the API's message. */
export function errorSentence(err: ApiError, refused: Refused | null): string {
  switch (err.code) {
    case "FORBIDDEN": {
      const doing = DOING[err.procedure] ?? "This action";
      return refused ? `Not allowed: ${doing.toLowerCase()} needs ${refused.needs}; ${refused.mine}. Nothing was changed.` : `Not allowed: ${sentence(err.message)} Nothing was changed.`;
    }
    case "SERVICE_UNAVAILABLE":
      return "The service is unavailable for a moment, so nothing was changed. Try again in a minute; if it keeps happening, tell whoever runs it.";
    case "TIMEOUT":
    case "NETWORK_ERROR":
      return "The server could not be reached, so this may not have been done. Check your connection and try again.";
    case "TOO_MANY_REQUESTS":
      return "Too many requests just now, so nothing was changed. Wait a moment and try again.";
    case "UNAUTHORIZED":
      return "You are signed out. Sign in again with an admin token.";
    default:
      return sentence(err.message);
  }
}

/** The API's message as a sentence: capitalised, with a full stop. */
function sentence(message: string): string {
  const text = cap(message.trim());
  return /[.!?]$/.test(text) ? text : `${text}.`;
}

function cap(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
/** The number in pydantic's message ("String should have at most 65 characters" → 65). */
function limit(issue: Issue): number {
  const n = /(-?\d+(?:\.\d+)?)/.exec(issue.message);
  return n?.[1] ? Number(n[1]) : 0;
}
function quoted(message: string): string {
  return /'([^']+)'/.exec(message)?.[1] ?? "you chose";
}
function channelName(message: string): string {
  const code = /channel '(\w+)'/.exec(message)?.[1] ?? "";
  return ({ inApp: "In-app", notify: "Notification", email: "Email" } as Record<string, string>)[code] ?? code;
}
