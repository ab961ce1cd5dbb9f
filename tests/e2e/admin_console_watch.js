// Injected by tests/e2e/test_admin_console.py into every frame before the page's own scripts (through
// Playwright's init script, i.e. CDP, so the page's CSP does not apply to it). A CSP violation becomes
// a console error, which the test fails on, and is also kept for the test to read.
(() => {
  const seen = [];
  Object.defineProperty(window, "__cspViolations", { value: seen });
  document.addEventListener("securitypolicyviolation", (event) => {
    const text = `CSP violation: ${event.violatedDirective} blocked ${event.blockedURI || "inline"} in ${event.documentURI}`;
    seen.push(text);
    console.error(text);
  });
})();
