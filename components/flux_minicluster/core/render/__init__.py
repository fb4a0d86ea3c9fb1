"""Spec in, Kubernetes manifests out: the single source of truth for what lands in a cluster."""
