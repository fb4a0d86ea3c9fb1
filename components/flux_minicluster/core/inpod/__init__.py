"""What runs inside a MiniCluster's pods rather than where the package runs.

``scaler`` is shipped verbatim into the entrypoint ConfigMap (``render.scripts.scaler_source``
reads this file's text) and run by rank 0 with the image's Python. So a module here imports the
standard library only, never the package (the ``inpod-standard-library`` contract holds it).
"""
