// make dev's local OpenID provider: node-oidc-provider (OpenID Certified), configured for the console.
//
// One public client (no secret; authorization code with PKCE, S256 only), whose access tokens are JWTs
// for one resource, the API (`--audience`), signed RS256 with a key drawn at start and served at /jwks,
// where the API verifies them (AUTH_JWKS_URL). It signs in the dev users only: the platform admins and
// every subject granted a role in a tenant, read again from the API on each sign-in (`--subjects-url`,
// the API's development-only /dev/sign-in-subjects: grants change while make dev runs), each offered as
// a button; a typed id outside them is refused. Without an answer from the API only `--admins` may sign
// in. What each may do is the API's call, by CAMPAIGN_ADMIN_PROFILE_IDS and the grants. Consent is
// implied: the console is the only client. Nothing is logged per request: no code, token or cookie.
//
//   node devidp/provider.mjs --port 9400 --client-id console --audience http://127.0.0.1:8000 \
//     --redirect-uri http://127.0.0.1:8000/admin --redirect-uri http://127.0.0.1:8000/admin/oidc-silent \
//     --subjects-url http://127.0.0.1:8000/dev/sign-in-subjects
import { generateKeyPairSync, randomBytes } from "node:crypto";
import { createServer } from "node:http";
import { parseArgs } from "node:util";
import Provider, { errors } from "oidc-provider";

const { values: args } = parseArgs({
  options: {
    host: { type: "string", default: "127.0.0.1" },
    port: { type: "string", default: "9400" },
    "client-id": { type: "string", default: "console" },
    "redirect-uri": { type: "string", multiple: true, default: [] },
    audience: { type: "string" },
    admins: { type: "string", default: "" },
    "access-token-ttl": { type: "string", default: "3600" },
    "subjects-url": { type: "string" },
  },
});
if (!args.audience || !args["redirect-uri"].length) {
  console.error("devidp: --audience and at least one --redirect-uri are required");
  process.exit(2);
}
const issuer = `http://${args.host}:${args.port}`;
const audience = args.audience;
const scope = "campaigns:admin"; // the API's admin scope; an admin also needs CAMPAIGN_ADMIN_PROFILE_IDS
const admins = args.admins.split(",").map((s) => s.trim()).filter(Boolean);
const signingKey = {
  ...generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({ format: "jwk" }),
  kid: `dev-${randomBytes(6).toString("hex")}`,
  use: "sig",
  alg: "RS256",
};

const provider = new Provider(issuer, {
  clients: [
    {
      client_id: args["client-id"],
      token_endpoint_auth_method: "none",
      grant_types: ["authorization_code"],
      response_types: ["code"],
      redirect_uris: args["redirect-uri"],
    },
  ],
  jwks: { keys: [signingKey] },
  cookies: { keys: [randomBytes(32).toString("hex")] },
  pkce: { required: () => true },
  // The console (a page of the API's origin) calls the token endpoint: CORS for its redirect origins.
  clientBasedCORS: (ctx, origin, client) => client.redirectUris.some((uri) => new URL(uri).origin === origin),
  findAccount: (ctx, id) => ({ accountId: id, claims: () => ({ sub: id }) }),
  features: {
    devInteractions: { enabled: false },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => audience,
      useGrantedResource: () => true,
      getResourceServerInfo: (ctx, indicator) => {
        if (indicator !== audience) throw new errors.InvalidTarget();
        return { scope, audience, accessTokenFormat: "jwt", accessTokenTTL: Number(args["access-token-ttl"]), jwt: { sign: { alg: "RS256" } } };
      },
    },
  },
  ttl: { AccessToken: Number(args["access-token-ttl"]), AuthorizationCode: 60, IdToken: 3600, Interaction: 600, Session: 86400, Grant: 86400 },
  interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
  renderError: (ctx, out) => {
    ctx.type = "html";
    ctx.body = page("Sign-in failed", `<p role="alert">${escape(out.error)}: ${escape(out.error_description ?? "")}</p>`);
  },
});

