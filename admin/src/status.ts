// The console's status line: announced to screen readers, drawn nowhere (a fixed status line covered
// the foot of every screen). Every screen's frame carries it.
import { h } from "./dom";

export const live = h("p", { id: "status", role: "status", "aria-live": "polite", className: "visually-hidden" });

export function announce(message: string): void {
  live.textContent = message;
}
