"""The Pulumi program (`pulumi up -s <stack>`): see components/deploy/program.py."""

from components.deploy.program import main

main()
