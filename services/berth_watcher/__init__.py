"""The watcher service: Kubernetes list/watch events onto the cluster-events topic."""
