"""berth: Kubernetes cluster events in, placement decisions out."""

__version__ = "0.1.0"
