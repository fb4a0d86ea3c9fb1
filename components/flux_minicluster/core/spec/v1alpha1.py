"""The older ``flux-framework.org/v1alpha1`` MiniCluster, converted into the one internal model.

People still hold v1alpha1 specs, so a v1alpha1 document is read with its own schema (every
field of the seed's CRD, with its defaults: ``logging.strict`` true, ``network.headlessName``
``flux-service``, ``fluxRestful`` on branch ``main`` and port 5000, volumes of class ``hostpath``
and 5Gi, ...) and converted, as an API server's conversion webhook would, into the model a
v1alpha2 document becomes. What v1alpha1 has that v1alpha2 lacks (operator-made volumes, users,
the RESTful server, Flux from the application image at ``installRoot``, a Flux user, cores,
diagnostics) are features of that one model, rendered by the same renderer.

Fields that moved are converted (``preCommand`` -> ``commands.pre``, ``fluxOptionFlags`` ->
``flux.optionFlags``, ``fluxLogLevel`` -> ``flux.logLevel``, ``existingVolumes`` -> ``volumes``,
``test`` -> ``logging.quiet``, a flat ``postStartExec`` -> ``lifeCycle.postStartExec``). Two
things the operator's API server did silently are warnings here: it pruned unknown fields (the
operator's own samples carry a ``workdir`` typo), and ``localDeploy`` switched a volume that only
the operator itself used. An unnamed sidecar gets the early operator's name, ``<name>-<index>``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel, to_snake

from flux_minicluster.core.base.errors import MAX_REPORTED, Problem, key_path, unknown_key
from flux_minicluster.core.spec.models import DEFAULT_INSTALL_ROOT

__all__ = ["DEFAULT_HEADLESS_NAME", "Conversion", "convert"]

DEFAULT_HEADLESS_NAME: Final = "flux-service"


class _V1(BaseModel):
    """A v1alpha1 model: its own names and defaults; unknown fields kept for a warning."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="allow", strict=True
    )


class _VolumeRef(_V1):
    path: str | None = None
    read_only: bool = False


class _ExistingVolume(_V1):
    path: str | None = None
    claim_name: str | None = None
    config_map_name: str | None = None
    items: dict[str, str] = Field(default_factory=dict)
    secret_name: str | None = None
    read_only: bool = False


class _LifeCycle(_V1):
    post_start_exec: str | None = None
    pre_stop_exec: str | None = None


class _SecurityContext(_V1):
    privileged: bool = False
    add_capabilities: list[str] = Field(default_factory=list)


class _Commands(_V1):
    init: str | None = None
    pre: str | None = None
    post: str | None = None
    broker_pre: str | None = None
    worker_pre: str | None = None
    prefix: str | None = None
    run_flux_as_root: bool = False


class _Container(_V1):
    image: str = "ghcr.io/rse-ops/accounting:app-latest"
    name: str | None = None
    cores: int | None = None
    working_dir: str | None = None
    diagnostics: bool = False
    flux_user: dict[str, Any] | None = None
    ports: list[int] = Field(default_factory=list)
    environment: dict[str, str] = Field(default_factory=dict)
    secrets: dict[str, Any] = Field(default_factory=dict)
    image_pull_secret: str | None = None
    command: str | None = None
    launcher: bool = False
    batch: bool = False
    batch_raw: bool = False
    logs: str | None = None
    pull_always: bool = False
    run_flux: bool | None = None
    volumes: dict[str, _VolumeRef] = Field(default_factory=dict)
    existing_volumes: dict[str, _ExistingVolume] = Field(default_factory=dict)
    pre_command: str | None = None
    flux_option_flags: str | None = None
    flux_log_level: int | None = None
    life_cycle: _LifeCycle | None = None
    post_start_exec: str | None = None  # the early API's flat hook
    resources: dict[str, Any] | None = None
    commands: _Commands = Field(default_factory=_Commands)
    security_context: _SecurityContext | None = None


class _Logging(_V1):
    quiet: bool = False
    strict: bool = True
    debug: bool = False
    zeromq: bool = False
    timed: bool = False


class _Flux(_V1):
    install_root: str = DEFAULT_INSTALL_ROOT
    wrap: str | None = None
    connect_timeout: str = "5s"
    option_flags: str | None = None
    minimal_service: bool = False
    log_level: int = 6
    curve_cert: str | None = None
    curve_cert_secret: str | None = None
    scheduler: dict[str, Any] = Field(default_factory=dict)
    munge_secret: str | None = None
    bursting: dict[str, Any] = Field(default_factory=dict)
    broker_config: str | None = None


