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

Once the instance is up (rank 0's pod Running and Ready), its jobs and archive are read in rank
0's Flux container with ``kubectl exec`` (``core.deployed.rankzero``): the user's own
credentials, so no pod gets a right to publish anything. A user without ``pods/exec`` still gets
the rest of the status, and a ``problems`` entry saying why the jobs are missing.
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
from flux_minicluster.core.deployed import rankzero, status
from flux_minicluster.core.kube.labels import ARCHIVE_ANNOTATION
from flux_minicluster.core.kube.queueing import QUEUE_NAME_LABEL
from flux_minicluster.core.spec.archive import archive_path

WORKLOADS = "workloads.kueue.x-k8s.io"
DEFAULT_NAMESPACE = "default"
EXIT_NOT_FOUND = 1
"""``kubectl get``'s exit code for an object that is not there."""
EXEC_TIMEOUT_S = 30
"""How long status waits for the instance to answer (``flux job stats`` takes milliseconds)."""


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

    def exec_args(
        self, namespace: str, pod: str, container: str, command: Sequence[str], *, stdin: bool
    ) -> list[str]:
        """``kubectl exec`` of ``command`` in ``container`` (``-i``: standard input passed)."""
        interactive = ["-i"] if stdin else []
        return [*self.base, "exec", *interactive, "-n", namespace, pod, "-c", container, "--",
                *command]  # fmt: skip


def read(
    kubectl: Kubectl, name: str, namespace: str, archive: str | None = None
) -> status.MiniClusterStatus:
    """The status of MiniCluster ``name``: its Job, the Job's pods and, when queued, Workloads;
    once the instance is up, its jobs and ``archive`` (the spec's ``archive.path``, when the
    caller knows the spec) as rank 0 reports them."""
    job = kubectl.get(namespace, "job", name)
    pods: Sequence[Mapping[str, Any]] = []
    workloads: Sequence[Mapping[str, Any]] = []
    if job is not None:
        pods = (kubectl.get(namespace, "pods", "-l", f"job-name={name}") or {}).get("items", [])
        if QUEUE_NAME_LABEL in ((job.get("metadata") or {}).get("labels") or {}):
            workloads = (kubectl.get(namespace, WORKLOADS) or {}).get("items", [])
    found = status.interpret(name, namespace, job, pods, workloads)
    if job is None:
        return found
    return _with_instance(kubectl, found, job, pods, archive)


def _with_instance(
    kubectl: Kubectl,
    found: status.MiniClusterStatus,
    job: Mapping[str, Any],
    pods: Sequence[Mapping[str, Any]],
    archive: str | None,
) -> status.MiniClusterStatus:
    """``found`` with what rank 0's instance says of its jobs and archive, or why it says
    nothing (never an error: the rest of the status stands)."""
    if found.succeeded or found.failed:
        return found.with_instance(None, unread="the instance has ended")
    rank0 = rankzero.find(found.name, job, pods)
    if rank0 is None:
        return found.with_instance(None, unread="there is no rank 0 pod (the instance is not up)")
    if not (rank0.running and rank0.ready):
        return found.with_instance(None, unread=f"the instance is not up: {rank0.state()}")
    if rank0.view_helper is None:
        return found.with_instance(
            None, problem=f"rank 0's pod {rank0.pod} has no flux view: it was not made here"
        )
    # The Job names the archive it keeps (core.spec.archive, the default on a claim included).
    notes = (job.get("metadata") or {}).get("annotations") or {}
    archive = notes.get(ARCHIVE_ANNOTATION) or archive
    args = kubectl.exec_args(
        found.namespace,
        rank0.pod,
        rank0.container,
        rankzero.instance_command(rank0, archive),
        stdin=False,
    )
    said = f"`kubectl exec -n {found.namespace} {rank0.pod} -c {rank0.container}`"
    try:
        proc = subprocess.run(
            args, capture_output=True, text=True, check=False, timeout=EXEC_TIMEOUT_S
        )
    except subprocess.TimeoutExpired:
        return found.with_instance(
            None, problem=f"{said}: the instance did not answer in {EXEC_TIMEOUT_S} s"
        )
    if proc.returncode != 0:
        why = proc.stderr.strip().splitlines()[-1:] or [f"exit {proc.returncode}"]
        return found.with_instance(None, problem=f"{said}: {why[0]}")
    try:
        jobs, archived = status.read_instance(proc.stdout)
    except ValueError as err:
        return found.with_instance(None, problem=f"{said}: {err}")
    return found.with_instance(jobs, archived)


class Target:
    """The MiniCluster a command reads: its name and namespace, the kubectl that reaches it,
    and, given a stack, the spec's archive path (a NAME alone has no spec)."""

    def __init__(self, args: argparse.Namespace) -> None:
        if args.stack and (args.name or args.namespace):
            raise SpecError("give a stack (--stack) or a NAME with -n NAMESPACE, not both")
        self.archive: str | None = None
        if args.stack:
            name, namespace, kubeconfig, context, self.archive = _stack_target(args.stack)
            kubeconfig = args.kubeconfig or kubeconfig
            context = args.context or context
        else:
            if not args.name:
                raise SpecError("give the MiniCluster's NAME (with -n NAMESPACE) or --stack STACK")
            name, namespace = args.name, args.namespace
            kubeconfig, context = args.kubeconfig, args.context
        self.name: str = name
        self.namespace: str | None = namespace
        self.kubeconfig, self.context = kubeconfig, context
        self.namespace_given = bool(args.namespace or args.stack)

    def kubectl(self) -> Kubectl:
        """The kubectl of the target; fills in the namespace (the kube-context's) if none."""
        kubectl = Kubectl(self.kubeconfig, self.context)
        self.namespace = self.namespace or kubectl.context_namespace()
        return kubectl

    def not_found(self) -> str:
        whose = "" if self.namespace_given else ", the kube-context's (-n for another)"
        return (
            f"MiniCluster {self.name!r} not found: no Job of that name in namespace "
            f"{self.namespace!r}{whose}"
        )


def _stack_target(stack: str) -> tuple[str, str, str | None, str | None, str | None]:
    """Name, namespace, kubeconfig, context and archive path of a stack's MiniCluster, from its
    config file."""
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
    archive = archive_path(definition.spec, definition.name)
    return definition.name, config.cluster.namespace, kubeconfig, config.cluster.context, archive


def run(args: argparse.Namespace) -> int:
    target = Target(args)
    try:  # kubectl missing, the context unreadable or the cluster unreachable
        kubectl = target.kubectl()
        found = read(kubectl, target.name, target.namespace or DEFAULT_NAMESPACE, target.archive)
    except SpecError as err:
        if args.output == "json":  # one document whatever happens, as validate and check
            problems = problem_records(err)
            print(
                json.dumps(
                    {"name": target.name, "namespace": target.namespace, "problems": problems}
                )
            )
        raise
    if args.output == "json":
        print(json.dumps(found.to_json(instance=True), indent=2, sort_keys=True))
    else:
        print("\n".join(found.lines()))
    if not found.created:
        print(f"minicluster: {target.not_found()}", file=sys.stderr)
        return EXIT_NOT_FOUND
    return 0
