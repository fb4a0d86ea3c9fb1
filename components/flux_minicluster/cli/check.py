"""``minicluster check``: the policy pack's rules, offline, over manifests, MiniClusters or stacks.

CI machines without the Pulumi CLI still get the same verdicts as ``pulumi preview --policy-pack
policies``, because both run the rules in ``flux_minicluster.policy`` over the same manifest dicts.
A MiniCluster document among the inputs is rendered first, with the certificate ``render`` would
give it (``--curve-cert FILE``, the spec's, the one kept for it; else one made for the run and
shared by its bursting group, ``cli.curvecerts``), and its objects checked; a burst stack's root
is rendered with it, and the burst is checked against the root's outputs, as its StackReference
would see them. Checking nothing is an error: an empty
folder, an empty file or a wrong path must not pass a CI gate.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from flux_minicluster.cli import curvecerts
from flux_minicluster.cli.notices import internal_error, problem_records, warn
from flux_minicluster.core.base.errors import Problem, SpecError
from flux_minicluster.core.deployed import stackoutputs as so
from flux_minicluster.core.planning import plan
from flux_minicluster.core.reading.loading import parse
from flux_minicluster.core.render.manifests import render
from flux_minicluster.core.spec.models import KIND
from flux_minicluster.deploy.component import awaiting
from flux_minicluster.policy import checker
from flux_minicluster.policy.rules import ALL_RULES


def run(args: argparse.Namespace) -> int:
    """Check, and print the report; with ``-o json`` a JSON document on stdout even when the
    inputs cannot be read or are invalid (``passed: false`` and their ``problems``), so that CI
    always has one to read."""
    try:
        report = _report(args)
    except Exception as err:
        if args.output == "json":
            print(json.dumps({"passed": False, "objects": 0, "problems": _problems(err)}, indent=2))
        raise
    if args.output == "json":
        print(json.dumps({**report.to_json(), "problems": []}, indent=2))
    else:
        print(report.format())
    return report.exit_code


def _problems(err: Exception) -> list[dict[str, str]]:
    """``-o json``'s problems for an error: a SpecError's own, else the internal error as one
    (the command still fails, exit 70, with the same line on stderr)."""
    if isinstance(err, SpecError):
        return problem_records(err, "")
    return [{"file": "", "path": "", "message": internal_error(err)}]


def _report(args: argparse.Namespace) -> checker.Report:
    if not args.paths and not args.stack:
        raise SpecError("give manifest files or folders, MiniCluster files, or --stack NAME")
    config = checker.load_config(args.config)
    notes: list[str] = []
    found = checker.manifests_by_file(args.paths, notes) if args.paths else []
    for note in notes:
        print(note, file=sys.stderr)
    manifests: list[Any] = []
    as_is: list[int] = []  # objects read from files, applied as they are (no Pulumi awaits)
    given = Path(args.curve_cert) if args.curve_cert else None
    certificates = curvecerts.Certificates(given, keep=False)
    for path, documents in found:
        for doc in documents:
            try:
                objects, rendered = _objects(doc, str(path), certificates)
            except SpecError as err:
                raise err.with_source(err.source or str(path)) from None
            if not rendered:
                as_is += range(len(manifests), len(manifests) + len(objects))
            manifests += objects
    if args.paths and not manifests:
        raise SpecError(
            Problem(
                "",
                f"nothing to check in {', '.join(args.paths)}: no Kubernetes object and no "
                "MiniCluster (an empty folder or file, or a folder of something else)",
            )
        )
    if args.stack:
        manifests += _render_stacks(args.stack, certificates)
    report = checker.check(manifests, config, applied_as_is=as_is)
    skipped = [r.id for r in ALL_RULES if r.engine_only and r.id in report.policies]
    if as_is and skipped:
        print(
            f"not applied to the {len(as_is)} object(s) read from files: {', '.join(skipped)} "
            "(about the awaits of `pulumi up`; kubectl and GitOps apply files as they are)",
            file=sys.stderr,
        )
    return report


def _objects(
    document: Any, source: str, certificates: curvecerts.Certificates
) -> tuple[list[Any], bool]:
    """A manifest as it is; a MiniCluster document as the objects it renders to, as the
    component registers them (the second value says which)."""
    if not isinstance(document, dict) or document.get("kind") != KIND:
        return [document], False
    definition = parse(document)
    mc = plan.build(definition)
    warn(source, definition)
    chosen = certificates.choose(mc, source)
    print(
        f"rendered MiniCluster {mc.namespace}/{mc.name} to check it; {chosen.origin}",
        file=sys.stderr,
    )
    # As the component registers it (the rules are the policy pack's): with the deploy
    # annotations of its default wait.
    rendering = render(mc, chosen.text)
    registered = replace(rendering, job=awaiting.registered_job(mc, rendering.job, "ready"))
    return registered.objects(), True


def _render_stacks(stacks: list[str], certificates: curvecerts.Certificates) -> list[Any]:
    """The stacks' objects, rendered offline; a burst's root is rendered with it (not checked
    unless asked for) and stands in, through its outputs, for the burst's StackReference.
    ``--curve-cert`` (``certificates.given``) stands for the stacks' ``curveCert``, as with
    ``render --stack``."""
    from flux_minicluster.deploy.stack import project, stackrender

    wanted = set(stacks)
    out: list[Any] = []
    text = None if certificates.given is None else certificates.read()
    rendered = stackrender.render_with_roots(project.find(), stacks, curve_cert=text)
    for stack, rendering in rendered.items():
        if stack not in wanted:
            print(f"rendered the root stack {stack} offline (to read its outputs)", file=sys.stderr)
            continue
        print(f"rendered stack {stack} offline", file=sys.stderr)
        out += rendering.objects
        root = rendering.outputs.get(so.ROOT_STACK)
        if isinstance(root, str):
            root_name = root.rsplit("/", 1)[-1]
            if root_name not in wanted and root_name in rendered:
                # the root's outputs as the burst's StackReference shows them to the rules
                out.append(checker.stack_reference_manifest(root, rendered[root_name].outputs))
    return out
