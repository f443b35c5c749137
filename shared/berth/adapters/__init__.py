"""Adapters that wrap the core, one package per port: bus, store, kube (the Kubernetes API), files,
and runtime (what every service runs on)."""