function escape(text) {
  return String(text).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function page(title, body) {
  return `<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><link rel="icon" href="data:,"><title>${escape(title)}</title></head><body><main><h1>${escape(title)}</h1>${body}</main></body></html>`;
}

/** The dev users now: id -> what they hold ("platform admin", "publisher in acme"); `reached` says
 *  whether the API answered (else only the configured admins). */
async function devUsers() {
  const users = new Map(admins.map((id) => [id, ["platform admin"]]));
  if (!args["subjects-url"]) return { users, reached: false };
  try {
    const answer = await fetch(args["subjects-url"], { signal: AbortSignal.timeout(5000) });
    if (!answer.ok) return { users, reached: false };
    const body = await answer.json();
    for (const id of body.admins ?? []) users.set(id, ["platform admin"]);
    for (const g of body.granted ?? []) {
      const held = users.get(g.subject) ?? [];
      if (!held.includes("platform admin")) held.push(`${g.role} in ${g.tenantId}`);
      users.set(g.subject, held);
    }
    return { users, reached: true };
  } catch {
    return { users, reached: false };
  }
}

function loginPage(uid, { users, reached }, problem = "") {
  const quick = [...users].map(([id, held]) => `<li><button type="submit" name="profileId" value="${escape(id)}">Sign in as ${escape(id)} (${escape(held.join(", "))})</button></li>`).join("");
  return page("Sign in to the campaigns console", `
<p>The local identity provider of <code>make dev</code>. It signs in the dev users only: the platform admins and everyone granted a role in a tenant (under Access and keys). Anyone else is refused: grant them a role first.</p>
${reached ? "" : `<p role="status">The API did not answer, so only the platform admins are offered.</p>`}
${problem ? `<p role="alert">${escape(problem)}</p>` : ""}
<form method="post" action="/interaction/${escape(uid)}/login">
<ul id="dev-users">${quick}</ul>
<p><label for="profile-id">Profile id</label> <input id="profile-id" name="typedId" autocomplete="username" spellcheck="false"></p>
<p><button type="submit">Sign in</button></p>
</form>`);
}

async function readForm(req) {
  let body = "";
  for await (const chunk of req) {
    body += chunk;
    if (body.length > 4096) throw new Error("form too large");
  }
  return new URLSearchParams(body);
}

/** The sign-in interaction: a profile id, then the grant the console asked for (consent is implied). */
async function interaction(req, res, uid, action) {
  const details = await provider.interactionDetails(req, res);
  if (details.uid !== uid) throw new errors.SessionNotFound("interaction mismatch");
  if (req.method === "GET") {
    res.writeHead(200, { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" });
    res.end(loginPage(uid, await devUsers()));
    return;
  }
  if (req.method !== "POST" || action !== "login") {
    res.writeHead(405).end();
    return;
  }
  const form = await readForm(req);
  const profileId = (form.get("profileId") || form.get("typedId") || "").trim();
  const known = await devUsers(); // read again: a grant made or revoked since the page was drawn counts
  if (!/^[A-Za-z0-9._:@-]{1,128}$/.test(profileId)) {
    res.writeHead(400, { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" });
    res.end(loginPage(uid, known, "Type a profile id: letters, digits and . _ : @ - only."));
    return;
  }
  if (!known.users.has(profileId)) {
    res.writeHead(403, { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" });
    res.end(loginPage(uid, known, `${profileId} is not a dev user: only the platform admins and subjects granted a role may sign in here. Grant them a role under Access and keys first.`));
    return;
  }
  const grant = new provider.Grant({ accountId: profileId, clientId: details.params.client_id });
  grant.addOIDCScope("openid");
  grant.addResourceScope(audience, scope);
  const grantId = await grant.save();
  await provider.interactionFinished(req, res, { login: { accountId: profileId }, consent: { grantId } }, { mergeWithLastSubmission: false });
}

const handle = provider.callback();
const server = createServer((req, res) => {
  const match = /^\/interaction\/([^/?]+)(?:\/(login))?(?:\?|$)/.exec(req.url ?? "");
  if (!match) {
    handle(req, res);
    return;
  }
  interaction(req, res, match[1], match[2]).catch((err) => {
    if (!res.headersSent) res.writeHead(400, { "content-type": "text/html; charset=utf-8" });
    res.end(page("Sign-in failed", `<p role="alert">${escape(err.name ?? "Error")}: ${escape(err.error_description ?? err.message)}</p>`));
  });
});
server.listen(Number(args.port), args.host, () => {
  console.log(`devidp: OpenID provider ${issuer} for client '${args["client-id"]}', tokens for ${audience}`);
});
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => server.close(() => process.exit(0)));
