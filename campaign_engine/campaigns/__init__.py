"""Use cases, one module per concern. Each owns its transactions and commits before any I/O."""
