// A server-rendered email shown in the console: styled inline, which the console's CSP forbids, so it is
// shown in the sandboxed email frame (/admin/email-frame: opaque origin, its own policy), posted in once
// the frame says it is ready (frame.ts).
import { h, replace } from "./dom";

const root = document.body.dataset["root"] ?? "";
const frameUrl = document.body.dataset["emailFrame"] ?? `${root}/admin/email-frame`;

export interface Rendered {
  subject: string;
  html: string;
  text: string;
  /** The frame's id; the subject's is `<id>-subject` unless `subjectId` names it. */
  id: string;
  title: string;
  subjectId?: string;
  /** Shown on the subject's line after it (the language and variant rendered). */
  notes?: Node[];
}

/** Replaces ``out`` with the subject, the frame and the plain-text part (plus ``extra`` lines). */
export function showEmailFrame(out: HTMLElement, email: Rendered, ...extra: Node[]): HTMLIFrameElement {
  const frame = h("iframe", { sandbox: "allow-scripts", src: frameUrl, title: email.title, id: email.id });
  const onReady = (ev: MessageEvent<unknown>): void => {
    if (ev.source !== frame.contentWindow) return;
    window.removeEventListener("message", onReady);
    frame.contentWindow?.postMessage({ html: email.html }, "*");
  };
  window.addEventListener("message", onReady);
  replace(out, h("p", {}, h("strong", {}, "Subject: "), h("span", { id: email.subjectId ?? `${email.id}-subject` }, email.subject), ...(email.notes ?? [])), ...extra, frame,
    h("details", {}, h("summary", {}, "Plain-text part"), h("pre", { className: "email-text" }, email.text)));
  return frame;
}
