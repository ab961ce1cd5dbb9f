// The client under test for calls.ts (v11): tsconfig maps "client-under-test" here; v10/client.ts is
// the v10 twin, so one file of calls checks both.
import { createTRPCClient, httpBatchLink } from "@trpc/client";
import type { AppRouter } from "../src/index";

export type * from "../src/index";
export const api = createTRPCClient<AppRouter>({ links: [httpBatchLink({ url: "http://127.0.0.1:8000/trpc" })] });
