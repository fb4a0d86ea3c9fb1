"""``minicluster status``: what a deployed MiniCluster is doing, from the API server only.

The facts come from ``core.deployed.status`` (one interpretation, shared with the component's
``status`` output); this module only fetches the JSON. It runs ``kubectl get -o json``, so every
way a kubeconfig can authenticate (exec plugins of the clouds' CLIs, tokens, certificates) works
as it does for kubectl, and nothing reads Pulumi's state: a stack is only where to look (its config
file's cluster, namespace and MiniCluster name).

As with kubectl: without ``-n`` the namespace is the kube-context's (else ``default``), and
every line says which one was read; a MiniCluster that is not there is exit 1 (``kubectl get``'s
NotFound), not a status; ``-o json`` prints one document even when the cluster cannot be read
(``problems``), for the CI step that parses it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from flux_minicluster.cli.notices import problem_records
from flux_minicluster.core.base.errors import Problem, SpecError
from flux_minicluster.core.deployed import status
from flux_minicluster.core.kube.queueing import QUEUE_NAME_LABEL

WORKLOADS = "workloads.kueue.x-k8s.io"
DEFAULT_NAMESPACE = "default"
EXIT_NOT_FOUND = 1
"""``kubectl get``'s exit code for an object that is not there."""


class Kubectl:
    """``kubectl get -o json`` against one kubeconfig and context (None: kubectl's defaults)."""

    def __init__(self, kubeconfig: str | None = None, context: str | None = None) -> None:
        binary = shutil.which("kubectl")
        if binary is None:
            raise SpecError(
                Problem("kubectl", "not found on PATH: status reads the cluster with it")
            )
        self.base = [binary]
        if kubeconfig:
            self.base += ["--kubeconfig", os.path.expanduser(kubeconfig)]
        if context:
            self.base += ["--context", context]

    def context_namespace(self) -> str:
        """The namespace of the kube-context, as kubectl uses it without ``-n`` (else
        ``default``, also when the kubeconfig cannot say: ``get`` then says why)."""
        args = [*self.base, "config", "view", "--minify", "-o", "jsonpath={..namespace}"]
        proc = subprocess.run(args, capture_output=True, text=True, check=False)
        found = proc.stdout.strip() if proc.returncode == 0 else ""
        return found or DEFAULT_NAMESPACE

    def get(self, namespace: str, *what: str) -> dict[str, Any] | None:
        """The object or list, or None when the object or its resource type does not exist."""
        args = [*self.base, "get", "-n", namespace, *what, "-o", "json", "--ignore-not-found"]
        proc = subprocess.run(args, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            if "the server doesn't have a resource type" in proc.stderr:
                return None
            said = proc.stderr.strip().splitlines()[-1:] or [f"exit {proc.returncode}"]
            raise SpecError(
                Problem(
                    "kubectl",
                    f"`kubectl get -n {namespace} {' '.join(what)}`: {said[0]}",
                )
            )
        text = proc.stdout.strip()
        return dict(json.loads(text)) if text else None


def read(kubectl: Kubectl, name: str, namespace: str) -> status.MiniClusterStatus:
    """The status of MiniCluster ``name``: its Job, the Job's pods and, when queued, Workloads."""
    job = kubectl.get(namespace, "job", name)
    pods: Sequence[Mapping[str, Any]] = []
    workloads: Sequence[Mapping[str, Any]] = []
    if job is not None:
        pods = (kubectl.get(namespace, "pods", "-l", f"job-name={name}") or {}).get("items", [])
        if QUEUE_NAME_LABEL in ((job.get("metadata") or {}).get("labels") or {}):
            workloads = (kubectl.get(namespace, WORKLOADS) or {}).get("items", [])
    return status.interpret(name, namespace, job, pods, workloads)


def _stack_target(stack: str) -> tuple[str, str, str | None, str | None]:
    """Name, namespace, kubeconfig and context of a stack's MiniCluster, from its config file."""
    from flux_minicluster.deploy.stack import project as projects
    from flux_minicluster.deploy.stack import stackconfig, stackrender

    project = projects.find()
    values, _ = stackrender.read_stack_config(project, stack, keep_secrets=True)
    prefix = f"{stackconfig.PROJECT}:"
    config = stackconfig.parse_stack_config(
        {k.removeprefix(prefix): v for k, v in values.items() if k.startswith(prefix)}
    )
    definition = config.definition(project.root)
    kubeconfig = config.cluster.kubeconfig
    if kubeconfig and not Path(os.path.expanduser(kubeconfig)).is_absolute():
        kubeconfig = str(project.root / kubeconfig)
    return definition.name, config.cluster.namespace, kubeconfig, config.cluster.context


def run(args: argparse.Namespace) -> int:
    if args.stack and (args.name or args.namespace):
        raise SpecError("give a stack (--stack) or a NAME with -n NAMESPACE, not both")
    if args.stack:
        name, namespace, kubeconfig, context = _stack_target(args.stack)
        kubeconfig = args.kubeconfig or kubeconfig
        context = args.context or context
    else:
        if not args.name:
            raise SpecError("give the MiniCluster's NAME (with -n NAMESPACE) or --stack STACK")
        name, namespace = args.name, args.namespace
        kubeconfig, context = args.kubeconfig, args.context
    try:  # kubectl missing, the context unreadable or the cluster unreachable
        kubectl = Kubectl(kubeconfig, context)
        namespace = namespace or kubectl.context_namespace()
        found = read(kubectl, name, namespace)
    except SpecError as err:
        if args.output == "json":  # one document whatever happens, as validate and check
            problems = problem_records(err)
            print(json.dumps({"name": name, "namespace": namespace, "problems": problems}))
        raise
    if args.output == "json":
        print(json.dumps(found.to_json(), indent=2, sort_keys=True))
    else:
        print("\n".join(found.lines()))
    if not found.created:
        whose = "" if args.namespace or args.stack else ", the kube-context's (-n for another)"
        print(
            f"minicluster: MiniCluster {name!r} not found: no Job of that name in namespace "
            f"{namespace!r}{whose}",
            file=sys.stderr,
        )
        return EXIT_NOT_FOUND
    return 0
