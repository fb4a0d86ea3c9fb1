"""The MiniCluster component: one ``prepare`` (nothing registered before the spec is known
good) and one ``expand`` into typed children, behind the Python class and the multi-language
provider alike."""
