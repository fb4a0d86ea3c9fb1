"""The Pulumi program (`pulumi up -s <stack>`): see flux_minicluster/deploy/program.py."""

from flux_minicluster.deploy.program import main

main()
