"""A MiniCluster once deployed: the names its stack exports and what it is doing.

``stackoutputs`` names each stack output once for the program that exports it and all that read
it; ``status`` reads a deployed MiniCluster's state from the API server's objects (plain JSON)
and what its instance says; ``rankzero`` finds rank 0's pod and what runs Flux in it (through
the API server's exec, with the user's credentials).
Both are read by the Pulumi layer, the CLI and the policies, never by the renderer.
"""
