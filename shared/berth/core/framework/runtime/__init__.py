"""The framework runtime (kube: pkg/scheduler/framework/runtime): a profile's plugins sorted
by extension point, and node-local answers kept between cycles."""
