// Sign-in with the organisation's OpenID provider (AUTH_OIDC_ISSUER, AUTH_OIDC_CLIENT_ID, written into
// the page by the API): authorization code with PKCE for a public client, through oauth4webapi (a
// certified client library), never by hand. The answer comes back in the fragment, which no server and
// no Referer sees. Only the access token is kept (the tab's session storage, tab.ts); the ID token is
// checked (nonce, issuer, audience) and dropped, and no refresh token is asked for. Renewal is silent
// where the provider allows it: the same request with prompt=none in a hidden frame that returns to
// /admin/oidc-silent, a script-free page of this origin the console reads the answer from.
import * as oauth from "oauth4webapi";

const issuer = document.body.dataset["oidcIssuer"] ?? "";
const clientId = document.body.dataset["oidcClientId"] ?? "";
const root = document.body.dataset["root"] ?? "";
const PENDING_KEY = "campaign-engine.oidc-pending"; // verifier, state and nonce across the redirect
const SCOPE = "openid campaigns:admin";
const SILENT_WAIT_MS = 15000;

/** Whether this deployment signs people in with a provider (else: the pasted token only). */
export function oidcConfigured(): boolean {
  return Boolean(issuer && clientId);
}

/** The provider's name as a person reads it: its host. */
export function providerName(): string {
  try {
    return new URL(issuer).host;
  } catch {
    return issuer;
  }
}

const client: oauth.Client = { client_id: clientId };
// Plain http only reaches here where the API allowed it (CAMPAIGN_LOCAL_DEVELOPMENT: make dev's provider).
const http = { [oauth.allowInsecureRequests]: issuer.startsWith("http:") };
let metadata: Promise<oauth.AuthorizationServer> | null = null;

function server(): Promise<oauth.AuthorizationServer> {
  metadata ??= (async () => {
    const url = new URL(issuer);
    return oauth.processDiscoveryResponse(url, await oauth.discoveryRequest(url, { algorithm: "oidc", ...http }));
  })().catch((err: unknown) => {
    metadata = null; // asked again next time rather than keep a failure
    throw err;
  });
  return metadata;
}

function redirectUri(silent: boolean): string {
  return `${location.origin}${root}/admin${silent ? "/oidc-silent" : ""}`;
}

interface Pending {
  verifier: string;
  state: string;
  nonce: string;
}

async function authorizationUrl(silent: boolean): Promise<{ url: URL; pending: Pending }> {
  const as = await server();
  const pending = { verifier: oauth.generateRandomCodeVerifier(), state: oauth.generateRandomState(), nonce: oauth.generateRandomNonce() };
  const url = new URL(as.authorization_endpoint ?? "");
  url.search = new URLSearchParams({
    client_id: clientId,
    response_type: "code",
    response_mode: "fragment",
    scope: SCOPE,
    redirect_uri: redirectUri(silent),
    code_challenge: await oauth.calculatePKCECodeChallenge(pending.verifier),
    code_challenge_method: "S256",
    state: pending.state,
    nonce: pending.nonce,
    ...(silent ? { prompt: "none" } : {}),
  }).toString();
  return { url, pending };
}

/** Leaves for the provider's sign-in page; it returns to /admin with a code in the fragment. */
export async function beginSignIn(): Promise<void> {
  const { url, pending } = await authorizationUrl(false);
  sessionStorage.setItem(PENDING_KEY, JSON.stringify(pending));
  location.assign(url.href);
}

/** Whether the address is the provider's answer to a sign-in this tab began. */
export function returningFromProvider(): boolean {
  return sessionStorage.getItem(PENDING_KEY) !== null && /^#(?:.*&)?(?:code|error)=/.test(location.hash);
}

/** The access token the provider's answer in the fragment is worth; throws with the provider's reason.
 *  The code, state and verifier are gone from the address bar and storage either way. */
export async function finishSignIn(): Promise<string> {
  const answer = new URLSearchParams(location.hash.slice(1));
  history.replaceState(null, "", `${location.pathname}#/`);
  const saved = sessionStorage.getItem(PENDING_KEY);
  sessionStorage.removeItem(PENDING_KEY);
  if (!saved) throw new Error("no sign-in was under way in this tab");
  return exchange(answer, JSON.parse(saved) as Pending, false);
}

async function exchange(answer: URLSearchParams, pending: Pending, silent: boolean): Promise<string> {
  const as = await server();
  const params = oauth.validateAuthResponse(as, client, answer, pending.state);
  const response = await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, redirectUri(silent), pending.verifier, http);
  const result = await oauth.processAuthorizationCodeResponse(as, client, response, { expectedNonce: pending.nonce, requireIdToken: true });
  return result.access_token;
}

/** A new access token without a word to the person, where the provider still knows them (prompt=none);
 *  null when it does not (signed out there, third-party cookies blocked, no answer in time). */
export async function silentToken(): Promise<string | null> {
  if (!oidcConfigured()) return null;
  let frame: HTMLIFrameElement | null = null;
  try {
    const { url, pending } = await authorizationUrl(true);
    const shown = document.createElement("iframe");
    frame = shown;
    shown.hidden = true;
    shown.title = "Session renewal";
    shown.setAttribute("aria-hidden", "true");
    const answer = await new Promise<URLSearchParams | null>((resolve) => {
      const timer = window.setTimeout(() => resolve(null), SILENT_WAIT_MS);
      shown.addEventListener("load", () => {
        let hash = "";
        try {
          hash = shown.contentWindow?.location.pathname.endsWith("/admin/oidc-silent") ? shown.contentWindow.location.hash : "";
        } catch {
          return; // still on the provider's origin: not the answer yet
        }
        if (!hash) return;
        window.clearTimeout(timer);
        resolve(new URLSearchParams(hash.slice(1)));
      });
      shown.src = url.href;
      document.body.append(shown);
    });
    if (!answer || answer.has("error")) return null;
    return await exchange(answer, pending, true);
  } catch {
    return null;
  } finally {
    frame?.remove();
  }
}
