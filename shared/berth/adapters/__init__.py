"""Adapters that wrap the core: files, bus, store and the Kubernetes API."""
