/**
 * `@campaign-engine/client/v10`: the same router type for `createTRPCProxyClient` of `@trpc/client` v10,
 * built from the same generated `Procedures` (src/procedures.ts) with v10's router and procedure types.
 *
 *   import { createTRPCProxyClient, httpBatchLink } from "@trpc/client";
 *   import type { AppRouter } from "@campaign-engine/client/v10";
 *   const api = createTRPCProxyClient<AppRouter>({ links: [httpBatchLink({ url: ".../trpc" })] });
 */
import type {
  CreateRouterInner,
  DefaultDataTransformer,
  DefaultErrorShape,
  Procedure,
  ProcedureParams,
  RootConfig,
} from "@trpc/server";
import type { Namespace, NamesIn, ProcedureInput, ProcedureKind, ProcedureOutput, ProcedurePath } from "./paths";

export type * from "./procedures";
export type * from "./paths";

type Config = RootConfig<{
  ctx: object;
  meta: object;
  errorShape: DefaultErrorShape;
  transformer: DefaultDataTransformer;
}>;

type Params<P extends ProcedurePath> = ProcedureParams<
  Config,
  object,
  ProcedureInput<P>,
  ProcedureInput<P>,
  ProcedureOutput<P>,
  ProcedureOutput<P>,
  object
>;

type Built<P> = P extends ProcedurePath ? Procedure<ProcedureKind<P> & ("query" | "mutation"), Params<P>> : never;

type Namespaces = {
  [N in Namespace]: CreateRouterInner<Config, { [Name in keyof NamesIn<N>]: Built<NamesIn<N>[Name]> }>;
};

/** The API's router as `createTRPCProxyClient<AppRouter>` (v10) reads it. */
export type AppRouter = CreateRouterInner<Config, Namespaces>;
