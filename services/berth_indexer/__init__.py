"""The indexer service: the per-node PV index and node usage, materialised in Redis."""
