"""The Pulumi layer: the MiniCluster component, the keygen Command, stacks and bursting."""
