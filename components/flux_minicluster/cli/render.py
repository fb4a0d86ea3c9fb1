"""``minicluster render``: MiniClusters as manifests for kubectl or GitOps, no Pulumi needed.

A file's MiniClusters render to exactly what the Pulumi component registers (the same renderer),
with a real certificate in each curve Secret so that ``kubectl apply -f -`` gives a working
cluster. Which certificate (``cli.curvecerts``, in the order every surface follows):
``--curve-cert FILE`` (read, or created 0600 when missing); the spec's ``flux.curveCert``; else
the one kept for the MiniCluster in the user's state folder, made by its first render, which
stderr announces because the output then holds a secret key. Each way the same spec renders the
same bytes every time, so a second ``kubectl apply`` of a render changes nothing.
``--no-secret`` leaves every Secret out for GitOps repositories
that must not hold one (the curve Secret, and v1alpha1's credentials derived from the certificate):
create them apart (stderr says how). It needs a certificate file, for the Secrets to match.

``--stack`` renders Pulumi stacks offline instead (the deploy layer's stack renderer): each into
``DIR/<stack>/`` with its outputs in ``DIR/<stack>.outputs.json``, the keygen Command printing
the certificate kept for the stack (``cli.curvecerts``) unless ``--curve-cert`` gives one.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import Any

from flux_minicluster.cli import curvecerts, folders
from flux_minicluster.cli.notices import warn
from flux_minicluster.core.base import layout
from flux_minicluster.core.base.errors import Problem, SpecError
from flux_minicluster.core.flux import certificate
from flux_minicluster.core.kube import kubeversion, limits
from flux_minicluster.core.planning import plan
from flux_minicluster.core.reading.loading import load_file
from flux_minicluster.core.render.manifests import render, to_json, to_yaml

EXIT_OK = 0


def run(args: argparse.Namespace) -> int:
    if args.output_dir and args.output == "json":
        # The folder holds YAML files named NN-<kind>-<name>.yaml (its index knows no other).
        raise SpecError(
            Problem(
                "--output",
                "json goes to standard output only; --output-dir writes one YAML file per "
                "object (kubectl apply -f DIR reads them): leave out -o json or -d DIR",
            )
        )
    if args.stack and args.file:
        raise SpecError("give a MiniCluster FILE or --stack, not both")
    if args.stack:
        return _stacks(args)
    if not args.file:
        raise SpecError("give a MiniCluster FILE ('-' for standard input) or --stack STACK")
    objects = render_file(
        args.file,
        name=args.name,
        namespace=args.namespace,
        curve_cert=Path(args.curve_cert) if args.curve_cert else None,
        with_secret=not args.no_secret,
        network_policy=not args.no_network_policy,
        kube_version=kubeversion.parse(args.kube_version or kubeversion.DEFAULT, "--kube-version"),
    )
    return emit(objects, args)


def render_file(
    path: str,
    *,
    name: str | None = None,
    namespace: str | None = None,
    curve_cert: Path | None = None,
    with_secret: bool = True,
    network_policy: bool = True,
    kube_version: kubeversion.KubeVersion = kubeversion.DEFAULT,
) -> list[dict[str, Any]]:
    """Every object of every MiniCluster in ``path``, with its certificate (see the module),
    for Kubernetes ``kube_version``."""
    objects: list[dict[str, Any]] = []
    certificates = curvecerts.Certificates(curve_cert, keep=True)
    for definition in load_file(path, name=name, default_namespace=namespace):
        mc = plan.build(definition, kube_version)
        warn(path, mc)
        if not with_secret and certificate.choose(curve_cert, mc.spec.flux.curve_cert)[0] is None:
            # The pod template records the certificate's public key, and v1alpha1's passwords,
            # token and munge key derive from it: a certificate made here and thrown away would
            # leave a rendering no Secret created apart could match.
            raise SpecError(
                f"{path}: --no-secret needs --curve-cert FILE, the certificate the Secrets you "
                "create apart will hold"
            )
        try:  # an object too large is refused before a certificate is made or announced
            render(mc, None, network_policy=network_policy)
        except SpecError as err:
            raise err.with_source(path) from None
        chosen = certificates.choose(mc, path)
        if chosen.made_here:
            print(f"{path}: {chosen.origin}", file=sys.stderr)
        rendering = render(mc, chosen.text, network_policy=network_policy)
        if with_secret:
            objects += rendering.objects()
            continue
        for obj in rendering.objects():
            if obj["kind"] != "Secret":
                objects.append(obj)
            else:
                curve = obj is rendering.curve_secret
                print(_left_out(path, obj, curve=curve, cert=curve_cert), file=sys.stderr)
    return objects


def _left_out(path: str, secret: dict[str, Any], *, curve: bool, cert: Path | None) -> str:
    """What stderr says of a Secret ``--no-secret`` left out, and how to create it apart (from
    ``cert``, the ``--curve-cert`` file; None: the spec's ``flux.curveCert`` is the certificate)."""
    meta = secret["metadata"]
    where = f"{meta['namespace']}/{meta['name']}"
    if curve:
        source = shlex.quote(str(cert)) if cert else "<a file holding spec.flux.curveCert>"
        return (
            f"{path}: the curve Secret {where} is left out; create it apart: kubectl create "
            f"secret generic {meta['name']} -n {meta['namespace']} "
            f"--from-file={layout.CURVE_FILE}={source}"
        )
    keys = ", ".join(sorted(secret.get("stringData") or secret.get("data") or {}))
    return (
        f"{path}: the Secret {where} (keys {keys}) is left out too: its values derive from the "
        "certificate; render it without --no-secret into your secret store"
    )


def emit(objects: list[dict[str, Any]], args: argparse.Namespace) -> int:
    """Print the objects (``-o yaml|json``) or write them into ``--output-dir``."""
    client_apply_warnings(objects)
    if args.output_dir:
        for path in folders.write_folder(Path(args.output_dir), objects):
            print(path, file=sys.stderr)
        return EXIT_OK
    if sys.stdout.isatty() and (secrets := [o for o in objects if o["kind"] == "Secret"]):
        held = ", ".join(f"{o['metadata']['namespace']}/{o['metadata']['name']}" for o in secrets)
        print(
            f"warning: the output holds Secret {held} in clear, the curve certificate's secret "
            "key among them: redirect it to a private file, write a folder (-d DIR, its Secret "
            "files readable by you only) or leave the Secrets out (--no-secret)",
            file=sys.stderr,
        )
    sys.stdout.write(to_json(objects) if args.output == "json" else to_yaml(objects))
    return EXIT_OK


def client_apply_warnings(objects: list[dict[str, Any]]) -> None:
    """A warning on stderr for each object plain `kubectl apply` would be refused (its
    last-applied annotation too large) though the API server takes the object itself."""
    for obj in objects:
        if problem := limits.client_apply_problem(obj):
            meta = obj.get("metadata", {})
            where = "/".join(str(meta[k]) for k in ("namespace", "name") if k in meta)
            print(f"warning: {obj.get('kind')} {where} is {problem}", file=sys.stderr)


def _stacks(args: argparse.Namespace) -> int:
    # Imported here: the deploy layer (and Pulumi) load only when a stack is rendered.
    from flux_minicluster.deploy.stack import project, stackrender

    if args.name or args.namespace or args.kube_version:
        raise SpecError(
            "--name, --namespace and --kube-version are the stack config's to set, not the "
            "CLI's (flux-minicluster:cluster.kubernetesVersion for the version)"
        )
    if args.no_secret and not args.curve_cert:
        # As for a file: the pods carry the certificate's public key, so a certificate made for
        # this render and then left out would match no Secret created apart.
        raise SpecError(
            "--no-secret needs --curve-cert FILE, the certificate the Secrets you create apart "
            "will hold"
        )
    where = project.find()
    curve = None
    if args.curve_cert:
        text, created = folders.load_or_create_certificate(
            Path(args.curve_cert), "flux-minicluster", "flux-minicluster-0"
        )
        curve = text
        if created:
            print(folders.created_certificate_warning(Path(args.curve_cert)), file=sys.stderr)
    # Without --curve-cert each keygen Command prints the certificate kept for its stack, and a
    # burst reads its root's: a group rendered one stack at a time still holds one certificate.
    kept = None if curve is not None else curvecerts.stack_keeper(where.name)
    renderings = stackrender.render_stacks(where, args.stack, curve_cert=curve, kept=kept)
    for rendering in renderings:
        _report(rendering)
        objects = rendering.objects
        if args.no_secret:
            objects = [o for o in objects if o["kind"] != "Secret"]
        if not args.output_dir:
            args_out = argparse.Namespace(output_dir=None, output=args.output)
            emit(objects, args_out)
            continue
        out = Path(args.output_dir)
        outputs = folders.outputs_json(
            rendering.stack,
            rendering.outputs,
            rendering.secret_outputs,
            show_secrets=args.show_secrets,
        )
        beside = {f"{rendering.stack}.outputs.json": outputs}
        client_apply_warnings(objects)
        folders.write_folder(
            out / rendering.stack, objects, rendering.patches, beside, named_by_render=True
        )
    return EXIT_OK


def _report(rendering: Any) -> None:
    print(
        f"Offline rendering of stack {rendering.stack!r} (Pulumi's mock runtime; nothing was "
        f"deployed): {len(rendering.objects)} objects and {len(rendering.patches)} patch(es)",
        file=sys.stderr,
    )
    for note in rendering.notes:
        print(f"  note: {note}", file=sys.stderr)
