// The live segment builder: a campaign's rule tree edited as groups ("all of these", "any of these",
// either negated) holding conditions, each condition said in words beside it (segment_words.ts), and
// the live count from campaigns.previewSegment as the rule changes (debounced; only the latest answer
// draws). The server checks the rule: a rule past a limit shows the API's BAD_REQUEST naming the limit
// where the count would be, so the builder never keeps a second copy of LIMITS to drift.
import type { Segment } from "./api";
import { ApiError } from "./api";
import { field, h, replace } from "./dom";
import type { Kit } from "./kit";
import { CONDITIONS, type ConditionKey, type EngagedEvent, EVENTS, conditionWords, groupWords, segmentWords } from "./segment_words";

interface Condition {
  kind: "condition";
  key: ConditionKey;
  value: string;
  event: EngagedEvent;
  negated: boolean;
}
interface Group {
  kind: "group";
  op: "all" | "any";
  negated: boolean;
  children: Item[];
}
type Item = Condition | Group;

const VALUE_LABEL: Record<ConditionKey, string> = {
  tag: "tag",
  connectedTo: "profile id",
  locale: "language tag (en also matches en-GB)",
  timeZone: "time zone, like Europe/Paris",
  ageAtLeast: "years",
  ageBelow: "years",
  memberOf: "campaign id",
  engaged: "campaign id",
};

function fromWire(node: Segment): Item {
  if (node.all || node.any) {
    return { kind: "group", op: node.all ? "all" : "any", negated: false, children: (node.all ?? node.any ?? []).map(fromWire) };
  }
  if (node.not && typeof node.not === "object") {
    const inner = fromWire(node.not);
    inner.negated = !inner.negated;
    return inner;
  }
  const key = CONDITIONS.map(([k]) => k).find((k) => node[k] !== undefined && node[k] !== null) ?? "tag";
  const value = key === "engaged" ? (node.engaged?.campaignId ?? "") : String(node[key] ?? "");
  return { kind: "condition", key, value, event: node.engaged?.event ?? "shown", negated: node.not === true };
}

function toWire(item: Item): Segment | null {
  if (item.kind === "group") {
    const [first, ...rest] = item.children.map(toWire).filter((r): r is Segment => r !== null);
    if (!first) return null; // an empty group means nothing: left out
    const rule: Segment = item.op === "all" ? { all: [first, ...rest] } : { any: [first, ...rest] };
    return item.negated ? { not: rule } : rule;
  }
  const value = item.value.trim();
  let rule: Segment;
  if (item.key === "engaged") rule = { engaged: { campaignId: value, event: item.event } };
  else if (item.key === "ageAtLeast" || item.key === "ageBelow") {
    // A value that is no whole number is sent as typed, for the API to say what it must be.
    rule = { [item.key]: /^\d+$/.test(value) ? Number(value) : (value as unknown as number) };
  } else rule = { [item.key]: value };
  if (item.negated) rule.not = true;
  return rule;
}

export interface SegmentBuilder {
  element: HTMLElement;
  /** The rule as edited: null when it has no condition (no live segment). */
  read(): Segment | null;
}

