"""Real Kubernetes nodes for e2e: the builder of their pieces (toolchain.py) and the fixture that
runs them (cluster.py). See tests/e2e/README.md."""
