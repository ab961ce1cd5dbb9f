// A live segment in words (docs/audiences.md, "Live segments"): each condition as the phrase a person
// would say ("has tag news", "speaks French", "is at least 30", "is in the audience of campaign launch"),
// a whole rule as nested lists, and explainRecipient's verdict per condition. The server owns the rule
// and its evaluation; this module only words what it stores and answers, so the builder, a viewer's
// read-only rule and the explanation say the same thing the same way. A rule stores campaigns by id;
// the words name them by the tenant's names, read once per tenant (`knowCampaignNames`).
import type { Segment, SegmentExplanation } from "./api";
import { h } from "./dom";
import type { Kit } from "./kit";

/** The acting tenant's campaign names by id, and the tenant they were read for. */
const names = new Map<string, string>();
let namesOf: string | null = null;
/** The most campaigns read for names: beyond this a rule names the rest by id. */
const MAX_NAMED = 2000;

/** Reads the names of the tenant's campaigns once per tenant (campaigns.list, 200 at a time), or again
 *  when `ids` names a campaign not read yet (created since). A failed read leaves the ids as they are. */
export async function knowCampaignNames(kit: Kit, ids: readonly string[] = []): Promise<void> {
  const tenant = kit.session.me.tenantId;
  if (namesOf === tenant && ids.every((id) => names.has(id))) return;
  if (!kit.can("campaigns.list")) return;
  try {
    const read = new Map<string, string>();
    let cursor: string | null | undefined;
    do {
      const page = await kit.api.call("campaigns.list", { limit: 200, ...(cursor ? { cursor } : {}) });
      for (const c of page.records) read.set(c.id, c.name);
      cursor = page.hasMore ? page.cursor : null;
    } while (cursor && read.size < MAX_NAMED);
    names.clear();
    for (const [id, name] of read) names.set(id, name);
    namesOf = tenant;
  } catch {
    // The words fall back to the ids: a name is a courtesy, never a reason to fail the screen.
  }
}

/** The campaign ids a rule names (memberOf, engaged), for `knowCampaignNames`. */
export function campaignsNamed(segment: Segment | null | undefined): string[] {
  if (!segment) return [];
  const own = [segment.memberOf, segment.engaged?.campaignId].filter((x): x is string => Boolean(x));
  const inner = [...(segment.all ?? []), ...(segment.any ?? []), ...(typeof segment.not === "object" && segment.not ? [segment.not] : [])];
  return [...own, ...inner.flatMap(campaignsNamed)];
}

/** "campaign “Spring launch”" for a campaign of the tenant; "campaign spring-launch" for an id it lacks. */
function campaign(id: string | null | undefined): string {
  const name = id ? names.get(id) : undefined;
  return name ? `campaign “${name}”` : `campaign ${id ?? ""}`;
}

export type ConditionKey = "tag" | "connectedTo" | "locale" | "timeZone" | "ageAtLeast" | "ageBelow" | "memberOf" | "engaged";
export type EngagedEvent = NonNullable<Segment["engaged"]>["event"];

/** Every condition, in the order the builder offers them, with its name in the condition picker. */
export const CONDITIONS: [ConditionKey, string][] = [
  ["tag", "Has the tag"],
  ["locale", "Speaks the language"],
  ["ageAtLeast", "Is at least (years)"],
  ["ageBelow", "Is younger than (years)"],
  ["memberOf", "Is in the audience of the campaign"],
  ["engaged", "Engaged with the campaign"],
  ["timeZone", "Lives in the time zone"],
  ["connectedTo", "Is connected to the profile"],
];

/** What each engagement event says, true and negated. */
export const EVENTS: Record<EngagedEvent, [string, string, string]> = {
  notified: ["Was notified", "was notified of", "was not notified of"],
  emailed: ["Was emailed", "was emailed", "was not emailed"],
  shown: ["Was shown it in the app", "was shown", "was not shown"],
  clicked: ["Clicked it in the app", "clicked", "did not click"],
  dismissed: ["Dismissed it in the app", "dismissed", "did not dismiss"],
  emailClicked: ["Clicked the email's link", "clicked the email of", "did not click the email of"],
};

/** The condition a rule node holds; null for all / any / not. */
export function conditionOf(node: Segment): ConditionKey | null {
  for (const [key] of CONDITIONS) if (node[key] !== undefined && node[key] !== null) return key;
  return null;
}

const LANGUAGE_NAMES = new Intl.DisplayNames(["en"], { type: "language" });

/** "fr" → "French", "en-GB" → "British English"; a tag Intl cannot name stays as typed. */
export function languageName(tag: string): string {
  try {
    const name = LANGUAGE_NAMES.of(tag);
    return name && name !== tag ? name : tag;
  } catch {
    return tag;
  }
}

