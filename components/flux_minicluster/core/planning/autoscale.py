"""An elastic MiniCluster without an operator: the settings of the scaler rank 0 runs.

A MiniCluster opts in with the ``minicluster.flux-framework.org/autoscale`` annotation on its
document (``"true"`` for the defaults, or a JSON object), which the component argument
``autoscale`` and the stack config ``flux-minicluster:minicluster.autoscale`` set too. The scaler
(``core/inpod/scaler.py``, started by rank 0's entrypoint beside the broker) then sets its own Job's
``parallelism`` and ``completions`` between the bounds the spec already has:

* the lower bound is ``minSize`` (else ``size``), the upper ``maxSize``: Flux knows the ranks up
  to ``maxSize`` (broker.toml's hosts cover it), so a grown Job's brokers join the instance, and
  there must be room to move between the two;
* ``intervalSeconds``: how often it looks at the queue; ``idleSeconds``: how long a rank runs
  nothing before it is drained and given back.

Flux's scheduler must let a job wait for nodes that are not up: ``sched-simple`` does, while
Fluxion 0.54 refuses such a job as unsatisfiable (``alloc denied due to type="unsatisfiable"``,
observed with a 4-node job on a 2-of-4 instance), so no job would ever wait for the scaler. So
autoscale requires ``flux.scheduler.simple``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Final

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel

from flux_minicluster.core.base.errors import Problem, SpecError, key_path
from flux_minicluster.core.kube import kubeversion
from flux_minicluster.core.kube.labels import AUTOSCALE_ANNOTATION
from flux_minicluster.core.spec.definition import MiniClusterDefinition

__all__ = [
    "ANNOTATION_PATH",
    "CA_FILE",
    "FIELD_MANAGER",
    "SCALER_KEY",
    "TOKEN_DIR",
    "TOKEN_FILE",
    "TOKEN_SECONDS",
    "TOKEN_VOLUME",
    "Autoscale",
    "AutoscaleSettings",
    "account_name",
    "annotation_value",
    "of",
    "settings",
]

ANNOTATION_PATH: Final = key_path("metadata.annotations", AUTOSCALE_ANNOTATION)
# The projected service-account token's lifetime: the shortest the API server accepts (the
# kubelet renews it at 80%, and the scaler reads the file before every request).
TOKEN_SECONDS: Final = 600
# The field manager the scaler's patches are recorded under (``managedFields``).
FIELD_MANAGER: Final = "flux-minicluster-autoscaler"
# Where the Flux container finds the token, the cluster's CA and its namespace (a projected
# volume), and the scaler's key in the entrypoint ConfigMap.
TOKEN_VOLUME: Final = "autoscaler-token"
TOKEN_DIR: Final = "/var/run/secrets/flux-minicluster/autoscaler"
TOKEN_FILE: Final = "token"
CA_FILE: Final = "ca.crt"
SCALER_KEY: Final = "autoscale.py"


class AutoscaleSettings(BaseModel):
    """What a user writes: ``{"intervalSeconds": 10, "idleSeconds": 60}`` (both optional)."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", strict=True, frozen=True
    )

    interval_seconds: Annotated[int, Field(ge=1, le=3600)] = 10
    """How often the scaler reads the queue and the ranks."""
    idle_seconds: Annotated[int, Field(ge=0, le=86400)] = 60
    """How long a rank must run nothing before it is drained and given back."""


@dataclass(frozen=True)
class Autoscale:
    """The scaler of one MiniCluster, as the renderer needs it."""

    min_size: int
    max_size: int
    interval_seconds: int
    idle_seconds: int
    account: str
    """The ServiceAccount, Role and RoleBinding name (``<name>-autoscaler``)."""
    job: str
    """The one Job the Role lets the scaler get and patch."""


def account_name(cluster: str) -> str:
    """The scaler's ServiceAccount, Role and RoleBinding: ``<name>-autoscaler``."""
    return f"{cluster}-autoscaler"


