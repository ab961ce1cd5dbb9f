// One event-webhook endpoint's recent deliveries (webhookEndpoints.deliveries): each event with its last
// attempt's outcome (delivered, refused with its HTTP status, or no answer and why), the latency in ms,
// its attempts among those read (50 a page; "Show older" reads on) and when, newest first. Replay (webhookEndpoints.replay) takes a
// time, so it sends again the event from when it occurred, with its own webhook-id, and every later one
// in order; an attempt recorded before the API said when its event occurred offers no Replay.
import type { DeliveryAttempt } from "./api";
import { h, replace } from "./dom";
import type { Kit } from "./kit";
import { timeEl } from "./time";

const PAGE = 50;
const POLL_MS = 2000;
const POLL_ROUNDS = 30; // a minute of re-reading after an action, then the Refresh button

/** Replaces a table body's rows; a control focused in it keeps focus (found again by its aria-label), so
 *  a re-read while someone tabs through the rows does not throw them back to the top of the page. */
export function redrawRows(body: HTMLElement, rows: HTMLElement[]): void {
  const focused = document.activeElement;
  const label = focused instanceof HTMLElement && body.contains(focused) ? focused.getAttribute("aria-label") : null;
  replace(body, ...rows);
  if (label) body.querySelector<HTMLElement>(`[aria-label="${CSS.escape(label)}"]`)?.focus();
}

/** Attempts grouped by event, newest event first; the newest attempt of each leads. */
interface Delivery {
  last: DeliveryAttempt;
  attempts: number;
}

function grouped(attempts: DeliveryAttempt[]): Delivery[] {
  const byEvent = new Map<string, Delivery>();
  for (const a of attempts) {
    const seen = byEvent.get(a.eventId);
    if (seen) seen.attempts += 1;
    else byEvent.set(a.eventId, { last: a, attempts: 1 });
  }
  return [...byEvent.values()];
}

function delivered(a: DeliveryAttempt): boolean {
  return a.statusCode !== null && a.statusCode !== undefined && a.statusCode >= 200 && a.statusCode < 300;
}

/** "Delivered", "Refused", "No answer (TimedOut)", and when it is tried next. */
function statusCell(a: DeliveryAttempt): (Node | string)[] {
  if (delivered(a)) return ["Delivered"];
  const what = a.statusCode ? "Refused" : `No answer${a.error ? ` (${a.error})` : ""}`;
  return a.nextRetryAt ? [`${what}; next try `, timeEl(a.nextRetryAt)] : [what];
}

/** The deliveries section of endpoint `id`; `changed` re-reads the endpoint list (its state, its queue). */
export function deliveriesSection(kit: Kit, id: string, changed: () => void): { section: HTMLElement; watch: () => void } {
  const mine = kit.generation();
  const body = h("tbody", {});
  const out = h("div", { id: "deliveries-result", "aria-live": "polite" });
  const canReplay = kit.can("webhookEndpoints.replay");
  let attempts: DeliveryAttempt[] = [];
  let cursor: string | null = null;
  let drawn = false;
  let rounds = 0;
  let timer: number | undefined;

  const draw = (): void => {
    const rows = grouped(attempts).map(({ last, attempts: n }) => deliveryRow(last, n));
    redrawRows(body, rows);
    if (!rows.length) body.appendChild(h("tr", {}, h("td", { colspan: 7 }, "No deliveries yet: events this endpoint subscribes to appear here within seconds.")));
    older.hidden = cursor === null;
  };
  const deliveryRow = (a: DeliveryAttempt, n: number): HTMLElement => {
    const replay: HTMLButtonElement = kit.button("Replay", () => {
      const since = a.occurredAt;
      if (!since) return;
      void kit.guarded(replay, () => kit.api.call("webhookEndpoints.replay", { id, since }), (err) => replace(out, kit.errorBox(err))).then((done) => {
        if (!done) return;
        const said = `Queued ${done.queued} event${done.queued === 1 ? "" : "s"} again: ${a.type} and every later one, in order, each with its own webhook-id.`;
        replace(out, h("p", { className: "ok" }, said));
        kit.announce(said);
        watch();
      });
    }, { "aria-label": `Replay ${a.type} ${a.eventId}` });
    const action = !canReplay ? null : a.occurredAt ? replay : h("span", { className: "muted" }, "sent before this console could replay it");
    return h("tr", { "data-event": a.eventId, "data-type": a.type, "data-state": delivered(a) ? "delivered" : "failed" },
      h("th", { scope: "row" }, h("code", {}, a.type), h("br", {}), h("small", { className: "muted" }, a.eventId)),
      h("td", { "data-field": "status", "data-label": "Status" }, ...statusCell(a)),
      h("td", { "data-field": "http", "data-label": "HTTP status" }, a.statusCode ? String(a.statusCode) : "–"),
      h("td", { "data-field": "latency", "data-label": "Latency" }, `${a.latencyMs} ms`),
      h("td", { "data-field": "attempts", "data-label": "Attempts" }, String(n)),
      h("td", { "data-label": "When" }, timeEl(a.at)),
      h("td", {}, action));
  };

  /** The newest page again (what an open screen shows), or the next older page appended. */
  const load = async (more = false): Promise<void> => {
    const input = { id, limit: PAGE, ...(more && cursor ? { cursor } : {}) };
    const page = await kit.guarded(null, () => kit.api.call("webhookEndpoints.deliveries", input), (err) => replace(out, kit.errorBox(err)));
    if (!page || mine !== kit.generation()) return;
    const next = more ? [...attempts, ...page.records] : page.records;
    const same = drawn && JSON.stringify(next) === JSON.stringify(attempts) && (page.cursor ?? null) === cursor;
    attempts = next;
    cursor = page.cursor ?? null;
    drawn = true;
    if (!same) draw(); // a re-read that found nothing new leaves the rows (and the focus) alone
  };
  const alive = (): boolean => mine === kit.generation() && section.isConnected;
  /** Re-reads deliveries and the endpoint for a while: what an action or a new event brings shows by itself. */
  function watch(): void {
    rounds = POLL_ROUNDS;
    if (timer === undefined) tick();
  }
  function tick(): void {
    timer = window.setTimeout(() => {
      timer = undefined;
      if (!alive() || rounds <= 0) return;
      rounds -= 1;
      changed();
      void load().then(() => tick());
    }, POLL_MS);
  }

  const refresh: HTMLButtonElement = kit.button("Refresh deliveries", () => {
    void load().then(() => kit.announce("Deliveries read again."));
    changed();
  }, { id: "deliveries-refresh" });
  const older: HTMLButtonElement = kit.button("Show older deliveries", () => void load(true), { hidden: true, id: "deliveries-older" });
  const section = h("section", { id: "deliveries", "aria-labelledby": "deliveries-h" },
    h("h3", { id: "deliveries-h" }, "Recent deliveries"),
    h("p", { className: "hint" }, "Each event sent to this endpoint, newest first, with its last attempt. An event is retried until a 2xx answer; every attempt carries the same webhook-id, so the receiver can drop a repeat."),
    canReplay ? h("p", { className: "hint" }, "Replay sends the event again, and every event after it, in order.") : null,
    h("div", { className: "actions" }, refresh),
    h("div", { className: "table-wrap" }, h("table", { id: "deliveries-table", className: "stacked" }, h("caption", { className: "visually-hidden" }, "Recent deliveries, newest first"),
      h("thead", {}, h("tr", {}, ...["Event", "Status", "HTTP status", "Latency", "Attempts", "When", ""].map((t) => h("th", { scope: "col" }, t)))), body)),
    older, out);
  void load();
  return { section, watch };
}
