"""HTTP edge: the tRPC-compatible adapter, auth, rate limiting and the procedure routers."""
