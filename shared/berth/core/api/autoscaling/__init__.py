"""autoscaling.x-k8s.io: the CapacityBuffer."""
