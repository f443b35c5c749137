"""What every service runs on: the worker loop, bootstrap, HTTP, metrics, logs, connections."""
