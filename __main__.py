"""The Pulumi program (`pulumi up -s <stack>`): see flux_minicluster/deploy/program.py."""

from pathlib import Path

from flux_minicluster.deploy.program import main

main(Path(__file__).resolve().parent)
