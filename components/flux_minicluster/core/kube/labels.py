"""Labels and annotations that tie rendered objects to their MiniCluster.

They are the contract between the renderer, the Pulumi layer and the policy rules: a rule finds
"the Job of MiniCluster X" or "the certificate's public key" through these keys alone, so the same
rules work on objects rendered offline, on Pulumi's resource props and on YAML from disk.
"""

from __future__ import annotations

from typing import Final

DOMAIN: Final = "minicluster.flux-framework.org"

# On every object we render.
NAME_LABEL: Final = "app.kubernetes.io/name"  # the operator's label, value = MiniCluster name
MANAGED_BY_LABEL: Final = "app.kubernetes.io/managed-by"
MANAGED_BY: Final = "flux-minicluster"
CLUSTER_LABEL: Final = f"{DOMAIN}/cluster"  # value = MiniCluster name
# On the entrypoint ConfigMap and the curve Secret of a cluster that is part of a bursting group:
# value = the lead (root) MiniCluster's name. Every member of the group must agree on the hostlist
# order and the certificate.
BURST_GROUP_LABEL: Final = f"{DOMAIN}/burst-group"

# The operator's pod labels, kept for users who select on them.
OPERATOR_POD_LABELS_APP: Final = ("app", "flux-operator")
HPA_SELECTOR_LABEL: Final = "hpa-selector"
# Set by the Job controller on every Indexed Job pod; rank 0 is index "0".
COMPLETION_INDEX_LABEL: Final = "batch.kubernetes.io/job-completion-index"
JOB_NAME_LABEL: Final = "job-name"

# On the Job.
MAX_SIZE_ANNOTATION: Final = f"{DOMAIN}/max-size"  # str(maxSize)
LIFECYCLE_ANNOTATION: Final = f"{DOMAIN}/lifecycle"  # "persistent" or "ephemeral"
ROLE_ANNOTATION: Final = f"{DOMAIN}/role"  # "standalone", "root" or "burst"
# Where rank 0 keeps the instance's content across its pods (core.spec.archive), when it does.
ARCHIVE_ANNOTATION: Final = f"{DOMAIN}/archive"

# On the curve Secret: the certificate's public key (not secret), so that checks can compare
# certificates across clusters without reading the secret key.
CURVE_PUBLIC_KEY_ANNOTATION: Final = f"{DOMAIN}/curve-public-key"

# On the Job's pod template: a digest of broker.toml and the hostlist, so that a change of rank
# order replaces the Job instead of leaving brokers on the old order.
BROKER_CONFIG_HASH_ANNOTATION: Final = f"{DOMAIN}/broker-config-hash"
# On the Job's pod template: a digest of the entrypoint scripts at any size within maxSize, so
# that a new command (or any other change of the scripts but a resize) replaces the Job instead
# of changing only the ConfigMap under brokers that started with the old scripts.
ENTRYPOINT_HASH_ANNOTATION: Final = f"{DOMAIN}/entrypoint-hash"

# On a MiniCluster document's metadata: "false" leaves its NetworkPolicy out (a cluster whose CNI
# enforces NetworkPolicy but where the MiniCluster must be reachable otherwise).
NETWORK_POLICY_ANNOTATION: Final = f"{DOMAIN}/network-policy"
# On a MiniCluster document's metadata: "true" or a JSON object turns on the scaler rank 0 runs
# (core/planning/autoscale.py reads it).
AUTOSCALE_ANNOTATION: Final = f"{DOMAIN}/autoscale"

# Pulumi await control (pulumi-kubernetes annotations).
SKIP_AWAIT_ANNOTATION: Final = "pulumi.com/skipAwait"
WAIT_FOR_ANNOTATION: Final = "pulumi.com/waitFor"
