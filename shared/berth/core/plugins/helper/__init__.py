"""What several plugins share (kube: plugins/helper): score normalisation, the shape score,
the default spread selector and the assigned-pod index."""
