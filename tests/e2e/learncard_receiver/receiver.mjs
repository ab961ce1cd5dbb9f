// A LearnCard inbox stand-in for the engine's `learncard` notification format. Every POST /hook body is
// validated with the PUBLISHED @learncard/types LCNNotificationValidator, its type enum extended by
// ANNOUNCEMENT (the one value the campaigns specification adds), and its `Authorization: Bearer` JWT
// is verified with jose against the engine's DID document (argv[2], its /.well-known/did.json URL):
// EdDSA, `kid` one of the document's authentication keys, `iss` = `vp.holder` = the document's DID,
// `aud` this receiver's origin. Valid: it answers `true`, or `{"result":{"data":true}}` with argv[3] =
// "envelope"; else 400 `false`. GET /log lists what it saw. Prints its port once listening.
import http from "node:http";
import { z } from "zod";
import { LCNNotificationTypeEnumValidator, LCNNotificationValidator } from "@learncard/types";
import { decodeProtectedHeader, importJWK, jwtVerify } from "jose";

const [didUrl, answer = "bare"] = process.argv.slice(2);
const Announcement = LCNNotificationValidator.extend({
  type: z.enum([...LCNNotificationTypeEnumValidator.options, "ANNOUNCEMENT"]),
});
const seen = [];

async function verifyBearer(header, origin) {
  const [scheme, token] = (header ?? "").split(" ");
  if (scheme !== "Bearer" || !token) throw new Error("no bearer");
  const document = await (await fetch(didUrl)).json();
  const { kid, alg } = decodeProtectedHeader(token);
  if (alg !== "EdDSA" || !document.authentication.includes(kid)) throw new Error("kid is not an authentication key");
  const method = document.verificationMethod.find((m) => m.id === kid);
  const key = await importJWK(method.publicKeyJwk, "EdDSA");
  const { payload } = await jwtVerify(token, key, { issuer: document.id, audience: origin, algorithms: ["EdDSA"] });
  if (payload.vp?.holder !== document.id) throw new Error("vp.holder is not the issuer");
  return document.id;
}

const server = http.createServer(async (req, res) => {
  if (req.method === "GET" && req.url === "/log") {
    res.writeHead(200, { "content-type": "application/json" });
    return res.end(JSON.stringify(seen));
  }
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  const entry = { errors: [], headers: req.headers, body: null };
  try {
    entry.body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    const parsed = Announcement.safeParse(entry.body);
    if (!parsed.success) entry.errors.push(`LCNNotification: ${JSON.stringify(parsed.error.issues)}`);
    else if (parsed.data.type !== "ANNOUNCEMENT") entry.errors.push("not an ANNOUNCEMENT");
  } catch (error) {
    entry.errors.push(`body: ${error}`);
  }
  try {
    entry.issuer = await verifyBearer(req.headers.authorization, `http://${req.headers.host}`);
  } catch (error) {
    entry.errors.push(`bearer: ${error}`);
  }
  if (Object.keys(req.headers).some((h) => h.startsWith("webhook-"))) entry.errors.push("Standard Webhooks headers");
  seen.push(entry);
  const ok = entry.errors.length === 0;
  res.writeHead(ok ? 200 : 400, { "content-type": "application/json" });
  res.end(ok ? (answer === "envelope" ? '{"result":{"data":true}}' : "true") : "false");
});
server.listen(0, "127.0.0.1", () => console.log(server.address().port));
