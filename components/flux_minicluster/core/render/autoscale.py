"""What an elastic MiniCluster adds: the scaler's identity, its one permission, its token.

Least privilege, and nothing for a MiniCluster without autoscale (its pods keep
``automountServiceAccountToken: false`` and no service account of ours):

* a ServiceAccount ``<name>-autoscaler``, and a Role of the same name allowing ``get`` and
  ``patch`` on ``jobs`` of ``batch`` with ``resourceNames: [<name>]``: its own Job, nothing else
  (no list, no watch, no pods, no other Job), bound by a RoleBinding in the MiniCluster's
  namespace;
* the broker pods run as that account with ``automountServiceAccountToken`` still false: the
  token reaches only the Flux container (where rank 0 runs the scaler), as a projected volume
  with a short-lived token (``TOKEN_SECONDS``, the shortest the API server grants; the kubelet
  renews it), the cluster's CA and the namespace. A pod template is the same for every index, so
  worker pods mount it too, though only rank 0 uses it; sidecars and the init container do not.
"""

from __future__ import annotations

from typing import Any, Final

from flux_minicluster.core.planning.autoscale import (
    CA_FILE,
    TOKEN_DIR,
    TOKEN_FILE,
    TOKEN_SECONDS,
    TOKEN_VOLUME,
    Autoscale,
)
from flux_minicluster.core.planning.plan import MiniClusterPlan
from flux_minicluster.core.render import meta

__all__ = ["objects", "with_token"]

# Every namespace has it (the root CA publisher): the CA that signed the API server's certificate.
ROOT_CA_CONFIGMAP: Final = "kube-root-ca.crt"


def objects(plan: MiniClusterPlan, scaler: Autoscale) -> tuple[dict[str, Any], ...]:
    """The ServiceAccount, the Role and the RoleBinding, in creation order."""
    account = {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": meta.metadata(plan, scaler.account),
        # The token is requested for the one container that needs it, never automounted.
        "automountServiceAccountToken": False,
    }
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": meta.metadata(plan, scaler.account),
        "rules": [
            {
                "apiGroups": ["batch"],
                "resources": ["jobs"],
                "resourceNames": [scaler.job],
                "verbs": ["get", "patch"],
            }
        ],
    }
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": meta.metadata(plan, scaler.account),
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "Role",
            "name": scaler.account,
        },
        "subjects": [
            {"kind": "ServiceAccount", "name": scaler.account, "namespace": plan.namespace}
        ],
    }
    return account, role, binding


def with_token(scaler: Autoscale, pod_spec: dict[str, Any], flux_index: int) -> dict[str, Any]:
    """``pod_spec`` running as the scaler's account, its token mounted in the Flux container."""
    volume = {
        "name": TOKEN_VOLUME,
        "projected": {
            "sources": [
                {"serviceAccountToken": {"path": TOKEN_FILE, "expirationSeconds": TOKEN_SECONDS}},
                {
                    "configMap": {
                        "name": ROOT_CA_CONFIGMAP,
                        "items": [{"key": CA_FILE, "path": CA_FILE}],
                    }
                },
                {
                    "downwardAPI": {
                        "items": [
                            {"path": "namespace", "fieldRef": {"fieldPath": "metadata.namespace"}}
                        ]
                    }
                },
            ],
        },
    }
    containers = list(pod_spec["containers"])
    flux = dict(containers[flux_index])
    flux["volumeMounts"] = [
        *flux.get("volumeMounts", []),
        {"name": TOKEN_VOLUME, "mountPath": TOKEN_DIR, "readOnly": True},
    ]
    containers[flux_index] = flux
    out: dict[str, Any] = {}
    for key, value in pod_spec.items():
        if key == "automountServiceAccountToken":
            out["serviceAccountName"] = scaler.account
        out[key] = value
    out["containers"] = containers
    out["volumes"] = [*pod_spec["volumes"], volume]
    return out
