"""Pydantic models and pure rules. Imports nothing else of ours and performs no I/O."""
