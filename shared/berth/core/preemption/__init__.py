"""Preemption's cluster objects (PriorityClass, PodDisruptionBudget) and pod priority as kube admits it."""
