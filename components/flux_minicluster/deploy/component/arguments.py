"""The component's arguments, each declared once: ``MiniClusterArgs``.

A field of ``MiniClusterArgs`` is an argument: its name, its Python type (what Python programs
type-check against) and, in the docstring under it, its description. Its ``declaring.Arg``
metadata says the rest: its check, the type and description other languages see where they
differ, and where the stack config takes it. From these follow:

* the checks ``prepare`` runs before anything is registered (``problems``);
* the inputs other languages see (``multilanguage.MiniClusterInputs``, and from it
  ``components/schema.json``);
* the stack config's keys that are arguments (``stackconfig``), checked by the same checks.

A new argument is a field here, the code that uses it, and its tests.

No ``from __future__ import annotations`` in this module: the types only other languages see
(``BurstGroup``, ``Autoscale``) are read by Pulumi's analyzer as objects, not strings.
"""

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Final, TypedDict

import pulumi

from flux_minicluster.core.base.errors import Problem
from flux_minicluster.core.flux import certificate as certificates
from flux_minicluster.core.kube import kubeversion
from flux_minicluster.core.planning import autoscale as autoscaling
from flux_minicluster.core.render import fillins
from flux_minicluster.core.spec.definition import MiniClusterDefinition
from flux_minicluster.core.spec.models import MiniClusterSpec
from flux_minicluster.deploy.component import declaring, keygen
from flux_minicluster.deploy.component.awaiting import WAIT_MODES, Wait
from flux_minicluster.deploy.component.burstgroup import BurstGroupArgs
from flux_minicluster.deploy.component.declaring import Arg, Argument, Stack
from flux_minicluster.deploy.component.keygen import KeygenArgs

__all__ = [
    "ARGUMENTS",
    "SOURCE",
    "Autoscale",
    "BurstCluster",
    "BurstGroup",
    "MiniClusterArgs",
    "problems",
]

SOURCE: Final = "MiniClusterArgs"
"""Where a problem of an argument is said to be."""


# --- the types only other languages see ---------------------------------------------------------


class BurstCluster(TypedDict):
    name: str
    """A cluster's MiniCluster name."""
    size: int
    """Its maxSize: how many ranks it holds."""


class BurstGroup(TypedDict):
    lead_name: str
    lead_size: int
    lead_port: int
    clusters: list[BurstCluster]


class Autoscale(TypedDict, total=False):
    interval_seconds: int
    """How often the scaler reads the queue (default 10)."""
    idle_seconds: int
    """How long a rank runs nothing before it is given back (default 60)."""


# --- the checks -------------------------------------------------------------------------------


def _lead_address(value: Any) -> str | None:
    return fillins.lead_address_problem(value) if isinstance(value, str) else None


def _certificate(value: Any) -> str | None:
    if not isinstance(value, str):
        return None  # an Output: checked once known (deploytime)
    try:
        certificates.parse(fillins.normalize_certificate(value))
    except certificates.CertificateError as err:
        return str(err)
    return None


# --- the arguments ----------------------------------------------------------------------------


