"""The workloads a CapacityBuffer or a spread constraint points at: apps (Deployment,
ReplicaSet, StatefulSet), batch (Job), and core/v1's PodTemplate and ReplicationController."""
