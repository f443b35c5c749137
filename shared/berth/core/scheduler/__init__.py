"""The scheduler (kube: pkg/scheduler): one cycle per pod, its results, the retry queue, the
nominator and node sampling."""
