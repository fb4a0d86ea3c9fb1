"""Every fact of a MiniCluster derived once, from its validated definition.

``plan`` holds the frozen ``MiniClusterPlan`` the renderer, the component, the stack program and
the CLI all read (names, mode, role, paths, rank order, quorum); ``autoscale`` an elastic
MiniCluster's settings and bounds, which the plan carries.
"""
