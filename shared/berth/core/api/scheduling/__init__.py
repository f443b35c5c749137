"""scheduling.k8s.io and policy: PriorityClass, PodDisruptionBudget; a pod's priority."""
