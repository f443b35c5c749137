"""The Kubernetes API (kubernetes-asyncio): a client, list and watch."""
