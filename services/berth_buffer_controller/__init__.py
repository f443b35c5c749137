"""The buffer-controller service: CapacityBuffer statuses."""
