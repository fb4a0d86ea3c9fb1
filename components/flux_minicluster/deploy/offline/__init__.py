"""A Pulumi runtime without an engine: runs a program with the SDK's own registration path and
records what it registers (``minicluster render --stack``, ``demo``, the testing helper)."""
