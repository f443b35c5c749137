"""The plugins (kube: pkg/scheduler/framework/plugins): one module or package each, the registry,
and helper/ for what several share."""
