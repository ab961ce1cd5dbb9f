/** What both router types share, with no tRPC import: procedure paths, inputs and outputs by name. */
import type { Procedures } from "./procedures";

/** A procedure's path, e.g. `"campaigns.getMyCampaigns"`. */
export type ProcedurePath = keyof Procedures;
/** What a procedure takes (`void` when it takes nothing, `| undefined` when the input may be left out). */
export type ProcedureInput<P extends ProcedurePath> = Procedures[P]["input"];
/** What a procedure answers. */
export type ProcedureOutput<P extends ProcedurePath> = Procedures[P]["output"];
/** A procedure's kind: `"query"` or `"mutation"`. */
export type ProcedureKind<P extends ProcedurePath> = Procedures[P]["kind"];
/** The namespaces (`campaigns`, `profiles`, ...): the first part of every path. */
export type Namespace = ProcedurePath extends infer P ? (P extends `${infer N}.${string}` ? N : never) : never;
/** The procedures of namespace `N`, by their name within it. */
export type NamesIn<N extends Namespace> = {
  [P in ProcedurePath as P extends `${N}.${infer Name}` ? Name : never]: P;
};
