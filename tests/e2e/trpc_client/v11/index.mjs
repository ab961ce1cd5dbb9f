// Re-exported from this folder so that @trpc/client and its @trpc/server peer resolve to v11.
export * from "@trpc/client";
