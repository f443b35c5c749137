"""The store port's adapters: Redis and its in-memory twin, the indexer's writes, data-loss checks."""
