// Drives campaign-engine with the real, unmodified @trpc/client v10 and v11 (httpLink and
// httpBatchLink, no transformer) and prints one JSON document for tests/e2e/test_trpc_client.py.
//
// Usage: node run.mjs <baseUrl> [adminToken]   (or TRPC_BASE_URL / TRPC_ADMIN_TOKEN)
// baseUrl is the server root, e.g. http://127.0.0.1:8000; the clients talk to <baseUrl>/trpc.
//
// v10 and v11 live in the workspaces ./v10 and ./v11 so each client resolves its own @trpc/server
// peer (the two majors cannot share one node_modules/@trpc/server).

import * as trpc10 from "trpc10";
import * as trpc11 from "trpc11";

const baseUrl = (process.argv[2] ?? process.env.TRPC_BASE_URL ?? "").replace(/\/$/, "");
const token = process.argv[3] ?? process.env.TRPC_ADMIN_TOKEN ?? "";
if (!baseUrl || !token) {
  console.error("usage: node run.mjs <baseUrl> <adminToken>");
  process.exit(2);
}

const VERSIONS = {
  v10: { lib: trpc10, create: trpc10.createTRPCProxyClient },
  v11: { lib: trpc11, create: trpc11.createTRPCClient },
};

/** A fetch that records what the client really sent, so the test can check the wire shape. */
function recordingFetch(requests) {
  return async (url, init = {}) => {
    const headers = Object.fromEntries(
      Object.entries(init.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v]),
    );
    const entry = {
      method: init.method ?? "GET",
      url: String(url).slice(baseUrl.length),
      contentType: headers["content-type"] ?? null,
      body: typeof init.body === "string" ? init.body : null,
    };
    requests.push(entry);
    const response = await fetch(url, init);
    entry.status = response.status;
    return response;
  };
}

function describeError(err, TRPCClientError) {
  return {
    isTRPCClientError: err instanceof TRPCClientError,
    message: err?.message ?? String(err),
    code: err?.data?.code ?? null,
    httpStatus: err?.data?.httpStatus ?? null,
    path: err?.data?.path ?? null,
    issues: err?.data?.issues ?? null,
    shapeCode: err?.shape?.code ?? null,
  };
}

async function settle(promise, TRPCClientError) {
  try {
    return { ok: true, data: await promise };
  } catch (err) {
    return { ok: false, error: describeError(err, TRPCClientError) };
  }
}

async function scenario(version, linkName) {
  const { lib, create } = VERSIONS[version];
  const requests = [];
  const link = linkName === "httpBatchLink" ? lib.httpBatchLink : lib.httpLink;
  const makeClient = (authToken) =>
    create({
      links: [
        link({
          url: `${baseUrl}/trpc`,
          fetch: recordingFetch(requests),
          headers: () => (authToken ? { authorization: `Bearer ${authToken}` } : {}),
        }),
      ],
    });
  const client = makeClient(token);
  const anonymous = makeClient(null);
  const E = lib.TRPCClientError;
  const id = `e2e-${version}-${linkName.toLowerCase()}`;
  const out = { version, link: linkName };

  out.list = await settle(client.campaigns.list.query(), E);
  out.create = await settle(
    client.campaigns.create.mutate({
      id,
      name: `Created by ${version} ${linkName}`,
      channels: ["notify"],
      notification: { title: "Hello", body: "From the tRPC client" },
    }),
    E,
  );
  out.get = await settle(client.campaigns.get.query({ campaignId: id }), E);
  // Two queries in the same tick: httpBatchLink sends them as one `?batch=1` request.
  out.pair = await Promise.all([
    settle(client.campaigns.get.query({ campaignId: id }), E),
    settle(client.campaigns.list.query({ limit: 1 }), E),
  ]);
  // A batch whose members fail differently: the server answers 207 and each call gets its own result.
  out.mixed = await Promise.all([
    settle(client.campaigns.get.query({ campaignId: id }), E),
    settle(client.campaigns.get.query({ campaignId: `missing-${id}` }), E),
  ]);
  out.missing = await settle(client.campaigns.get.query({ campaignId: `missing-${id}` }), E);
  out.invalid = await settle(
    client.campaigns.create.mutate({ id: `${id}-bad`, name: "", channels: [] }),
    E,
  );
  out.anonymous = await settle(anonymous.campaigns.list.query(), E);
  // Optimistic concurrency through a JavaScript Date: the echoed updatedAt (milliseconds, "Z") is the
  // same instant as the stored one, so the update succeeds; echoing it again afterwards is stale.
  const read = await settle(client.campaigns.get.query({ campaignId: id }), E);
  out.echoed = read.ok ? new Date(read.data.updatedAt).toISOString() : null;
  out.echo = await settle(
    client.campaigns.update.mutate({ campaignId: id, description: "echoed", expectedUpdatedAt: out.echoed }),
    E,
  );
  out.stale = await settle(
    client.campaigns.update.mutate({ campaignId: id, description: "stale", expectedUpdatedAt: out.echoed }),
    E,
  );
  out.requests = requests;
  return out;
}

const results = [];
for (const version of Object.keys(VERSIONS)) {
  for (const linkName of ["httpLink", "httpBatchLink"]) {
    results.push(await scenario(version, linkName));
  }
}
process.stdout.write(JSON.stringify({ results }) + "\n");
