"""Policy rules over rendered Kubernetes manifests, shared by the CrossGuard pack and the CLI."""
