// The client under test for ../calls.ts (v10): tsconfig maps "client-under-test" here.
import { createTRPCProxyClient, httpBatchLink } from "@trpc/client";
import type { AppRouter } from "../../src/v10";

export type * from "../../src/v10";
export const api = createTRPCProxyClient<AppRouter>({
  links: [httpBatchLink({ url: "http://127.0.0.1:8000/trpc" })],
});
