// Re-exported from this folder so that @trpc/client and its @trpc/server peer resolve to v10.
export * from "@trpc/client";