class _Spec(_V1):
    containers: list[_Container]
    services: list[_Container] = Field(default_factory=list)
    network: dict[str, Any] = Field(default_factory=dict)
    users: list[dict[str, Any]] = Field(default_factory=list)
    job_labels: dict[str, str] = Field(default_factory=dict)
    interactive: bool = False
    flux: _Flux = Field(default_factory=_Flux)
    volumes: dict[str, dict[str, Any]] = Field(default_factory=dict)
    logging: _Logging = Field(default_factory=_Logging)
    archive: dict[str, Any] | None = None
    share_process_namespace: bool = False
    flux_restful: dict[str, Any] = Field(default_factory=dict)
    cleanup: bool = False
    size: int = 1
    max_size: int = 0
    tasks: int = 1
    deadline_seconds: int = 31_500_000
    pod: dict[str, Any] = Field(default_factory=dict)
    local_deploy: bool = False
    test: bool = False
    diagnostics: bool = False


@dataclass(frozen=True)
class Conversion:
    """A v1alpha1 spec converted: the internal model's input, the warnings, and where the
    converted fields came from, so that a problem names the field the user wrote."""

    data: dict[str, Any]
    warnings: list[Problem]
    origins: dict[str, str]
    """Converted path -> the v1alpha1 path it came from (``spec.flux.logLevel`` ->
    ``spec.containers[0].fluxLogLevel``); a problem at or under a key is renamed."""


def convert(spec: Mapping[str, Any], name: str) -> Conversion:
    """A v1alpha1 spec as the internal model's input (camelCase), with its warnings and the
    origins of renamed fields.

    ``name`` is the MiniCluster's (it names unnamed sidecars). Field problems of the v1alpha1
    document itself (a string where a number belongs) raise pydantic's ``ValidationError``,
    which the loader reports with field paths like any other.
    """
    parsed = _Spec.model_validate(dict(spec))
    warnings = list(_unknown(parsed, "spec"))
    if parsed.local_deploy:
        warnings.append(
            Problem(
                "spec.localDeploy",
                "has no effect: it chose the operator's own internal volume, which does not "
                "exist without the operator (use spec.volumes for data)",
            )
        )
    out: dict[str, Any] = {
        "size": parsed.size,
        "tasks": parsed.tasks,
        "deadlineSeconds": parsed.deadline_seconds,
        "interactive": parsed.interactive,
        "cleanup": parsed.cleanup,
        "shareProcessNamespace": parsed.share_process_namespace,
        "network": {"headlessName": DEFAULT_HEADLESS_NAME, **parsed.network},
        "logging": {**_fields(parsed.logging), "quiet": parsed.logging.quiet or parsed.test},
        "fluxRestful": dict(parsed.flux_restful),
    }
    if parsed.max_size:
        out["maxSize"] = parsed.max_size
    for key in ("jobLabels", "users", "volumes", "archive", "pod"):
        value = getattr(parsed, to_snake(key))
        if value:
            out[key] = value
    # runFlux: the later API marks the Flux container (the others default to false); the early
    # one defaulted every container to true and marked the others false.
    marked = any(c.run_flux for c in parsed.containers)
    for c in parsed.containers:
        if c.run_flux is None:
            c.run_flux = not marked
    containers = [
        _container(c, i, name, parsed.diagnostics) for i, c in enumerate(parsed.containers)
    ]
    out["containers"] = containers
    if parsed.services:
        out["services"] = [_container(c, i, name, False) for i, c in enumerate(parsed.services)]
    flux_index = next((i for i, c in enumerate(parsed.containers) if c.run_flux), None)
    runner = parsed.containers[flux_index] if flux_index is not None else None
    out["flux"] = _flux(parsed.flux, runner)
    return Conversion(out, warnings, _origins(parsed, flux_index))


def _origins(parsed: _Spec, flux_index: int | None) -> dict[str, str]:
    """Where each field the conversion moved or renamed sat in the v1alpha1 document."""
    out: dict[str, str] = {}
    for group, items in (("containers", parsed.containers), ("services", parsed.services)):
        for i, c in enumerate(items):
            base = f"spec.{group}[{i}]"
            for key in c.existing_volumes:
                out[key_path(f"{base}.volumes", key)] = key_path(f"{base}.existingVolumes", key)
            if c.pre_command and not c.commands.pre:
                out[f"{base}.commands.pre"] = f"{base}.preCommand"
            if c.post_start_exec and not (c.life_cycle and c.life_cycle.post_start_exec):
                out[f"{base}.lifeCycle.postStartExec"] = f"{base}.postStartExec"
    if flux_index is not None:
        runner = parsed.containers[flux_index]
        if runner.flux_log_level is not None:
            out["spec.flux.logLevel"] = f"spec.containers[{flux_index}].fluxLogLevel"
        if parsed.flux.option_flags is None and runner.flux_option_flags:
            out["spec.flux.optionFlags"] = f"spec.containers[{flux_index}].fluxOptionFlags"
    if parsed.test and not parsed.logging.quiet:
        out["spec.logging.quiet"] = "spec.test"
    return out


