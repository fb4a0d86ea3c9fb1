"""The names a stack exports, said once for the program that exports them and all that read them.

A stack exports each output of its MiniCluster under the camelCase name of the component's
attribute (``job_name`` -> ``jobName``, ``stack_output_name``). A bursting root adds what its bursts
need to join (``ROOT_OUTPUTS``), and a burst names its root (``ROOT_STACK``). The program
(``deploy.program``), a burst's StackReference, the offline stack renderer, the policy rules over
a StackReference (``policy.stackref``) and the CLI all read these names from here.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "BURST_CLUSTERS",
    "CURVE_CERT",
    "CURVE_PUBLIC_KEY",
    "HOSTLIST",
    "LEAD_BROKER_ADDRESS",
    "LEAD_BROKER_HOST",
    "LEAD_BROKER_PORT",
    "LEAD_NAME",
    "LEAD_SIZE",
    "ROOT_OUTPUTS",
    "ROOT_STACK",
    "STACK_REFERENCE_TYPE",
    "stack_output_name",
]


def stack_output_name(attribute: str) -> str:
    """The stack output a component output is exported as: ``job_name`` -> ``jobName``."""
    head, *rest = attribute.split("_")
    return head + "".join(part.title() for part in rest)


# A MiniCluster's own outputs, as a stack exports them (deploy.published.OUTPUTS has them all).
HOSTLIST: Final = stack_output_name("hostlist")
"""Every broker host in rank order, e.g. ``flux-root-[0-1],eks-burst-[0-1]``."""
LEAD_BROKER_HOST: Final = stack_output_name("lead_broker_host")
"""Rank 0's name inside the cluster, or the address of the lead a burst joins."""
CURVE_PUBLIC_KEY: Final = stack_output_name("curve_public_key")
"""The public key of the CURVE certificate (not secret)."""
CURVE_CERT: Final = stack_output_name("curve_cert")
"""The certificate itself, a secret; a root exports it for its bursts, a burst does not."""

# What a bursting root adds for the clusters that burst to it.
LEAD_BROKER_ADDRESS: Final = "leadBrokerAddress"
"""The address the bursts dial: their rank 0 in place of the root's."""
LEAD_BROKER_PORT: Final = "leadBrokerPort"
"""The port the root's rank 0 is reached on from outside its cluster."""
LEAD_NAME: Final = "leadName"
"""The root MiniCluster's name: the burst group's name."""
LEAD_SIZE: Final = "leadSize"
"""The root's maxSize: how many ranks it holds before the burst clusters."""
BURST_CLUSTERS: Final = "burstClusters"
"""Every cluster the root bursts to, in rank order, as ``{name, size}``."""
ROOT_OUTPUTS: Final = (
    LEAD_BROKER_ADDRESS,
    LEAD_BROKER_PORT,
    LEAD_NAME,
    LEAD_SIZE,
    BURST_CLUSTERS,
    CURVE_CERT,
)
"""Every output a burst stack reads from its root through a StackReference."""

STACK_REFERENCE_TYPE: Final = "pulumi:pulumi:StackReference"
"""Pulumi's resource type of a StackReference, through which a burst reads these outputs."""

# What a burst adds.
ROOT_STACK: Final = "rootStack"
"""The root stack a burst joins (``organization/<project>/<stack>``)."""
