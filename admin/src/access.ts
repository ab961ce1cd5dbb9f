// Who is signed in and what they may do. The role each procedure needs is the server's own table
// (the `ACCESS` dicts next to its routers), read from the `x-access` of every operation in
// /openapi.json, so the console hides exactly what the server would refuse and cannot disagree with it.
import type { ProcedurePath } from "../../clients/typescript/src/paths";
import { type Me, type Role, ROLES } from "./api";

/** An operation's `x-access`: anyone, any signed-in profile, a tenant role, or platform admins only. */
export type Access = "public" | "user" | Role | "platform";
const LEVELS = new Set<string>(["public", "user", ...ROLES, "platform"]);

export interface Session {
  me: Me;
  /** The role `path` needs, as the server declares it; undefined when the server has no such procedure. */
  needs(path: ProcedurePath): Access | undefined;
  /** Whether the signed-in caller may call `path`: the check the server makes before it runs. */
  can(path: ProcedurePath): boolean;
}

function rank(role: Role): number {
  return ROLES.indexOf(role);
}

/** Reads the access table of every tRPC operation from the server's OpenAPI document. */
export async function accessTable(root: string): Promise<Map<string, Access>> {
  const answer = await fetch(`${root}/openapi.json`, { credentials: "omit" });
  if (!answer.ok) throw new Error(`could not read the server's access table (/openapi.json: ${answer.status})`);
  const doc = (await answer.json()) as { paths?: Record<string, Record<string, { operationId?: string; "x-access"?: unknown }>> };
  const table = new Map<string, Access>();
  for (const [url, methods] of Object.entries(doc.paths ?? {})) {
    if (!url.startsWith("/trpc/")) continue;
    for (const op of Object.values(methods)) {
      const access = op["x-access"];
      if (typeof access === "string" && LEVELS.has(access)) table.set(url.slice("/trpc/".length), access as Access);
    }
  }
  return table;
}

export function session(me: Me, table: Map<string, Access>): Session {
  const needs = (path: ProcedurePath): Access | undefined => table.get(path);
  const can = (path: ProcedurePath): boolean => {
    const access = needs(path);
    if (access === undefined) return false; // unknown to the server: nothing to offer
    if (access === "public" || access === "user" || me.platform) return true;
    if (access === "platform") return false;
    return me.role !== null && rank(me.role) >= rank(access);
  };
  return { me, needs, can };
}

/** "the publisher role": what a refusal note names. */
export function roleName(access: Access | undefined): string {
  if (access === "platform") return "a platform admin";
  if (access === undefined) return "a role this server does not offer";
  return `the ${access} role`;
}
