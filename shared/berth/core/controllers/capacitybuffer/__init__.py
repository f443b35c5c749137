"""The CapacityBuffer controller: schedules, chunk shapes, quotas, readyReplicas
and fake pods."""
