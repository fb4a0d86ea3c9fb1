"""Entry point of the policy pack; wiring only.

Constructing ``PolicyPack`` starts the analyzer's gRPC server and blocks, so nothing here may be
imported by tests: the policies live in ``minicluster_policies`` and the rules in
``flux_minicluster.policy``, both importable on their own.
"""

from minicluster_policies import ALL
from pulumi_policy import EnforcementLevel, PolicyPack

PolicyPack(name="minicluster-policies", policies=ALL, enforcement_level=EnforcementLevel.ADVISORY)