/** The builder over `initial`; `prefix` keeps element ids unique where two builders could meet. */
export function segmentBuilder(kit: Kit, initial: Segment | null | undefined, prefix = "segment"): SegmentBuilder {
  const root: Group = initial ? asGroup(fromWire(initial)) : { kind: "group", op: "all", negated: false, children: [] };
  const tree = h("div", { className: "segment-tree", id: `${prefix}-tree` });
  const summary = h("div", { className: "segment-summary" });
  const count = h("div", { id: `${prefix}-count`, className: "segment-count", "aria-live": "polite" });
  const counting = kit.can("campaigns.previewSegment");
  let timer = 0;
  let asked = 0; // only the latest count may draw: an older answer arriving late is dropped

  function read(): Segment | null {
    const rule = toWire(root);
    // A root group of one rule is that rule: the stored rule stays as small as what was built.
    if (rule && !root.negated && (rule.all ?? rule.any)?.length === 1) return (rule.all ?? rule.any)?.[0] ?? rule;
    return rule;
  }

  function changed(): void {
    replace(summary, segmentWords(read(), `${prefix}-words`));
    window.clearTimeout(timer);
    const rule = read();
    const mine = ++asked;
    if (!rule) {
      replace(count, h("p", { className: "muted" }, "Add a condition to reach everyone who meets it, besides the static members."));
      return;
    }
    if (!counting) return;
    if (incomplete(root)) {
      replace(count, h("p", { className: "muted" }, "Type a value for each condition to count its matches."));
      return;
    }
    replace(count, h("p", { className: "muted" }, "Counting…"));
    timer = window.setTimeout(() => {
      kit.api.call("campaigns.previewSegment", { segment: rule }).then((r) => {
        if (mine !== asked) return;
        replace(count, h("p", {}, "Matches ", h("strong", { "data-matches": String(r.matches) }, String(r.matches)),
          ` ${r.matches === 1 ? "profile" : "profiles"} of the tenant now, before the campaign's age policy, opt-outs and caps.`));
      }, (err: unknown) => {
        if (mine !== asked) return;
        replace(count, refusal(kit, err));
      });
    }, 400);
  }

  let numbered = 0;
  // A redraw replaces every control: focus goes back to the control the change was made from, so a
  // keyboard user stays where they were (a new condition's value, a changed kind, the group's Add).
  const focusable = new Map<Item, HTMLElement>();
  let kindChanged: Item | null = null;
  function draw(focus?: Item): void {
    numbered = 0;
    focusable.clear();
    replace(tree, groupView(root, null, "Rule"));
    if (focus) focusable.get(focus)?.focus();
    changed();
  }

  function groupView(group: Group, parent: Group | null, name: string): HTMLElement {
    const op = h("select", {}, h("option", { value: "all" }, "all of these"), h("option", { value: "any" }, "any of these"));
    op.value = group.op;
    op.dataset["field"] = "op";
    op.addEventListener("change", () => {
      group.op = op.value === "any" ? "any" : "all";
      legend.textContent = `${name}: ${groupWords(group.op, group.negated)}`;
      changed();
    });
    const not = h("input", { type: "checkbox", "data-field": "not" });
    not.checked = group.negated;
    not.id = `${prefix}-${name.replace(/\W+/g, "-").toLowerCase()}-not`;
    not.addEventListener("change", () => {
      group.negated = not.checked;
      legend.textContent = `${name}: ${groupWords(group.op, group.negated)}`;
      changed();
    });
    const legend = h("legend", {}, `${name}: ${groupWords(group.op, group.negated)}`);
    const add = (item: Item): void => {
      group.children.push(item);
      draw(item.kind === "group" ? item.children[0] : item);
    };
    const children = group.children.map((child, i) =>
      child.kind === "group" ? groupView(child, group, `${name}, group ${i + 1}`) : conditionView(child, group));
    const addCondition = kit.button("Add condition", () => add({ kind: "condition", key: "tag", value: "", event: "shown", negated: false }));
    focusable.set(group, addCondition);
    return h("fieldset", { className: "segment-group", "data-op": group.op },
      legend,
      h("div", { className: "segment-group-head" },
        field(`${name} matches whoever meets`, op).row,
        h("div", { className: "field check" }, not, h("label", { for: not.id }, `Not (${name.toLowerCase()})`))),
      ...children,
      h("div", { className: "actions" },
        addCondition,
        kit.button("Add group", () => add({ kind: "group", op: "any", negated: false, children: [{ kind: "condition", key: "tag", value: "", event: "shown", negated: false }] })),
        parent ? kit.button(`Remove ${name.toLowerCase()}`, () => {
          parent.children.splice(parent.children.indexOf(group), 1);
          draw(parent);
        }) : null));
  }

  function conditionView(item: Condition, parent: Group): HTMLElement {
    numbered += 1;
    const n = numbered;
    const kind = h("select", { "data-field": "condition" }, ...CONDITIONS.map(([k, label]) => h("option", { value: k }, label)));
    kind.value = item.key;
    const value = h("input", { type: item.key.startsWith("age") ? "number" : "text", value: item.value, autocomplete: "off", spellcheck: "false", "data-field": "value" });
    const event = h("select", { "data-field": "event" }, ...Object.entries(EVENTS).map(([k, [label]]) => h("option", { value: k }, label)));
    event.value = item.event;
    const not = h("input", { type: "checkbox", id: `${prefix}-condition-${n}-not`, "data-field": "not" });
    not.checked = item.negated;
    const words = h("p", { className: "segment-condition-words", "data-words": "" });
    const valueField = field(`Condition ${n}: ${VALUE_LABEL[item.key]}`, value);
    const eventRow = item.key === "engaged" ? field(`Condition ${n}: event`, event).row : null; // the kind's change redraws
    const say = (): void => {
      const rule = toWire(item);
      words.textContent = rule && item.value.trim() ? `Everyone who ${conditionWords(rule)}` : "Type a value.";
    };
    kind.addEventListener("change", () => {
      item.key = kind.value as ConditionKey;
      kindChanged = item;
      draw(item); // the value's label and type follow the condition
      kindChanged = null;
    });
    value.addEventListener("input", () => {
      item.value = value.value;
      say();
      changed();
    });
    event.addEventListener("change", () => {
      item.event = event.value as EngagedEvent;
      say();
      changed();
    });
    not.addEventListener("change", () => {
      item.negated = not.checked;
      say();
      changed();
    });
    say();
    focusable.set(item, kindChanged === item ? kind : value);
    return h("div", { className: "segment-condition", "data-condition": item.key, "data-n": String(n) },
      field(`Condition ${n}`, kind).row, valueField.row, eventRow,
      h("div", { className: "field check" }, not, h("label", { for: not.id }, `Not (condition ${n})`)),
      words,
      h("div", { className: "actions" }, kit.button(`Remove condition ${n}`, () => {
        parent.children.splice(parent.children.indexOf(item), 1);
        draw(parent);
      })));
  }

  draw();
  const element = h("div", { className: "segment-builder", id: `${prefix}-builder` },
    tree, h("h4", {}, "The rule in words"), summary, count);
  return { element, read };
}

function incomplete(item: Item): boolean {
  return item.kind === "group" ? item.children.some(incomplete) : item.value.trim() === "";
}

/** A root that is a single condition is shown inside a group, so conditions can be added beside it. */
function asGroup(item: Item): Group {
  return item.kind === "group" ? item : { kind: "group", op: "all", negated: false, children: [item] };
}

/** A refused count: the API's field messages (a limit named, a campaign that is not the tenant's). */
export function refusal(kit: Kit, err: unknown): HTMLElement {
  if (!(err instanceof ApiError) || err.code !== "BAD_REQUEST" || !err.issues.length) return kit.errorBox(err);
  return h("div", { role: "alert", className: "error", "data-code": err.code },
    ...err.issues.map((issue) => h("p", { className: "error-words" }, sentence(issue.message))));
}

function sentence(message: string): string {
  const text = message.replace(/^Value error, /, "").trim();
  const capital = text.charAt(0).toUpperCase() + text.slice(1);
  return /[.!?]$/.test(capital) ? capital : `${capital}.`;
}
