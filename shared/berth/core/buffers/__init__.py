"""CapacityBuffers (autoscaling.x-k8s.io): the buffer controller, schedules, readyReplicas and fake pods."""
