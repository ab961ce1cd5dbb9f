// Every time on screen: the admin's own clock and zone in the text, the UTC instant on hover and in
// `datetime`, so a time read here matches the wall clock and a time copied into a ticket is exact.
import { h } from "./dom";

const ZONE = Intl.DateTimeFormat().resolvedOptions().timeZone;

// Field by field: Intl refuses dateStyle/timeStyle together with timeZoneName.
const FULL = new Intl.DateTimeFormat(undefined, { year: "numeric", month: "short", day: "numeric", hour: "numeric", minute: "2-digit", timeZoneName: "short" });
const CLOCK = new Intl.DateTimeFormat(undefined, { hour: "numeric", minute: "2-digit", timeZoneName: "short" });

/** "Dec 3, 2026, 7:12 PM GMT+1": the local date and time with the zone's short name. */
export function localText(value: string | Date, clockOnly = false): string {
  const d = typeof value === "string" ? new Date(value) : value;
  return (clockOnly ? CLOCK : FULL).format(d);
}

/** "2026-12-03 18:12:38 UTC": the stored instant, to the second, for the hover text. */
export function utcText(value: string | Date): string {
  const d = typeof value === "string" ? new Date(value) : value;
  return `${d.toISOString().slice(0, 19).replace("T", " ")} UTC`;
}

/** A `<time>` element: local text, the UTC instant as its title and machine value. */
export function timeEl(value: string | Date, clockOnly = false): HTMLTimeElement {
  const d = typeof value === "string" ? new Date(value) : value;
  return h("time", { datetime: d.toISOString(), title: utcText(d) }, localText(d, clockOnly));
}

/** The admin's IANA zone name ("Europe/Paris"), for labels of fields typed in local time. */
export function zoneName(): string {
  return ZONE;
}

/** A `datetime-local` field holds wall time in the admin's zone: its hint says the UTC instant that is,
 *  kept up to date as it is typed, so what is sent is never a surprise. */
export function echoUtc(control: HTMLInputElement, hint: HTMLElement, empty = "empty: none"): void {
  const show = (): void => {
    const d = control.value ? new Date(control.value) : null;
    hint.textContent = d && !Number.isNaN(d.getTime()) ? `${localText(d)} = ${utcText(d)}` : `Your time (${ZONE}); ${empty}.`;
    control.title = d && !Number.isNaN(d.getTime()) ? utcText(d) : "";
  };
  control.addEventListener("input", show);
  show();
}

/** `datetime-local` holds local wall time; the API wants an instant with an offset. */
export function instant(el: HTMLInputElement): string | undefined {
  return el.value ? new Date(el.value).toISOString() : undefined;
}
export function localInput(value: string | null | undefined): string {
  if (!value) return "";
  const d = new Date(value);
  const pad = (n: number): string => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}
