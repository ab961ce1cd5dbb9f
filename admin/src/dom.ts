// A tiny element builder. It never sets a `style` attribute (the CSP forbids inline style) and never
// parses HTML: text is always text.
type Child = Node | string | null | undefined | false;
type Attrs = Record<string, string | number | boolean | EventListener | null | undefined>;

export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Attrs = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (name === "style") throw new Error("inline style is not allowed");
    if (typeof value === "function") el.addEventListener(name.slice(2), value);
    else el.setAttribute(name === "className" ? "class" : name, value === true ? "" : String(value));
  }
  append(el, children);
  return el;
}

export function append(parent: Node, children: Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    parent.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
  }
}

export function replace(parent: Element, ...children: Child[]): void {
  parent.replaceChildren();
  append(parent, children);
}

const SVG = "http://www.w3.org/2000/svg";
export function svg(tag: string, attrs: Record<string, string | number>, ...children: (Node | string)[]): SVGElement {
  const el = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) el.setAttribute(name, String(value));
  for (const child of children) el.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
  return el;
}

let nextId = 0;
/** A unique id for label/control pairs. */
export function uid(prefix: string): string {
  nextId += 1;
  return `${prefix}-${nextId}`;
}

/** A labelled control: the label names the control via `for`, hints and errors via aria-describedby. */
export function field(label: string, control: HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement, hint?: string): { row: HTMLElement; error: HTMLElement } {
  control.id ||= uid("f");
  const error = h("p", { className: "field-error", id: `${control.id}-error`, hidden: true });
  const hintEl = hint ? h("p", { className: "hint", id: `${control.id}-hint` }, hint) : null;
  control.setAttribute("aria-describedby", [hintEl?.id, error.id].filter(Boolean).join(" "));
  const row = h("div", { className: "field" }, h("label", { for: control.id }, label), control, hintEl, error);
  return { row, error };
}
