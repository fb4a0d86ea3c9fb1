"""The Pulumi program (`pulumi up -s <stack>`): see flux_minicluster/deploy/stack/program.py."""

from pathlib import Path

from flux_minicluster.deploy.stack.program import main

main(Path(__file__).resolve().parent)
