// The email preview frame (/admin/email-frame): shows the HTML its parent console posts to it.
// It runs sandboxed with an opaque origin and its own CSP (inline style allowed, inline script not),
// so the email looks as it will in a mail client and nothing in it can reach the console.

window.addEventListener("message", (event: MessageEvent<unknown>) => {
  if (event.source !== window.parent) return;
  const data = event.data;
  if (typeof data !== "object" || data === null || !("html" in data)) return;
  const html = (data as { html: unknown }).html;
  if (typeof html !== "string") return;
  // DOMParser documents never run scripts; the imported nodes keep the email's inline styles.
  const parsed = new DOMParser().parseFromString(html, "text/html");
  document.documentElement.replaceWith(document.importNode(parsed.documentElement, true));
});
window.parent.postMessage({ emailFrameReady: true }, "*");