class MiniClusterArgs(TypedDict, total=False):
    """Arguments of a MiniCluster; only ``spec`` is required."""

    spec: Annotated[
        Mapping[str, Any] | str | Path | MiniClusterSpec | MiniClusterDefinition,
        Arg(
            required="the MiniCluster spec, a file path or a model",
            schema=dict[str, Any],
            schema_description="""The MiniCluster as the Flux Operator takes it: a whole document
            (apiVersion flux-framework.org/v1alpha2, kind MiniCluster, metadata, spec) or a bare
            spec, typed field by field (a v1alpha1 document is accepted too, untyped: cast it,
            e.g. ``as any`` in TypeScript). It must be known when the program runs (a literal, a
            config object or a file read with the language's own tools), because it is
            validated before anything is created.""",
        ),
    ]
    """The MiniCluster as the Flux Operator takes it: a whole ``flux-framework.org/v1alpha2``
    document or a bare spec (a dict, as from ``pulumi.Config().require_object``), the path of a
    YAML file holding one, a ``MiniClusterSpec`` model, or an already validated
    ``MiniClusterDefinition`` (whose name and namespace are then used as they are)."""

    namespace: Annotated[str, Arg(check=declaring.string)]
    """Namespace of every object (default: the document's metadata.namespace, else default)."""

    name: Annotated[str, Arg(check=declaring.string)]
    """MiniCluster name, overriding metadata.name; the Job, hostnames and Services derive from
    it. Default: metadata.name, else the component's resource name."""

    keygen: Annotated[
        KeygenArgs,
        Arg(check=keygen.ARGUMENTS_CHECK, schema=declaring.schema_object(KeygenArgs, "Keygen")),
    ]
    """How the curve certificate is generated when neither ``curve_cert`` nor the spec's
    ``flux.curveCert`` gives one."""

    curve_cert: Annotated[pulumi.Input[str], Arg(check=declaring.message(_certificate))]
    """The curve certificate to use (e.g. a root cluster's, from a StackReference); it wins over
    ``spec.flux.curveCert`` and keygen. It is checked with Flux's rules before it is deployed."""

    wait: Annotated[
        Wait,
        Arg(
            check=declaring.one_of(WAIT_MODES),
            schema=declaring.schema_enum(
                Wait,
                "Wait",
                "How long ``pulumi up`` waits for the MiniCluster.",
                none="Not at all.",
                ready="Until every broker pod of an ephemeral cluster is Ready (the default).",
                complete="Until the Job of an ephemeral cluster completes.",
            ),
            stack=Stack("minicluster", default="ready"),
        ),
    ]
    """How long ``pulumi up`` waits: ``ready`` (default) until every broker pod of an ephemeral
    cluster is Ready, ``complete`` until its Job completes, ``none`` not at all. A persistent
    cluster never completes and is never waited for."""

    lead_broker: Annotated[pulumi.Input[str], Arg(check=declaring.message(_lead_address))]
    """A bursted cluster's lead broker address (DNS name or IPv4), e.g. a root stack's output;
    it overrides ``spec.flux.bursting.leadBroker.address``. Without ``burst_group`` the spec must
    still declare ``leadBroker`` with the lead's ``name`` and ``size``, which shape the hostlist."""

    burst_group: Annotated[
        pulumi.Input[BurstGroupArgs],
        Arg(
            schema=pulumi.Input[BurstGroup],
            needs=("lead_broker", "the address of the lead the group joins"),
        ),
    ]
    """The bursting group this cluster joins, as its root publishes it (``lead_name``,
    ``lead_size``, ``lead_port``, ``clusters``), e.g. from a StackReference; needs
    ``lead_broker``. The rank order (broker.toml, the hostlist) is filled in from it once known,
    and the objects do not wait for it: a preview shows every one."""

    network_policy: Annotated[bool, Arg(stack=Stack("cluster", default=True))]
    """Whether to create the NetworkPolicies around the MiniCluster's pods (default true; a
    cluster whose CNI does not enforce them ignores them)."""

    lead_source_ranges: list[str]
    """A bursting root's: the addresses (CIDRs) its rank 0 admits the bursts from; every address
    when empty. Give the same ranges as the lead Service's loadBalancerSourceRanges."""

    # The docstring is the published schema's description (components/schema.json), kept as it
    # was: ``core.kubeversion`` is the module ``core.kube.kubeversion``.
    kube_version: Annotated[str, Arg(check=declaring.raising(kubeversion.parse))]
    """The Kubernetes release of the cluster (``"1.33"``, as ``helm template --kube-version``):
    the Job carries only the fields that release serves (``core.kubeversion``: the success
    policy, the pod replacement and failure policies, the retry budget per index). Default 1.34
    (``core.kubeversion.DEFAULT``); releases older than 1.25 are refused."""

    queue: Annotated[
        str,
        Arg(
            schema_description="The Kueue LocalQueue that admits the Job (created suspended, "
            "labelled for the queue).",
            stack=Stack("minicluster"),
        ),
    ]
    """The Kueue LocalQueue (in the MiniCluster's namespace) that admits the Job: it is created
    suspended with the label ``kueue.x-k8s.io/queue-name``, and ``wait`` waits for admission
    first. The spec's ``jobLabels`` may name the queue instead."""

    managed_by: Annotated[
        str,
        Arg(
            schema_description="The Job's spec.managedBy (kueue.x-k8s.io/multikueue for "
            "MultiKueue).",
            stack=Stack("minicluster"),
        ),
    ]
    """The Job's ``spec.managedBy`` (``kueue.x-k8s.io/multikueue`` for MultiKueue)."""

    wait_timeout: Annotated[
        int,
        Arg(
            check=declaring.positive_seconds,
            schema_description="Seconds `wait` may take, admission included, before the "
            "deployment fails.",
            stack=Stack("minicluster"),
        ),
    ]
    """Seconds ``wait`` may take before ``pulumi up`` fails (default: pulumi-kubernetes' 10
    minutes); for a queued MiniCluster, admission included."""

    autoscale: Annotated[
        bool | Mapping[str, int],
        Arg(
            check=declaring.raising(autoscaling.settings),
            schema=Autoscale,
            stack=Stack("minicluster", type=bool | dict[str, Any]),
        ),
    ]
    """An elastic MiniCluster: ``True`` or ``{"interval_seconds": 10, "idle_seconds": 60}``
    (camelCase accepted). Rank 0 then grows and shrinks its own Job between ``minSize`` (else
    ``size``) and ``maxSize`` from its Flux queue; Pulumi creates the Job at ``size`` and leaves
    its size to the scaler. It wins over the document's autoscale annotation."""


ARGUMENTS: Final[tuple[Argument, ...]] = declaring.declared(MiniClusterArgs)


def problems(args: Mapping[str, Any]) -> list[Problem]:
    """Every problem of the arguments that can be found before the spec is read."""
    return declaring.problems(ARGUMENTS, args)