/** One condition as a phrase; `negated` says it the other way ("does not have tag news"). */
export function conditionWords(node: Segment, negated: boolean = node.not === true): string {
  const not = (yes: string, no: string): string => (negated ? no : yes);
  switch (conditionOf(node)) {
    case "tag":
      return `${not("has", "does not have")} tag ${node.tag ?? ""}`;
    case "connectedTo":
      return `${not("is", "is not")} connected to ${node.connectedTo ?? ""}`;
    case "locale":
      return `${not("speaks", "does not speak")} ${languageName(node.locale ?? "")}`;
    case "timeZone":
      return `${not("lives", "does not live")} in the time zone ${node.timeZone ?? ""}`;
    case "ageAtLeast":
      return `${not("is", "is not")} at least ${String(node.ageAtLeast)}`;
    case "ageBelow":
      return `${not("is", "is not")} younger than ${String(node.ageBelow)}`;
    case "memberOf":
      return `${not("is", "is not")} in the audience of ${campaign(node.memberOf)}`;
    case "engaged": {
      const event = node.engaged ? EVENTS[node.engaged.event] : undefined;
      return `${event ? event[negated ? 2 : 1] : "engaged with"} ${campaign(node.engaged?.campaignId)}`;
    }
    default:
      return "matches a rule this console cannot word";
  }
}

/** What a group asks of its rules. */
export function groupWords(op: "all" | "any", negated: boolean): string {
  if (op === "all") return negated ? "not all of these" : "all of these";
  return negated ? "none of these" : "any of these";
}

function items(node: Segment): HTMLElement {
  if (node.all || node.any) {
    const op = node.all ? "all" : "any";
    return h("li", {}, `${groupWords(op, false)}:`, h("ul", {}, ...(node.all ?? node.any ?? []).map(items)));
  }
  if (node.not && typeof node.not === "object") {
    const inner = node.not;
    if (inner.all || inner.any) {
      return h("li", {}, `${groupWords(inner.all ? "all" : "any", true)}:`, h("ul", {}, ...(inner.all ?? inner.any ?? []).map(items)));
    }
    return h("li", {}, conditionWords(inner, inner.not !== true));
  }
  return h("li", { "data-condition": conditionOf(node) ?? "" }, conditionWords(node));
}

/** A whole rule in words, read only: what a viewer sees, and the builder's summary. */
export function segmentWords(segment: Segment | null | undefined, id = "segment-words"): HTMLElement {
  if (!segment) return h("p", { id, className: "muted" }, "No live segment: the audience is the static members only.");
  if (conditionOf(segment) !== null) return h("div", { id }, h("p", {}, `Also everyone who ${conditionWords(segment)}, when it is sent.`));
  return h("div", { id }, h("p", {}, "Also everyone who matches, when it is sent:"), h("ul", { className: "segment-rule" }, items(segment)));
}

/** The node at a verdict's path ("all.1.not", "" for the root), or undefined when the rule changed. */
export function nodeAt(segment: Segment | null | undefined, path: string): Segment | undefined {
  let node: Segment | undefined = segment ?? undefined;
  const parts = path ? path.split(".") : [];
  for (let i = 0; node && i < parts.length; i += 1) {
    const part = parts[i];
    if (part === "all" || part === "any") {
      node = node[part]?.[Number(parts[i + 1])];
      i += 1;
    } else if (part === "not") {
      node = typeof node.not === "object" && node.not !== null ? node.not : undefined;
    } else node = undefined;
  }
  return node;
}

/** explainRecipient's segment verdict: whether the rule matches this profile, then each condition with
 *  what is true of the profile ("was shown campaign launch"), worded from the campaign's saved rule. */
export function segmentVerdicts(answer: SegmentExplanation | null | undefined, rule: Segment | null | undefined, profileId: string): HTMLElement | null {
  if (!answer) return null;
  return h("div", { id: "explain-segment", "data-matched": String(answer.matched) },
    h("p", {}, answer.matched ? `${profileId} matches the live segment now.` : `${profileId} does not match the live segment now.`),
    h("div", { className: "table-wrap" }, h("table", {},
      h("caption", {}, "Live segment: each condition for this profile"),
      h("thead", {}, h("tr", {}, ...["Condition", "Outcome", "For this profile"].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, ...answer.conditions.map((c) => {
        const node = nodeAt(rule, c.path);
        const known = node !== undefined && conditionOf(node) === c.condition;
        const asked = known ? conditionWords(node, c.negated) : `${c.condition} (at ${c.path || "the root"})`;
        const found = known ? conditionWords(node, !c.holds) : c.holds ? "holds" : "does not hold";
        return h("tr", { "data-path": c.path, "data-ok": String(c.ok) },
          h("th", { scope: "row" }, cap(asked)),
          h("td", { className: c.ok ? "ok" : "bad" }, c.ok ? "Meets it" : "Does not meet it"),
          h("td", {}, cap(found)));
      })))));
}

function cap(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
