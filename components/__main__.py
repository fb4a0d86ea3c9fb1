"""The component package's entry point: Pulumi runs ``python components/`` to host MiniCluster.

Run as a directory, this folder is first on ``sys.path``, so ``flux_minicluster`` is imported
from the source beside this file; its dependencies come from requirements.txt.
"""

from flux_minicluster.deploy.component.multilanguage import serve

if __name__ == "__main__":
    serve()
