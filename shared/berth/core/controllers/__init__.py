"""Controllers beside the scheduler (kube: pkg/controller)."""
