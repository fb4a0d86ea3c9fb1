"""``minicluster render``: MiniClusters as manifests for kubectl or GitOps, no Pulumi needed.

A file's MiniClusters render to exactly what the Pulumi component registers (the same renderer),
with a real certificate in each curve Secret so that ``kubectl apply -f -`` gives a working
cluster. Which certificate, in the order every surface follows (``core.certificate.choose``):
``--curve-cert FILE`` (read, or created 0600 when missing, so that the next render is byte for
byte the same and a second ``kubectl apply`` changes nothing); the spec's ``flux.curveCert``;
else a new one made here, which stderr announces, because
the output then holds a secret key. ``--no-secret`` leaves every Secret out for GitOps repositories
that must not hold one (the curve Secret, and v1alpha1's credentials derived from the certificate):
create them apart (stderr says how). It needs a certificate file, for the Secrets to match.

``--stack`` renders Pulumi stacks offline instead (the deploy layer's stack renderer): each into
``DIR/<stack>/`` with its outputs in ``DIR/<stack>.outputs.json``.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import Any

from flux_minicluster.cli import folders
from flux_minicluster.cli.notices import warn
from flux_minicluster.core import certificate, kubeversion, layout, plan
from flux_minicluster.core.errors import Problem, SpecError
from flux_minicluster.core.loading import load_file
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
    for definition in load_file(path, name=name, default_namespace=namespace):
        mc = plan.build(definition, kube_version)
        warn(path, definition)
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
        text = _certificate(mc, curve_cert, path, announce=with_secret)
        rendering = render(mc, text, network_policy=network_policy)
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


def _certificate(
    mc: plan.MiniClusterPlan, curve_cert: Path | None, source: str, *, announce: bool
) -> str:
    chosen, _ = certificate.choose(curve_cert, mc.spec.flux.curve_cert)
    if isinstance(chosen, Path):
        text, created = folders.load_or_create_certificate(chosen, mc.name, mc.names.lead_host)
        if created:
            print(folders.created_certificate_warning(chosen), file=sys.stderr)
        return text
    if chosen is not None:
        return chosen
    if message := mc.mounted_certificate_problem("--curve-cert FILE"):
        raise SpecError(f"{source}: {message}")
    cert = certificate.generate(name=mc.name, hostname=mc.names.lead_host)
    if announce:
        print(
            f"{source}: generated a new CURVE certificate locally (public key "
            f"{cert.public_key}); Secret {mc.namespace}/{mc.names.curve_secret} in the output "
            "holds its secret key, so keep the output private (or pass --curve-cert FILE to "
            "render the same certificate every time)",
            file=sys.stderr,
        )
    return certificate.render(cert)


def emit(objects: list[dict[str, Any]], args: argparse.Namespace) -> int:
    """Print the objects (``-o yaml|json``) or write them into ``--output-dir``."""
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
    renderings = stackrender.render_stacks(where, args.stack, curve_cert=curve)
    if not args.curve_cert:  # after the config's own problems, before anything is written
        _one_certificate_per_group(where, args.stack)
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
        folders.write_folder(
            out / rendering.stack, objects, rendering.patches, beside, named_by_render=True
        )
    return EXIT_OK


def _one_certificate_per_group(where: Any, stacks: list[str]) -> None:
    """A bursting group rendered one stack at a time (a folder per cluster) must share one
    certificate, and a render without ``--curve-cert`` makes a new one: refuse a burst rendered
    apart from its root, and warn when a root is rendered apart from its bursts."""
    from flux_minicluster.deploy.stack import stackrender
    from flux_minicluster.deploy.stack.stackconfig import PROJECT, ROLE_ROOT

    wanted = set(stacks)
    for stack in stacks:
        config = stackrender.read_stack_config(where, stack)[0]
        root = stackrender.root_of(config)
        if root is not None and root.rsplit("/", 1)[-1] not in wanted:
            name = root.rsplit("/", 1)[-1]
            raise SpecError(
                f"{PROJECT}:bursting.rootStack: the burst {stack!r} rendered apart from its root "
                f"{name!r} would get a new certificate, and the brokers of the two renders could "
                f"not join. Render them together (minicluster render --stack {name} --stack "
                f"{stack} -d DIR), or give both renders the same certificate: minicluster render "
                f"--stack {name} --curve-cert FILE ..., then minicluster render --stack {stack} "
                "--curve-cert FILE ...",
                source=f"stack {stack}",
            )
        bursting = config.get(f"{PROJECT}:bursting")
        if isinstance(bursting, dict) and bursting.get("role") == ROLE_ROOT:
            apart = [
                str(c.get("name"))
                for c in bursting.get("clusters") or []
                if isinstance(c, dict) and c.get("name") not in wanted
            ]
            if apart:
                print(
                    f"stack {stack}: warning: rendered with a new certificate; its bursts "
                    f"({', '.join(apart)}) rendered in another command will hold another one and "
                    "cannot join. Pass the same --curve-cert FILE to every render of the group",
                    file=sys.stderr,
                )


def _report(rendering: Any) -> None:
    print(
        f"Offline rendering of stack {rendering.stack!r} (Pulumi's mock runtime; nothing was "
        f"deployed): {len(rendering.objects)} objects and {len(rendering.patches)} patch(es)",
        file=sys.stderr,
    )
    for note in rendering.notes:
        print(f"  note: {note}", file=sys.stderr)
