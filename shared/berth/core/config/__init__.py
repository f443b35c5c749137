"""KubeSchedulerConfiguration (kube: pkg/scheduler/apis/config): parse, validate, merge multiPoint,
build profiles."""
