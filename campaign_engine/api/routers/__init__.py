"""Procedure routers, one per namespace and concern. Handlers only translate; use cases do the work."""
