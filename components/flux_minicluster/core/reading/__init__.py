"""From what users write to validated MiniClusters.

YAML written by hand, read without surprises (``yamlio``); documents and bare specs as users keep
them (``documents``); and ``loading``, the one way a validated ``MiniClusterDefinition`` comes to
exist: the models, then the cross-field rules of ``validation``.
"""
