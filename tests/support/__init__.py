"""What the tests share and test nothing themselves: the cases several subjects check (specs,
plans, manifests, sizes, versions, queues), the hypothesis strategies, the harness that runs
the entrypoint scripts, the CLI runner and the corpus of upstream specs.

A package of its own, so that a helper never shadows a folder of tests (``tests/cli.py`` once
hid ``tests/cli/``), and ``from support.<module> import ...`` says where a name comes from.
"""
