/**
 * `@campaign-engine/client`: the campaign-engine API's router type for `@trpc/client` v11.
 *
 * The API is a Python server, so there is no TypeScript router to infer from; `Procedures`
 * (src/procedures.ts) is generated from the Python routers and their pydantic models by `make client`,
 * and this file only arranges it the way tRPC's client reads a router. For `createTRPCProxyClient`
 * of v10, import `AppRouter` from `@campaign-engine/client/v10` instead.
 *
 *   import { createTRPCClient, httpBatchLink } from "@trpc/client";
 *   import type { AppRouter } from "@campaign-engine/client";
 *   const api = createTRPCClient<AppRouter>({ links: [httpBatchLink({ url: ".../trpc" })] });
 *   const { campaigns } = await api.campaigns.getMyCampaigns.query();
 */
import type {
  TRPCBuiltRouter,
  TRPCDefaultErrorShape,
  TRPCMutationProcedure,
  TRPCQueryProcedure,
} from "@trpc/server";
import type { Namespace, NamesIn, ProcedureInput, ProcedureKind, ProcedureOutput, ProcedurePath } from "./paths";

export type * from "./procedures";
export type * from "./paths";

type Built<P> = P extends ProcedurePath
  ? ProcedureKind<P> extends "query"
    ? TRPCQueryProcedure<{ input: ProcedureInput<P>; output: ProcedureOutput<P>; meta: object }>
    : TRPCMutationProcedure<{ input: ProcedureInput<P>; output: ProcedureOutput<P>; meta: object }>
  : never;

type Record = { [N in Namespace]: { [Name in keyof NamesIn<N>]: Built<NamesIn<N>[Name]> } };

/** The API's router as `createTRPCClient<AppRouter>` (v11) reads it: no transformer, the default errors. */
export type AppRouter = TRPCBuiltRouter<
  { ctx: object; meta: object; errorShape: TRPCDefaultErrorShape; transformer: false },
  Record
>;
