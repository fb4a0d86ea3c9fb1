"""What a user would write instead of the component: the same MiniCluster as a hand-written
pulumi-kubernetes program, the yardstick of ``benchmarks/e2e.py`` and ``benchmarks/run.py``.

A user moving off the Flux Operator without our package keeps the objects as YAML files (here
the ones ``minicluster render SPEC --curve-cert FILE -d DIR`` writes: the entrypoint ConfigMap
with its scripts, the curve Secret, the NetworkPolicy, the headless Service, the Indexed Job)
and declares each as its typed pulumi-kubernetes resource, after an explicit provider and the
namespace, with the same await the component uses: ``pulumi.com/waitFor`` on the Job, which a
rendered folder does not carry (kubectl awaits nothing), added here as a user would, makes
``pulumi up`` return once every pod is Ready (without it, pulumi-kubernetes would wait for a
persistent Job to complete, for ever). Nothing of ``flux_minicluster`` is imported. Destroy is
pulumi-kubernetes' default: the Job is deleted with foreground propagation and awaited, then the
namespace.

Config (namespace ``handwritten``): ``objects`` (the folder), ``namespace`` (created here),
``kubeconfig`` and ``context``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import yaml


def main() -> None:
    config = pulumi.Config("handwritten")
    provider = k8s.Provider(
        "cluster", kubeconfig=config.require("kubeconfig"), context=config.get("context")
    )
    namespace = config.require("namespace")
    ns = k8s.core.v1.Namespace(
        "namespace", metadata={"name": namespace}, opts=pulumi.ResourceOptions(provider=provider)
    )
    in_namespace = pulumi.ResourceOptions(provider=provider, depends_on=[ns])
    objects: list[dict[str, Any]] = []
    for path in sorted(Path(config.require("objects")).glob("*.yaml")):
        objects += [doc for doc in yaml.safe_load_all(path.read_text()) if doc]

    before_job: list[pulumi.Resource] = []
    jobs = []
    for obj in objects:
        metadata = {**obj["metadata"], "namespace": namespace}
        name = f"{obj['kind'].lower()}-{metadata['name']}"
        kind = obj["kind"]
        if kind == "Namespace":
            continue  # declared above, from config
        if kind == "ConfigMap":
            before_job.append(
                k8s.core.v1.ConfigMap(name, metadata=metadata, data=obj["data"], opts=in_namespace)
            )
        elif kind == "Secret":
            before_job.append(
                k8s.core.v1.Secret(
                    name,
                    metadata=metadata,
                    type=obj.get("type"),
                    string_data=pulumi.Output.secret(obj["stringData"]),
                    opts=in_namespace,
                )
            )
        elif kind == "Service":
            before_job.append(
                k8s.core.v1.Service(name, metadata=metadata, spec=obj["spec"], opts=in_namespace)
            )
        elif kind == "NetworkPolicy":
            before_job.append(
                k8s.networking.v1.NetworkPolicy(
                    name, metadata=metadata, spec=obj["spec"], opts=in_namespace
                )
            )
        elif kind == "Job":
            jobs.append((name, metadata, obj["spec"]))
        else:
            raise ValueError(f"{path}: a {kind} is not part of this program")
    for name, metadata, spec in jobs:
        ready = f"jsonpath={{.status.ready}}={spec['parallelism']}"
        annotations = {**metadata.get("annotations", {}), "pulumi.com/waitFor": ready}
        k8s.batch.v1.Job(
            name,
            metadata={**metadata, "annotations": annotations},
            spec=spec,
            opts=pulumi.ResourceOptions(provider=provider, depends_on=[ns, *before_job]),
        )
    pulumi.export("namespace", namespace)


if __name__ == "__main__":
    main()
