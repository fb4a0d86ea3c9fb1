"""The curve certificate of a MiniCluster, made by a ``flux keygen`` Command.

Every broker of a MiniCluster (and of a bursting group) must hold the same CURVE certificate, and
the cluster's lifetime is longer than one ``pulumi up``. So the certificate is a resource: a
``pulumi_command`` ``local.Command`` whose ``create`` script prints one certificate, which Pulumi
then keeps (secret) in state. It runs once; later runs, on this machine or any other, reuse the
stored stdout, and only a new ``rotation`` value (the Command's trigger) makes a new certificate.
That is why the inputs that legitimately differ between machines (the script text, the
environment with the interpreter's path, the interpreter) are in ``ignore_changes``.

The design note generated the certificate with ``flux keygen`` in a one-off pod of the flux view
image; that is the ``kubectl`` strategy. ``flux`` uses a local Flux, ``container`` docker or
podman, ``builtin`` this package's pyzmq generator (identical format), and ``auto`` takes the first
of those that is available and works, deciding when the script runs, not when the program runs.

The certificate holds the secret key every broker trusts, so it never passes through a log: the
one-off pod or container only sleeps and ``flux keygen`` runs in an exec session (a main
process's output is the container log the kubelet or runtime keeps, readable by ``kubectl logs``
and any log shipper; an exec session's output only streams back). ``auto`` tries what runs on this
machine first (flux, builtin), so by default the key never leaves it; a container or a pod comes
only when neither works.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Final, Literal, TypedDict, get_args

import pulumi
from pulumi_command import local

from flux_minicluster.core.base import templating
from flux_minicluster.core.base.errors import SpecError
from flux_minicluster.core.kube.limits import MAX_LABEL_LENGTH
from flux_minicluster.core.planning.plan import MiniClusterPlan
from flux_minicluster.deploy.component import declaring
from flux_minicluster.deploy.component.declaring import Arg, schema_enum

__all__ = [
    "CONTAINER_RUNTIMES",
    "STRATEGIES",
    "ContainerRuntime",
    "KeygenArgs",
    "KeygenSettings",
    "Strategy",
    "command_environment",
    "keygen_command",
    "render_script",
    "settings_from_args",
]

Strategy = Literal["auto", "flux", "kubectl", "container", "builtin"]
ContainerRuntime = Literal["docker", "podman"]
STRATEGIES: Final[tuple[str, ...]] = get_args(Strategy)
CONTAINER_RUNTIMES: Final[tuple[str, ...]] = get_args(ContainerRuntime)

TEMPLATE: Final = "keygen.sh.j2"
INTERPRETER: Final = ("bash", "-c")
# Inputs that differ between machines or releases of this package, never a reason for a new
# certificate: the rotation trigger is the only way to replace it.
MACHINE_DEPENDENT_INPUTS: Final = ("create", "environment", "interpreter")
# The keygen pod is <prefix>-<8 hex digits>, with <prefix> = <name>-keygen, shortened to fit.
_POD_SUFFIX: Final = "-keygen-12345678"


def _rotation(value: Any) -> str | None:
    return None if isinstance(value, str) else "must be a string"


class KeygenArgs(TypedDict, total=False):
    """How the curve certificate is generated when none is supplied."""

    strategy: Annotated[
        Strategy,
        Arg(
            check=declaring.one_of(STRATEGIES),
            schema=schema_enum(
                Strategy,
                "KeygenStrategy",
                "Where ``flux keygen`` runs when the component generates the curve certificate.",
            ),
        ),
    ]
    """auto (default): the first of flux, builtin, container, kubectl that is available and works
    when the Command runs; flux: a local ``flux keygen``; builtin: this package's pyzmq generator
    (``python -m flux_minicluster.core.keygen``), which writes the identical format; container:
    ``flux keygen`` in an exec session of a one-off docker or podman container of the flux view
    image; kubectl: the same in a one-off pod. The certificate never passes through a container
    log."""

    rotation: Annotated[str, Arg(check=declaring.message(_rotation))]
    """Any string; changing it generates a new certificate (it is the Command's trigger). Every
    broker must be restarted to pick a new certificate up, and bursted clusters must get it too."""

    kubeconfig: Annotated[str, Arg(check=declaring.non_empty_string)]
    """Path of the kubeconfig the kubectl strategy uses (default: kubectl's own default)."""

    context: Annotated[str, Arg(check=declaring.non_empty_string)]
    """kubeconfig context the kubectl strategy uses (default: the current context)."""

    image: Annotated[str, Arg(check=declaring.non_empty_string)]
    """Image with Flux in /opt/view for the kubectl and container strategies (default: the spec's
    flux view image, ``spec.flux.container.image``)."""

    container_runtime: Annotated[
        ContainerRuntime,
        Arg(
            check=declaring.one_of(CONTAINER_RUNTIMES, optional=True),
            schema=schema_enum(
                ContainerRuntime,
                "ContainerRuntime",
                "The container runtime of the ``container`` keygen strategy.",
            ),
        ),
    ]
    """docker or podman for the container strategy (default: the first one on PATH)."""


ARGUMENTS_CHECK: Final = declaring.fields(KeygenArgs)
"""The check of ``MiniClusterArgs.keygen``: a mapping of ``KeygenArgs``, each checked."""


@dataclass(frozen=True)
class KeygenSettings:
    """Validated keygen arguments plus the facts of the cluster the certificate is for."""

    strategy: Strategy
    rotation: str
    cert_name: str
    hostname: str
    namespace: str
    image: str
    pod_prefix: str
    kubeconfig: str | None = None
    context: str | None = None
    container_runtime: ContainerRuntime | None = None

    @property
    def kubectl_args(self) -> list[str]:
        args = []
        if self.kubeconfig is not None:
            args.append(f"--kubeconfig={self.kubeconfig}")
        if self.context is not None:
            args.append(f"--context={self.context}")
        return args


def settings_from_args(
    args: Mapping[str, Any] | None, plan: MiniClusterPlan, *, where: str = "keygen"
) -> KeygenSettings:
    """Check ``MiniClusterArgs.keygen``; every problem is a SpecError naming the argument."""
    args = {} if args is None else args
    if problems := ARGUMENTS_CHECK(args, where):
        raise SpecError(problems, source="MiniClusterArgs")
    strategy = args.get("strategy", "auto")
    runtime = args.get("container_runtime")
    rotation = args.get("rotation", "")
    text = {key: args.get(key) for key in ("kubeconfig", "context", "image")}

    name = plan.name
    room = MAX_LABEL_LENGTH - len(_POD_SUFFIX)
    pod_prefix = f"{name}-keygen" if len(name) <= room else f"{name[:room].rstrip('-')}-keygen"
    return KeygenSettings(
        strategy=strategy,
        rotation=rotation,
        cert_name=name,
        hostname=plan.names.lead_host,
        namespace=plan.namespace,
        image=text["image"] or plan.spec.flux.container.image,
        pod_prefix=pod_prefix,
        kubeconfig=text["kubeconfig"],
        context=text["context"],
        container_runtime=runtime,
    )


def render_script(settings: KeygenSettings) -> str:
    """The Command's ``create`` script: deterministic, every value shell-quoted."""
    return templating.render(
        TEMPLATE,
        strategy=settings.strategy,
        cert_name=settings.cert_name,
        hostname=settings.hostname,
        image=settings.image,
        namespace=settings.namespace,
        pod_prefix=settings.pod_prefix,
        container_runtime=settings.container_runtime or "",
        kubectl_args=settings.kubectl_args,
    )


def command_environment() -> dict[str, str]:
    """PYTHON and PYTHONPATH for the builtin strategy: this interpreter and this package."""
    # the folder holding the package: flux_minicluster/deploy/component/keygen.py -> parents[3]
    root = str(Path(__file__).resolve().parents[3])
    existing = os.environ.get("PYTHONPATH")
    return {
        "PYTHON": sys.executable,
        "PYTHONPATH": root if not existing else os.pathsep.join((root, existing)),
    }


def keygen_command(
    resource_name: str, settings: KeygenSettings, *, opts: pulumi.ResourceOptions
) -> local.Command:
    """``<resource_name>-curve-keygen``: its stdout is the certificate, kept secret in state.

    ``opts`` carries the parent (the MiniCluster) and any dependencies; the options that keep
    the certificate secret and stable are added here.
    """
    return local.Command(
        f"{resource_name}-curve-keygen",
        create=render_script(settings),
        interpreter=list(INTERPRETER),
        environment=command_environment(),
        triggers=[settings.rotation],
        logging=local.Logging.NONE,
        # The previous stdout (the old certificate) must not reach the next run's environment.
        add_previous_output_in_env=False,
        opts=pulumi.ResourceOptions.merge(
            opts,
            pulumi.ResourceOptions(
                additional_secret_outputs=["stdout"],
                ignore_changes=list(MACHINE_DEPENDENT_INPUTS),
            ),
        ),
    )
