"""The cluster as berth sees it (kube: pkg/scheduler/backend/cache): the ClusterState, its node
table, the per-node PV index and the CSIStorageCapacity index."""
