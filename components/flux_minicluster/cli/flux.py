"""``minicluster flux NAME -- ARGS...``: ``flux ARGS...`` against a MiniCluster's instance.

The Flux Operator's users ask for a way to reach a MiniCluster's Flux from their own machine
(flux-operator#235). Here it is ``kubectl exec`` into rank 0's Flux container
(``core.deployed.rankzero``: which pod, where the pod's ``flux-view.sh`` is, the command that
sources it and runs ``flux`` at the broker's socket), with the user's kubeconfig: the user needs
``pods/exec`` in the namespace, and no pod, Service or account gets any right for it.

``kubectl exec`` returns the remote command's exit code, so ``flux``'s passes through
(``-- submit --wait ...`` exits as the job did); its output streams as it comes, and standard
input is passed when it is not a terminal (a pipe or a file: ``-- batch -N2 < job.sh``).
Errors of this command (no such MiniCluster, no rank 0 pod running, no kubectl) are one line on
stderr and exit 2, never a traceback; rank 0 not Ready yet is only a warning, since some Flux
commands (``uptime``, ``overlay status``) answer before the quorum is up.
"""

from __future__ import annotations

import argparse
import subprocess
import sys

from flux_minicluster.cli.status import DEFAULT_NAMESPACE, Target
from flux_minicluster.core.base.errors import Problem, SpecError
from flux_minicluster.core.deployed import rankzero

USAGE_EXAMPLE = "minicluster flux NAME -- jobs -a"


def run(args: argparse.Namespace) -> int:
    if not args.flux_args:
        raise SpecError(Problem("flux", f"give the flux command after --, e.g. `{USAGE_EXAMPLE}`"))
    target = Target(args)
    kubectl = target.kubectl()
    namespace = target.namespace or DEFAULT_NAMESPACE
    where = f"MiniCluster {namespace}/{target.name}"
    job = kubectl.get(namespace, "job", target.name)
    if job is None:
        raise SpecError(Problem(target.name, target.not_found()))
    pods = (kubectl.get(namespace, "pods", "-l", f"job-name={target.name}") or {}).get("items", [])
    rank0 = rankzero.find(target.name, job, pods)
    if rank0 is None:
        raise SpecError(Problem(where, "it has no rank 0 pod: the instance is not up"))
    if not rank0.running:
        raise SpecError(Problem(where, f"{rank0.state()}: there is no instance to reach"))
    if rank0.view_helper is None:
        raise SpecError(Problem(where, f"rank 0's pod {rank0.pod} has no flux view"))
    if not rank0.ready:
        print(f"minicluster: warning: {rank0.state()}", file=sys.stderr)
    command = rankzero.flux_command(rank0, args.flux_args)
    stdin = not sys.stdin.isatty() if sys.stdin is not None else False
    argv = kubectl.exec_args(namespace, rank0.pod, rank0.container, command, stdin=stdin)
    # stdout and stderr are this process's own: they stream as kubectl writes them.
    return subprocess.run(argv, check=False, stdin=None if stdin else subprocess.DEVNULL).returncode