def _container(c: _Container, index: int, name: str, spec_diagnostics: bool) -> dict[str, Any]:
    out: dict[str, Any] = {
        "image": c.image,
        "name": c.name or (None if c.run_flux else f"{name}-{index}"),
        "workingDir": c.working_dir,
        "ports": c.ports,
        "environment": c.environment,
        "secrets": c.secrets,
        "imagePullSecret": c.image_pull_secret,
        "command": c.command,
        "launcher": c.launcher,
        "batch": c.batch,
        "batchRaw": c.batch_raw,
        "logs": c.logs,
        "pullAlways": c.pull_always,
        "runFlux": c.run_flux,
        "resources": c.resources,
        "cores": c.cores,
        "diagnostics": c.diagnostics or spec_diagnostics,
        # v1alpha1 ran the broker as a Flux user (flux, uid 1000) through sudo unless told to
        # run it as root; the image brings sudo, as v1alpha1 required.
        "fluxUser": (
            {"name": "flux", "uid": 1000, **(c.flux_user or {})}
            if c.run_flux and not c.commands.run_flux_as_root
            else None
        ),
    }
    commands = {k: v for k, v in _fields(c.commands).items() if v is not None}
    commands.pop("runFluxAsRoot", None)
    if c.commands.run_flux_as_root:
        commands["runFluxAsRoot"] = True
    pre = "\n".join(p for p in (c.pre_command, c.commands.pre) if p)
    if pre:
        commands["pre"] = pre
    out["commands"] = commands
    hooks = {k: v for k, v in _fields(c.life_cycle).items() if v} if c.life_cycle else {}
    if c.post_start_exec and "postStartExec" not in hooks:
        hooks["postStartExec"] = c.post_start_exec
    if hooks:
        out["lifeCycle"] = hooks
    if c.security_context is not None:
        context: dict[str, Any] = {}
        if c.security_context.privileged:
            context["privileged"] = True
        if c.security_context.add_capabilities:
            context["capabilities"] = {"add": list(c.security_context.add_capabilities)}
        out["securityContext"] = context
    volumes: dict[str, Any] = {}
    for key, ref in c.volumes.items():
        # A reference to spec.volumes.<key>: the loader turns it into that volume's claim.
        volumes[key] = {"path": ref.path, "readOnly": ref.read_only}
    for key, existing in c.existing_volumes.items():
        volumes[key] = {k: v for k, v in _fields(existing).items() if v not in (None, {}, False)}
        volumes[key]["path"] = existing.path
    if volumes:
        out["volumes"] = volumes
    return {k: v for k, v in out.items() if v not in (None, [], {}, False)} | {
        "runFlux": bool(c.run_flux)
    }


def _flux(flux: _Flux, runner: _Container | None) -> dict[str, Any]:
    out: dict[str, Any] = {
        # There is no flux view in v1alpha1: Flux comes from the application image.
        "container": {"disable": True, **({"image": runner.image} if runner else {})},
        "installRoot": flux.install_root,
        "connectTimeout": flux.connect_timeout,
        "minimalService": flux.minimal_service,
        "logLevel": flux.log_level,
    }
    option_flags = flux.option_flags or (runner.flux_option_flags if runner else None)
    if option_flags:
        out["optionFlags"] = option_flags
    if runner is not None and runner.flux_log_level is not None:
        out["logLevel"] = runner.flux_log_level
    for key in ("wrap", "curveCert", "curveCertSecret", "mungeSecret", "brokerConfig"):
        value = getattr(flux, to_snake(key))
        if value is not None:
            out[key] = value
    for key in ("scheduler", "bursting"):
        value = getattr(flux, key)
        if value:
            out[key] = value
    return out


def _fields(model: BaseModel) -> dict[str, Any]:
    """The model's declared fields by their camelCase names (unknown, pruned ones left out)."""
    return {
        field.alias or name: getattr(model, name)
        for name, field in type(model).model_fields.items()
    }


def _unknown(model: BaseModel, path: str) -> Iterator[Problem]:
    """Warnings for fields the v1alpha1 schema does not have (its API server pruned them).

    A did-you-mean for each of the first ``MAX_REPORTED`` keys of a model only: a guess costs
    about 0.1 ms, and 18,000 unknown keys made a 140 kB file take 1.9 s (found by `make fuzz`).
    """
    known = [f.alias or n for n, f in type(model).model_fields.items()]
    for i, key in enumerate(model.model_extra or {}):
        said = unknown_key(key, known) if i < MAX_REPORTED else "unknown field"
        yield Problem(
            f"{path}.{key}",
            said + " (ignored, as the operator's v1alpha1 API server dropped unknown fields)",
        )
    for name, field in type(model).model_fields.items():
        value = getattr(model, name)
        where = f"{path}.{field.alias or name}"
        if isinstance(value, BaseModel):
            yield from _unknown(value, where)
        elif isinstance(value, list):
            for i, item in enumerate(value):
                if isinstance(item, BaseModel):
                    yield from _unknown(item, f"{where}[{i}]")
        elif isinstance(value, dict):
            for key, item in value.items():
                if isinstance(item, BaseModel):
                    yield from _unknown(item, f"{where}.{key}")
