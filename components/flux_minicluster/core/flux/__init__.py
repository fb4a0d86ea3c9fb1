"""Flux's own formats, as far as a MiniCluster needs to write, read and check them.

Hostlists (``hostlist``, RFC 29), the broker config (``brokerconfig``), the ZeroMQ CURVE
certificate every broker shares (``certificate``) and the secrets derived from it
(``credentials``). Validation checks a user's values with them and the renderer writes them, so
both use one reading of each format. They know nothing of the spec model.
"""
