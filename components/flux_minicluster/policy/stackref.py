"""A Pulumi StackReference as the rules see it: the root stack's outputs, as one manifest dict.

Under ``pulumi preview --policy-pack policies`` a burst stack holds none of its root's objects;
it knows the root only through its StackReference, a resource of type
``pulumi:pulumi:StackReference`` whose props are ``name`` (the root stack), ``outputs`` and
``secretOutputNames``. The rules work on manifest dicts, so the CrossGuard adapter turns that
resource into the dict ``stack_reference_manifest`` builds, and so can anything offline that has
the root's outputs (``minicluster check``, from a rendered root's ``outputs.json``)::

    {
        "kind": "StackReference",
        "metadata": {"name": "organization/flux-minicluster/gke-root"},
        "outputs": {"leadName": "flux-root", "hostlist": "flux-root-[0-1],...", ...},
    }

It has no ``apiVersion``: it is no Kubernetes object, is never applied and never read from a
manifest file, and rules that look for Kubernetes kinds pass it by. Which burst group a reference
belongs to is its ``leadName`` output, the root MiniCluster's name, which is also the value of
the burst-group label on every member's objects. The names of a stack's outputs are
``core.deployed.stackoutputs``'.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from flux_minicluster.core.deployed import stackoutputs as so
from flux_minicluster.policy import manifest as mf
from flux_minicluster.policy.model import Manifest

__all__ = [
    "KIND",
    "is_stack_reference",
    "lead_name",
    "outputs_of",
    "stack_reference_manifest",
]

KIND: Final = "StackReference"
"""The ``kind`` of the manifest that stands for a StackReference."""


def stack_reference_manifest(stack_name: str, outputs: Mapping[str, Any]) -> Manifest:
    """The manifest the policy rules read for a StackReference to ``stack_name``.

    ``stack_name`` is the referenced stack as a StackReference names it
    (``organization/flux-minicluster/gke-root``); ``outputs`` are its stack outputs by name, as
    ``pulumi stack output --json --show-secrets`` prints them or as ``outputs.json`` of an offline
    rendering holds them: plain JSON values, secrets (``curveCert``) as their plain text. Put the
    result among the burst stack's objects and ``burst-group-consistent`` compares that stack's
    certificate and hostlist with the root's outputs; without it, the rule can only compare
    objects that are all in the same set.

    ``outputs`` is kept as given, not copied or read, so that values Pulumi does not know yet
    (under preview) are only ever read by a rule that needs them.
    """
    return {"kind": KIND, "metadata": {"name": stack_name}, "outputs": outputs}


def is_stack_reference(m: Manifest) -> bool:
    """Whether ``m`` is the manifest of a StackReference (see ``stack_reference_manifest``)."""
    return mf.kind(m) == KIND and "apiVersion" not in m


def outputs_of(m: Manifest) -> dict[str, Any]:
    """A StackReference's outputs; ``{}`` when it has none."""
    return mf.as_dict(m.get("outputs"))


def lead_name(m: Manifest) -> str | None:
    """The burst group a StackReference leads: its ``leadName`` output, if it is a root's."""
    value = outputs_of(m).get(so.LEAD_NAME)
    return value if isinstance(value, str) and value else None