def settings(value: Any, where: str) -> AutoscaleSettings | None:
    """Settings from what a user wrote at ``where``: ``true``/``false`` (or those strings), an
    object, or (an annotation) that object as JSON text. None when autoscale is off."""
    if isinstance(value, str):
        text = value.strip()
        if text in ("true", "false"):
            value = text == "true"
        else:
            try:
                value = json.loads(text)
            except ValueError:
                raise SpecError(
                    Problem(
                        where,
                        'must be "true", "false" or a JSON object, e.g. '
                        '{"intervalSeconds": 10, "idleSeconds": 60}',
                    )
                ) from None
    if value is None or value is False:
        return None
    if value is True:
        return AutoscaleSettings()
    if not isinstance(value, Mapping):
        raise SpecError(
            Problem(where, f"must be true, false or an object, got {type(value).__name__}")
        )
    # Numbers from another language's program arrive as floats (protobuf's one number type).
    given = {
        key: int(item) if isinstance(item, float) and item.is_integer() else item
        for key, item in value.items()
    }
    try:
        return AutoscaleSettings.model_validate(given)
    except ValidationError as err:
        raise SpecError(
            [
                Problem(
                    ".".join([where, *(str(p) for p in e["loc"])]),
                    e["msg"]
                    if e["type"] != "extra_forbidden"
                    else "unknown field; allowed: intervalSeconds, idleSeconds",
                )
                for e in err.errors()
            ]
        ) from None


def annotation_value(chosen: AutoscaleSettings) -> str:
    """The annotation's text for ``chosen`` (how the component argument and the stack config
    reach the definition, the one place the plan reads)."""
    return json.dumps(chosen.model_dump(by_alias=True), sort_keys=True, separators=(",", ":"))


def of(
    definition: MiniClusterDefinition, version: kubeversion.KubeVersion = kubeversion.DEFAULT
) -> Autoscale | None:
    """The scaler a definition asks for, or None; ``SpecError`` naming the field when the spec
    or the target release (``version``) leaves it no room or no way to work."""
    raw = definition.annotations.get(AUTOSCALE_ANNOTATION)
    chosen = settings(raw, ANNOTATION_PATH) if raw is not None else None
    if chosen is None:
        return None
    spec = definition.spec
    lower = spec.min_size or spec.size
    problems: list[Problem] = []
    if spec.max_size <= lower:
        bound = "minSize" if spec.min_size else "size"
        problems.append(
            Problem(
                "spec.maxSize",
                f"autoscale needs room to move: maxSize ({spec.max_size}) must be above "
                f"{bound} ({lower}); brokers exist only for ranks below maxSize",
            )
        )
    if not spec.flux.scheduler.simple:
        problems.append(
            Problem(
                "spec.flux.scheduler.simple",
                "autoscale needs true: Fluxion refuses a job that needs more nodes than are up "
                "as unsatisfiable, so no job would wait for the Job to grow",
            )
        )
    bursting = spec.flux.bursting
    if bursting.lead_broker is not None or bursting.clusters or bursting.hostlist:
        problems.append(
            Problem(
                "spec.flux.bursting",
                "autoscale sizes a standalone MiniCluster; a bursting group's ranks span clusters",
            )
        )
    if spec.pod.service_account_name:
        problems.append(
            Problem(
                "spec.pod.serviceAccountName",
                f"autoscale runs as its own service account ({account_name(definition.name)}); "
                "leave this unset",
            )
        )
    if not kubeversion.serves(version, kubeversion.JobField.ELASTIC_INDEXED):
        since = kubeversion.JOB_FIELDS[kubeversion.JobField.ELASTIC_INDEXED].rendered_from
        problems.append(
            Problem(
                "kube_version",
                f"autoscale resizes its running Job (completions with parallelism), which "
                f"Kubernetes {version} does not allow (elastic Indexed Jobs, taken from {since}): "
                "name a newer release or leave autoscale off",
            )
        )
    if problems:
        raise SpecError(problems)
    return Autoscale(
        min_size=lower,
        max_size=spec.max_size,
        interval_seconds=chosen.interval_seconds,
        idle_seconds=chosen.idle_seconds,
        account=account_name(definition.name),
        job=definition.name,
    )
