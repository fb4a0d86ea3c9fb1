"""The ``minicluster`` command line."""
