"""The plugin API (kube: k8s.io/kube-scheduler/framework): extension points, statuses, the cycle,
cluster events and queueing hints; runtime/ builds and runs a profile."""
