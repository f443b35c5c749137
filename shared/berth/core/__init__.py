"""berth's pure core, in the package shape of kube's pkg/scheduler and k8s.io/api: api (the objects),
cache (the cluster as berth sees it), framework (the plugin API), plugins, scheduler, config,
controllers, pipeline (the engines) and generate. No I/O, no framework imports (docs/architecture.md)."""
