"""Hypothesis strategies for MiniCluster specs: valid ones, and valid ones broken on purpose.

Why generated specs and not only hand-written ones: the renderer turns user strings into host
names, Kubernetes objects, TOML and bash, and every one of those has its own quoting rules. A
table of examples covers the cases someone thought of; these strategies cover the combinations
nobody did (a sidecar with a volume shared with the Flux container, a bursting root at 65536
hosts with an RTL environment value, a batch script whose line equals the heredoc delimiter).

``spec_cases()`` draws documents that the spec contract says are valid, together with the ordered
hosts their hostlist must expand to, computed here independently of the code under test.
The valid space is deliberately conservative where a rule is fuzzy (names start with a letter,
mount paths live under a few roots that cannot collide with the MiniCluster's own); the edges of
each rule are exercised by the hostile table in ``test_hostile.py`` instead, where each expected
outcome is written down.

``mutated_cases()`` takes a valid document and breaks it: keys dropped, duplicated or renamed,
values of the wrong type, numbers out of range, random unicode in any string field, strings
copied between fields (so names and paths collide). Every such input must end in either a
``SpecError`` or a spec that renders correctly.
"""

from __future__ import annotations

import copy
import functools
import shlex
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import yaml
from hypothesis import strategies as st

Json = Any
TreePath = tuple[str | int, ...]

LOWER = "abcdefghijklmnopqrstuvwxyz"
DIGITS = "0123456789"
MAX_INDEXED = 100_000

# Mount roots for user volumes: none of them is, or is below, a path the MiniCluster mounts
# itself (/flux_operator, /mnt/flux, /mnt/curve, /opt/software, /home/flux-operator, /dev/shm).
USER_ROOTS = ("/data", "/scratch", "/workspace", "/srv/shared", "/var/tmp/run")
VIEW_MOUNTS = ("/mnt/flux", "/mnt/flux-view", "/opt/view")
# Validation expands a custom bursting.hostlist and checks each of the cluster's own hosts against
# it, in time linear in both (benchmarks/run.py measures it); an example with a maxSize of 2**20
# would still take seconds, so custom hostlists stay small here and are left out of the mutated
# specs (whose maxSize may become 2**20).
CUSTOM_HOSTLIST_MAX = 1024

# Spec fields whose value is shell text by design: random text there may be invalid bash,
# and that is the user's business, not a quoting bug.
SHELL_FIELDS = frozenset(
    {
        "command",
        "init",
        "pre",
        "brokerPre",
        "workerPre",
        "post",
        "prefix",
        "script",
        "servicePre",
        "optionFlags",
        "submitCommand",
        "postStartExec",
        "preStopExec",
    }
)


# --- atoms ----------------------------------------------------------------------------------


@functools.cache
def dns_labels(min_size: int = 1, max_size: int = 20) -> st.SearchStrategy[str]:
    """DNS-1035 labels (a letter first), which are also DNS-1123 labels and label values."""
    max_size = max(min_size, min(max_size, 63))
    one = st.sampled_from(LOWER)
    if max_size == 1:
        return one
    longer = st.builds(
        lambda first, middle, last: first + middle + last,
        one,
        st.text(LOWER + DIGITS + "-", min_size=max(min_size - 2, 0), max_size=max_size - 2),
        st.sampled_from(LOWER + DIGITS),
    )
    return st.one_of(one, longer) if min_size <= 1 else longer


@functools.cache
def dns_subdomains() -> st.SearchStrategy[str]:
    return st.lists(dns_labels(1, 12), min_size=1, max_size=3).map(".".join)


@functools.cache
def label_keys() -> st.SearchStrategy[str]:
    names = dns_labels(1, 20)
    return st.one_of(names, st.builds(lambda p, n: f"{p}/{n}", dns_subdomains(), names))


@functools.cache
def label_values() -> st.SearchStrategy[str]:
    return st.one_of(st.just(""), dns_labels(1, 40))


@functools.cache
def unicode_text(min_size: int = 0, max_size: int = 30) -> st.SearchStrategy[str]:
    """Any printable text a person could paste: every script, RTL, emoji, tabs and newlines.

    Control characters other than tab and newline (NUL included) are left to the hostile table.
    """
    chars = st.one_of(
        st.characters(exclude_categories=("Cs", "Cc")),
        st.sampled_from("\t\n '\"$`\\!*?;&|<>(){}[]#~%"),
    )
    return st.text(chars, min_size=min_size, max_size=max_size)


@functools.cache
def env_names(*, shell: bool) -> st.SearchStrategy[str]:
    """Environment variable names; ``shell`` for names that are exported by bash."""
    if shell:
        first, rest = LOWER + LOWER.upper() + "_", LOWER + LOWER.upper() + DIGITS + "_"
    else:
        first, rest = LOWER + LOWER.upper() + "_-", LOWER + LOWER.upper() + DIGITS + "_-."
    return st.builds(
        lambda a, b: a + b,
        st.sampled_from(first),
        st.text(rest, max_size=15),
    )


@functools.cache
def environments(*, shell: bool) -> st.SearchStrategy[dict[str, str]]:
    return st.dictionaries(env_names(shell=shell), unicode_text(), max_size=4)


@functools.cache
def path_segments() -> st.SearchStrategy[str]:
    plain = st.text(LOWER + LOWER.upper() + DIGITS + "._-", min_size=1, max_size=10)
    odd = st.text(
        st.characters(exclude_categories=("Cs", "Cc"), exclude_characters="/:"),
        min_size=1,
        max_size=8,
    )
    return st.one_of(plain, plain, odd).filter(lambda s: s not in (".", ".."))


@functools.cache
def abs_paths(roots: tuple[str, ...] = USER_ROOTS) -> st.SearchStrategy[str]:
    return st.builds(
        lambda root, parts: "/".join([root, *parts]),
        st.sampled_from(roots),
        st.lists(path_segments(), max_size=3),
    )


@functools.cache
def rel_paths() -> st.SearchStrategy[str]:
    return st.lists(
        st.text(LOWER + DIGITS + "._-", min_size=1, max_size=8).filter(
            lambda s: not s.startswith("..") and s != "."
        ),
        min_size=1,
        max_size=3,
    ).map("/".join)


@functools.cache
def quantities() -> st.SearchStrategy[int | str]:
    return st.one_of(
        st.integers(1, 64),
        st.sampled_from(["100m", "500m", "1", "2", "1.5", "64Mi", "1Gi", "2G", "1e3", "750k"]),
    )


@functools.cache
def shell_commands() -> st.SearchStrategy[str]:
    """One line of valid shell, with user text inside a quoted word."""
    fixed = st.sampled_from(
        [
            "hostname",
            "true",
            "nproc",
            "sleep 1",
            "echo hello world from $(hostname)",
            "env | sort",
            'printf "%s\\n" "a b"',
            "lmp -v x 2 -in in.reaxc.hns -nocite",
            "FLUX_CUSTOM_SCRIPT",
            "FLUX_BATCH_SCRIPT",
            "python3 -c 'print(1)'",
            "echo $FLUX_URI && flux resource list",
        ]
    )
    echo = unicode_text(max_size=20).map(lambda s: f"echo {shlex.quote(s)}")
    return st.one_of(fixed, echo)


@functools.cache
def shell_blocks(max_lines: int = 3) -> st.SearchStrategy[str]:
    return st.lists(shell_commands(), min_size=1, max_size=max_lines).map("\n".join)


# --- pieces of a spec -----------------------------------------------------------------------


@st.composite
def volume_sources(draw: st.DrawFn) -> dict[str, Json]:
    """One volume's source, without its mount path (paths are per container)."""
    kind = draw(
        st.sampled_from(["csi", "secret", "emptyDir", "hostPath", "configMap", "claim", "scratch"])
    )
    out: dict[str, Json] = {}
    if kind == "csi":
        out["csiDriver"] = draw(dns_subdomains())
        if attrs := draw(st.dictionaries(dns_labels(1, 10), unicode_text(), max_size=2)):
            out["csiDriverAttributes"] = attrs
    elif kind in ("secret", "configMap"):
        out["secretName" if kind == "secret" else "configMapName"] = draw(dns_subdomains())
        keys = st.text(LOWER + LOWER.upper() + DIGITS + "-._", min_size=1, max_size=12).filter(
            lambda s: s not in (".", "..")
        )
        if items := draw(st.dictionaries(keys, rel_paths(), max_size=2)):
            out["items"] = items
    elif kind == "emptyDir":
        out["emptyDir"] = True
        if draw(st.booleans()):
            out["emptyDirMedium"] = draw(st.sampled_from(["", "memory", "Memory", "default"]))
        if draw(st.booleans()):
            out["emptyDirSizeLimit"] = draw(st.sampled_from(["1Gi", "64Mi", 1024, "500M"]))
    elif kind == "hostPath":
        out["hostPath"] = draw(abs_paths(("/data", "/mnt/disks", "/var/lib/flux-data")))
    elif kind == "claim":
        out["claimName"] = draw(dns_subdomains())
    return out


@dataclass
class VolumePool:
    """Pod-level volume definitions that containers mount at paths of their own."""

    sources: dict[str, dict[str, Json]] = field(default_factory=dict)


@st.composite
def container_volumes(draw: st.DrawFn, pool: VolumePool) -> dict[str, Json]:
    """Volumes of one container: some new, some shared with earlier containers (same source)."""
    names = draw(st.lists(dns_labels(1, 12), max_size=3, unique=True))
    if pool.sources:
        names += draw(st.lists(st.sampled_from(sorted(pool.sources)), max_size=2, unique=True))
    names = list(dict.fromkeys(names))
    paths = draw(st.lists(abs_paths(), min_size=len(names), max_size=len(names), unique=True))
    out: dict[str, Json] = {}
    shm_taken = False
    for name, path in zip(names, paths, strict=True):
        source = pool.sources.get(name)
        if source is None:
            source = draw(volume_sources())
            pool.sources[name] = source
        volume = dict(source)
        # An emptyDir without a path is mounted at /dev/shm: at most one per container.
        if volume.get("emptyDir") and not shm_taken and draw(st.booleans()):
            shm_taken = True
        else:
            volume["path"] = path
        if draw(st.booleans()):
            volume["readOnly"] = True
        out[name] = volume
    return out


@functools.cache
def resources() -> st.SearchStrategy[dict[str, Json]]:
    """A container's requests and limits; a request is at most its limit (the API server refuses
    more, and so does validation), so a larger request is lowered to the limit."""
    amounts = st.dictionaries(st.sampled_from(["cpu", "memory"]), quantities(), max_size=2)
    drawn = st.fixed_dictionaries({}, optional={"limits": amounts, "requests": amounts})
    return drawn.map(_requests_within_limits)


def _requests_within_limits(resources: dict[str, Json]) -> dict[str, Json]:
    from flux_minicluster.core.kube.quantity import parse_quantity

    limits = resources.get("limits", {})
    for name, request in resources.get("requests", {}).items():
        if name in limits and parse_quantity(request) > parse_quantity(limits[name]):
            resources["requests"][name] = limits[name]
    return resources


@functools.cache
def security_contexts() -> st.SearchStrategy[dict[str, Json]]:
    return st.fixed_dictionaries(
        {},
        optional={
            "runAsUser": st.integers(0, 65535),
            "runAsNonRoot": st.booleans(),
            "privileged": st.booleans(),
            "readOnlyRootFilesystem": st.booleans(),
            "capabilities": st.fixed_dictionaries(
                {}, optional={"add": st.lists(st.sampled_from(["SYS_PTRACE", "IPC_LOCK"]))}
            ),
        },
    )


@functools.cache
def images() -> st.SearchStrategy[str]:
    return st.sampled_from(
        [
            "ubuntu:24.04",
            "ghcr.io/converged-computing/metric-lammps:2024.05",
            "registry.example.com:5000/team/app@sha256:" + "a" * 64,
            "busybox",
        ]
    )


@st.composite
def commands_block(draw: st.DrawFn, *, service: bool) -> dict[str, Json]:
    keys = ["init", "post", "servicePre"] if service else ["init", "pre", "brokerPre", "workerPre"]
    keys += ["post"] if not service else []
    out: dict[str, Json] = {}
    for key in draw(st.lists(st.sampled_from(keys), unique=True, max_size=3)):
        out[key] = draw(shell_blocks(2))
    if not service and draw(st.booleans()):
        out["prefix"] = draw(st.sampled_from(["time", "strace -f", "numactl --interleave=all"]))
    return out


@st.composite
def sidecar(draw: st.DrawFn, name: str, pool: VolumePool) -> dict[str, Json]:
    c: dict[str, Json] = {"name": name, "image": draw(images())}
    style = draw(st.sampled_from(["wrapped", "runs-own", "script"]))
    if style == "runs-own":
        c["noWrapEntrypoint"] = True
    if style in ("wrapped", "runs-own") and draw(st.booleans()):
        c["command"] = draw(shell_commands())
    if style == "script":
        c["commands"] = {"script": draw(shell_blocks())}
    elif draw(st.booleans()):
        c["commands"] = draw(commands_block(service=True))
    if ports := draw(st.lists(st.integers(1, 65535), unique=True, max_size=3)):
        c["ports"] = ports
    if env := draw(environments(shell=False)):
        c["environment"] = env
    if volumes := draw(container_volumes(pool)):
        c["volumes"] = volumes
    if draw(st.booleans()):
        c["workingDir"] = draw(abs_paths())
    return c


@st.composite
def service_container(draw: st.DrawFn, name: str, pool: VolumePool) -> dict[str, Json]:
    c: dict[str, Json] = {"name": name, "image": draw(images())}
    if draw(st.booleans()):
        c["command"] = draw(shell_commands())
    if ports := draw(st.lists(st.integers(1, 65535), unique=True, max_size=2)):
        c["ports"] = ports
    if env := draw(environments(shell=False)):
        c["environment"] = env
    if volumes := draw(container_volumes(pool)):
        c["volumes"] = volumes
    if draw(st.booleans()):
        c["commands"] = draw(commands_block(service=True))
    return c


MODES = ("batch", "launcher", "submit", "script", "interactive", "none")


@st.composite
def flux_container(draw: st.DrawFn, mode: str, pool: VolumePool) -> dict[str, Json]:  # noqa: C901
    c: dict[str, Json] = {"image": draw(images())}
    commands: dict[str, Json] = draw(commands_block(service=False))
    if mode == "batch":
        c["batch"] = True
        c["command"] = draw(shell_blocks(4))
        if draw(st.booleans()):
            c["batchRaw"] = True
        if draw(st.booleans()):
            c["logs"] = draw(abs_paths())
    elif mode == "launcher":
        c["launcher"] = True
        c["command"] = draw(shell_commands())
    elif mode == "submit":
        c["command"] = draw(shell_commands())
    elif mode == "script":
        commands["script"] = draw(shell_blocks(4))
    elif mode == "interactive" and draw(st.booleans()):
        c["command"] = draw(shell_commands())
    if commands:
        c["commands"] = commands
    if env := draw(environments(shell=False)):
        c["environment"] = env
    if volumes := draw(container_volumes(pool)):
        c["volumes"] = volumes
    if draw(st.booleans()):
        c["workingDir"] = draw(abs_paths())
    if draw(st.booleans()):
        c["resources"] = draw(resources())
    if draw(st.booleans()):
        c["securityContext"] = draw(security_contexts())
    if draw(st.booleans()):
        c["pullAlways"] = True
    if draw(st.booleans()):
        c["lifeCycle"] = {"postStartExec": draw(shell_commands())}
    return c


@st.composite
def pod_fields(draw: st.DrawFn) -> dict[str, Json]:
    pod: dict[str, Json] = {}
    if labels := draw(st.dictionaries(label_keys(), label_values(), max_size=3)):
        pod["labels"] = labels
    if annotations := draw(st.dictionaries(label_keys(), unicode_text(), max_size=3)):
        pod["annotations"] = annotations
    if draw(st.booleans()):
        pod["restartPolicy"] = draw(st.sampled_from(["OnFailure", "Never"]))
    if draw(st.booleans()):
        pod["serviceAccountName"] = draw(dns_subdomains())
    if draw(st.booleans()):
        pod["automountServiceAccountToken"] = draw(st.booleans())
    if draw(st.booleans()):
        pod["schedulerName"] = draw(st.sampled_from(["default-scheduler", "fluence"]))
    if selector := draw(st.dictionaries(label_keys(), label_values(), max_size=2)):
        pod["nodeSelector"] = selector
    if affinity := draw(
        st.dictionaries(
            label_keys(), st.lists(dns_labels(1, 20), min_size=1, max_size=2), max_size=2
        )
    ):
        pod["nodeAffinity"] = affinity
    if draw(st.booleans()):
        pod["tolerations"] = [
            {"key": draw(label_keys()), "operator": "Exists", "effect": "NoSchedule"},
            {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present"},
        ][: draw(st.integers(1, 2))]
    if draw(st.booleans()):
        pod["dnsPolicy"] = draw(st.sampled_from(["ClusterFirst", "ClusterFirstWithHostNet"]))
    if draw(st.booleans()):
        # Pod overhead is only admitted together with a RuntimeClass.
        pod["runtimeClassName"] = draw(dns_labels(1, 12))
        if draw(st.booleans()):
            pod["resources"] = draw(
                st.dictionaries(st.sampled_from(["cpu", "memory"]), quantities(), min_size=1)
            )
    if draw(st.booleans()):
        pod["securityContext"] = {"fsGroup": draw(st.integers(0, 65535))}
    if draw(st.booleans()):
        pod["hostIPC"] = draw(st.booleans())
    return pod


# --- whole documents ------------------------------------------------------------------------


@dataclass(frozen=True)
class HostBlock:
    """``count`` hosts ``<prefix><start>``, ``<prefix><start+1>``...; no ``start``: one literal."""

    prefix: str
    start: int | None = None
    count: int = 1

    def hosts(self) -> Iterator[str]:
        if self.start is None:
            yield self.prefix
        else:
            for i in range(self.start, self.start + self.count):
                yield f"{self.prefix}{i}"


@dataclass(frozen=True)
class SpecCase:
    """A valid MiniCluster document and the ranks (hosts, in order) its brokers must agree on."""

    doc: dict[str, Json]
    hosts: tuple[HostBlock, ...]
    mode: str

    @property
    def name(self) -> str:
        return str(self.doc["metadata"]["name"])

    def expected_hosts(self) -> list[str]:
        return [h for block in self.hosts for h in block.hosts()]


@functools.cache
def sizes() -> st.SearchStrategy[tuple[int, int]]:
    """``(size, maxSize)``: mostly small clusters, sometimes up to the Indexed Job limit."""
    max_size = st.one_of(
        st.integers(1, 8),
        st.integers(1, 8),
        st.sampled_from([1, 64, 1024, 16384, 65536, MAX_INDEXED]),
        st.integers(1, MAX_INDEXED),
    )
    return max_size.flatmap(lambda m: st.tuples(st.integers(1, min(m, 8)) | st.just(m), st.just(m)))


@st.composite
def spec_cases(draw: st.DrawFn, *, custom_hostlists: bool = True) -> SpecCase:  # noqa: C901
    size, max_size = draw(sizes())
    has_services = draw(st.integers(0, 3)) == 0
    # Host names <name>-<maxSize-1> (and <name>-services) must stay DNS labels.
    room = 63 - len(f"-{max_size - 1}")
    if has_services:
        room = min(room, 63 - len("-services"))
    name = draw(dns_labels(1, min(room, 30)))
    namespace = draw(dns_labels(1, 20))
    mode = draw(st.sampled_from(MODES))
    pool = VolumePool()
    # The flux view init container and the Flux container (named after the MiniCluster) are
    # containers of one pod: their names differ.
    view_name = draw(st.sampled_from([v for v in ("flux-view", "view") if v != name]))
    reserved = {name, view_name, f"{name}-services", f"{name}-entrypoint", f"{name}-curve"}

    flux = draw(flux_container(mode, pool))
    containers = [flux]
    side_names = draw(
        st.lists(dns_labels(1, 15).filter(lambda n: n not in reserved), max_size=2, unique=True)
    )
    if side_names:
        flux["runFlux"] = True
        containers += [draw(sidecar(n, pool)) for n in side_names]
        containers = draw(st.permutations(containers))
    # Volume names must not shadow the MiniCluster's own pod volumes.
    for c in containers:
        for vname in list(c.get("volumes", {})):
            if vname in reserved or vname in (
                "spack-software",
                "flux-operator-home",
                "curve-cert",
                "flux-output",
            ):
                del c["volumes"][vname]
        if "volumes" in c and not c["volumes"]:
            del c["volumes"]

    spec: dict[str, Json] = {"size": size, "containers": containers}
    if max_size != size or draw(st.booleans()):
        spec["maxSize"] = max_size
    if draw(st.booleans()):
        spec["minSize"] = draw(st.integers(0, size))
    if draw(st.booleans()):
        spec["tasks"] = draw(st.integers(0, size * 4))
    if mode == "interactive":
        spec["interactive"] = True
    if has_services:
        snames = draw(st.lists(dns_labels(1, 12), min_size=1, max_size=2, unique=True))
        # The services share one Pod, so one set of volume definitions, apart from the Job's.
        services_pool = VolumePool()
        spec["services"] = [draw(service_container(n, services_pool)) for n in snames]
    for key, strategy in (
        ("deadlineSeconds", st.integers(1, 31_500_000)),
        ("backoffLimit", st.integers(0, 1000)),
        ("cleanup", st.booleans()),
        ("shareProcessNamespace", st.booleans()),
        ("jobLabels", st.dictionaries(label_keys(), label_values(), max_size=2)),
        (
            "logging",
            st.fixed_dictionaries(
                {},
                optional={
                    k: st.booleans() for k in ("quiet", "strict", "debug", "zeromq", "timed")
                },
            ),
        ),
        ("archive", abs_paths().map(lambda p: {"path": p})),
        ("network", st.fixed_dictionaries({}, optional={"disableAffinity": st.booleans()})),
        ("pod", pod_fields()),
    ):
        if draw(st.booleans()):
            spec[key] = draw(strategy)

    flux_spec, hosts = draw(flux_options(name, size, max_size, view_name, custom_hostlists))
    if flux_spec:
        spec["flux"] = flux_spec
    metadata: dict[str, Json] = {"name": name, "namespace": namespace}
    if labels := draw(st.dictionaries(label_keys(), label_values(), max_size=2)):
        metadata["labels"] = labels
    doc = {
        "apiVersion": "flux-framework.org/v1alpha2",
        "kind": "MiniCluster",
        "metadata": metadata,
        "spec": spec,
    }
    return SpecCase(doc=doc, hosts=hosts, mode=mode)


@st.composite
def flux_options(
    draw: st.DrawFn, name: str, size: int, max_size: int, view_name: str, custom_hostlists: bool
) -> tuple[dict[str, Json], tuple[HostBlock, ...]]:
    """``spec.flux`` and the hosts, in rank order, that the broker config must list."""
    flux: dict[str, Json] = {}
    container: dict[str, Json] = {}
    if view_name != "flux-view":
        container["name"] = view_name
    if draw(st.booleans()):
        container["mountPath"] = draw(st.sampled_from(VIEW_MOUNTS))
    if draw(st.booleans()):
        container["pythonPath"] = draw(abs_paths(("/usr/lib/python3", "/opt/py")))
    if draw(st.booleans()):
        container["disable"] = draw(st.booleans())
    if container:
        flux["container"] = container
    options = {
        "connectTimeout": st.sampled_from(["5s", "500ms", "2m", "1.5h", ""]),
        "topology": st.sampled_from(["kary:2", "binomial", "mincrit", "mincrit:4"]),
        "logLevel": st.integers(0, 7),
        "optionFlags": st.sampled_from(["-o cpu-affinity=per-task", "--setattr=user.x=1"]),
        "wrap": unicode_text(1, 20),
        "submitCommand": st.just("flux submit"),
        "minimalService": st.booleans(),
        "disableSocket": st.booleans(),
        "noWaitSocket": st.booleans(),
        "completeWorkers": st.booleans(),
        "scheduler": st.fixed_dictionaries(
            {},
            optional={
                "simple": st.booleans(),
                "queuePolicy": st.sampled_from(["fcfs", "easy", "conservative", "hybrid"]),
            },
        ),
        "environment": environments(shell=True),
    }
    for key in draw(st.lists(st.sampled_from(sorted(options)), unique=True, max_size=6)):
        flux[key] = draw(options[key])

    own = HostBlock(f"{name}-", 0, max_size)
    role = draw(st.sampled_from(["standalone", "standalone", "root", "child", "custom"]))
    others = st.lists(
        dns_labels(1, 20).filter(lambda n: n != name), min_size=1, max_size=3, unique=True
    )
    if role == "custom" and custom_hostlists and max_size <= CUSTOM_HOSTLIST_MAX:
        extra = draw(others)
        text = f"{name}-[0-{max_size - 1}]" if max_size > 1 else f"{name}-0"
        text += "".join(f",{e}-[0-3]" for e in extra)
        flux["bursting"] = {"hostlist": text}
        return flux, (own, *(HostBlock(f"{e}-", 0, 4) for e in extra))
    if role in ("standalone", "custom"):
        return flux, (own,)
    if role == "root":
        clusters = []
        hosts = [own]
        for cname in draw(others):
            entry: dict[str, Json] = {"name": cname}
            csize = size
            if draw(st.booleans()):
                csize = draw(st.integers(1, 5000))
                entry["size"] = csize
            clusters.append(entry)
            hosts.append(HostBlock(f"{cname}-", 0, csize))
        flux["bursting"] = {"clusters": clusters}
        return flux, tuple(hosts)
    # A bursted child: the lead's rank 0 by its address, the lead's other ranks, then the
    # clusters the lead declares, this one among them.
    lead_name = draw(dns_labels(1, 20).filter(lambda n: n != name))
    lead_size = draw(st.integers(1, 64))
    address = draw(
        st.one_of(
            st.tuples(*[st.integers(1, 254)] * 4).map(lambda t: ".".join(map(str, t))),
            dns_subdomains(),
        )
    )
    lead: dict[str, Json] = {"address": address, "name": lead_name, "size": lead_size}
    if draw(st.booleans()):
        lead["port"] = draw(st.integers(1, 65535))
    before = [n for n in draw(others) if n != lead_name]
    clusters = [{"name": n, "size": draw(st.integers(1, 16))} for n in before]
    position = draw(st.integers(0, len(clusters)))
    clusters.insert(position, {"name": name, "size": max_size})
    flux["bursting"] = {"leadBroker": lead, "clusters": clusters}
    hosts = [HostBlock(address)]
    if lead_size > 1:
        hosts.append(HostBlock(f"{lead_name}-", 1, lead_size - 1))
    hosts += [HostBlock(f"{c['name']}-", 0, c["size"]) for c in clusters]
    return flux, tuple(hosts)


# --- broken on purpose ----------------------------------------------------------------------


def paths_of(value: Json, prefix: TreePath = ()) -> Iterator[TreePath]:
    """Every path into a JSON-like tree, parents before children."""
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from paths_of(item, (*prefix, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from paths_of(item, (*prefix, i))


def get_at(value: Json, path: TreePath) -> Json:
    for part in path:
        value = value[part]
    return value


def strings_of(value: Json) -> list[str]:
    return [v for p in paths_of(value) if isinstance(v := get_at(value, p), str)]


def _model_fields(module: Any) -> set[str]:
    """The class names and field spellings (name and alias) of a module's pydantic models."""
    import inspect

    from pydantic import BaseModel

    models = [
        m
        for _, m in inspect.getmembers(module, inspect.isclass)
        if issubclass(m, BaseModel) and m.__module__ == module.__name__
    ]
    fields = {name for m in models for n, f in m.model_fields.items() for name in (n, f.alias)}
    return {f for f in fields if f} | {m.__name__ for m in models}


# Kubernetes objects whose field names a user may carry over into a MiniCluster spec by habit
# (``resources`` or ``env`` on a container, ``nodeSelector`` on the spec, ``labels`` anywhere).
KUBE_SCHEMAS = ("container-v1", "podspec-v1", "objectmeta-meta-v1", "jobspec-batch-v1")


def _kube_fields() -> set[str]:
    import json
    from importlib.resources import files

    from flux_minicluster.core.kube import kubeversion

    schemas = files("kubernetes_validate") / "kubernetes-json-schema"
    folder = schemas / f"v{kubeversion.DEFAULT}.0-local-strict"
    return {
        name
        for schema in KUBE_SCHEMAS
        for name in json.loads((folder / f"{schema}.json").read_text())["properties"]
    }


def _unknown_key_alphabet() -> list[str]:
    """Keys a user might write where no field has that name: Python's type names and builtins,
    the names pydantic gives union members and validators in its errors, the models' class
    names and every field of every model (each valid somewhere, so unknown elsewhere), the
    older operator API's fields (v1alpha1: ``preCommand``, ``fluxRestful``, ``installRoot``...)
    and the fields of the Kubernetes objects a MiniCluster becomes."""
    import builtins

    from flux_minicluster.core.spec import models as spec
    from flux_minicluster.core.spec import v1alpha1

    tags = {
        "int", "float", "str", "bool", "bytes", "list", "dict", "tuple", "set", "None",
        "none", "null", "true", "false", "function-after", "function-before",
        "function-wrap", "function-plain", "constrained-str", "constrained-int", "nullable",
        "tagged-union", "json-or-python", "lax-str", "literal['x']", "list[int]",
        "dict[str,int]", "is-instance[int]", "[key]", "0", "-1", "__class__", "__dict__",
        "model_config", "model_fields", "apiVersion", "kind", "metadata", "spec", "status",
    }  # fmt: skip
    return sorted(
        set(dir(builtins)) | tags | _model_fields(spec) | _model_fields(v1alpha1) | _kube_fields()
    )


UNKNOWN_KEYS: list[str] = _unknown_key_alphabet()


def unknown_keys() -> st.SearchStrategy[str]:
    """A key from the wide alphabet above, or any text at all."""
    return st.sampled_from(UNKNOWN_KEYS) | hostile_text()


WRONG_TYPES: list[Json] = [None, True, 0, -1, 1.5, "", "x", [], {}, [1, "a"], {"a": 1}]
OUT_OF_RANGE: list[Json] = [0, -1, -(2**31), 2**31, 2**63, 10**30, 100_001, 65536, 1 << 20]


@functools.cache
def hostile_text() -> st.SearchStrategy[str]:
    """Anything at all, control characters and NUL included (never lone surrogates: YAML and
    JSON cannot carry them, so no user file can hold one)."""
    return st.one_of(
        st.text(st.characters(exclude_categories=["Cs"]), max_size=40),
        st.sampled_from(
            [
                "",
                " ",
                "$(touch pwned)",
                "`touch pwned`",
                "'; touch pwned; '",
                '"; touch pwned; "',
                "a\nb",
                "\x00",
                "\u202eevil\u202c",
                "🚀",
                "../../etc/passwd",
                "-rf",
                "x" * 300,
            ]
        ),
    )


@dataclass(frozen=True)
class Mutated:
    """A broken document (or YAML text) and the paths whose values were changed."""

    doc: Json
    text: str | None
    touched: tuple[TreePath, ...]

    def touches_shell_text(self) -> bool:
        """True when a mutation may have put arbitrary text where shell code belongs.

        ``()`` stands for a change made to the YAML text, which may land anywhere.
        """
        return any(not path or any(str(p) in SHELL_FIELDS for p in path) for path in self.touched)


def _set(doc: Json, path: TreePath, value: Json) -> Json:
    if not path:
        return value
    parent = get_at(doc, path[:-1])
    parent[path[-1]] = value
    return doc


@st.composite
def _mutation(draw: st.DrawFn, doc: Json) -> tuple[Json, TreePath]:
    paths = [p for p in paths_of(doc) if p]
    if not paths:
        return copy.deepcopy(draw(st.sampled_from(WRONG_TYPES))), ()
    path = draw(st.sampled_from(paths))
    parent = get_at(doc, path[:-1])
    current = get_at(doc, path)
    kind = draw(
        st.sampled_from(
            [
                *("drop", "rename", "wrong-type", "range", "text", "append", "copy"),
                *("duplicate", "unknown-key"),
            ]
        )
    )
    if kind == "unknown-key":
        # A key nobody reads, at any level (the document, spec, a container, a mapping...).
        mappings = [p for p in [(), *paths] if isinstance(get_at(doc, p), dict)]
        where = draw(st.sampled_from(mappings))
        key = draw(unknown_keys())
        target = get_at(doc, where)
        if key not in target:
            target[key] = copy.deepcopy(draw(st.sampled_from(WRONG_TYPES)))
            return doc, (*where, key)
    if kind == "drop":
        if isinstance(parent, dict):
            del parent[path[-1]]
        else:
            parent.pop(path[-1])
        return doc, path
    if kind == "append" and isinstance(current, str):
        # Keeps what the value starts with: an absolute path stays absolute, so the hostile
        # part reaches the renderer instead of stopping at the first rule.
        return _set(doc, path, current + draw(hostile_text())), path
    if kind == "rename" and isinstance(parent, dict):
        key = path[-1]
        new = draw(
            st.one_of(
                st.just(str(key).lower()),
                st.just(str(key) + "s"),
                st.just(str(key)[:-1]),
                st.just(str(key).replace("Size", "_size")),
                unknown_keys(),
            )
        )
        if new not in parent:
            parent[new] = parent.pop(key)
        return doc, (*path[:-1], new)
    if kind == "duplicate" and isinstance(parent, list):
        parent.append(copy.deepcopy(current))
        return doc, (*path[:-1], len(parent) - 1)
    if kind == "range" and isinstance(current, int) and not isinstance(current, bool):
        return _set(doc, path, draw(st.sampled_from(OUT_OF_RANGE))), path
    if kind == "copy":
        others = strings_of(doc)
        if others:
            return _set(doc, path, draw(st.sampled_from(others))), path
    if kind == "text" or isinstance(current, str):
        return _set(doc, path, draw(hostile_text())), path
    return _set(doc, path, copy.deepcopy(draw(st.sampled_from(WRONG_TYPES)))), path


def _duplicate_line(text: str, line: int) -> str:
    lines = text.split("\n")
    keyed = [i for i, ln in enumerate(lines) if ":" in ln and not ln.lstrip().startswith("- ")]
    if not keyed:
        return text
    i = keyed[line % len(keyed)]
    lines.insert(i + 1, lines[i])
    return "\n".join(lines)


def dump_yaml(doc: Json) -> str:
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=1 << 16)


@st.composite
def mutated_cases(draw: st.DrawFn, base: st.SearchStrategy[SpecCase] | None = None) -> Mutated:
    """A valid document broken by one to three mutations, sometimes at the YAML text level."""
    case = draw(base if base is not None else spec_cases(custom_hostlists=False))
    doc: Json = copy.deepcopy(case.doc)
    touched: list[TreePath] = []
    for _ in range(draw(st.sampled_from([1, 1, 1, 2, 3]))):
        doc, path = draw(_mutation(doc))
        touched.append(path)
    text = None
    if draw(st.integers(0, 4)) == 0:
        # Duplicate a `key: value` line: the same key twice in one mapping.
        text = _duplicate_line(dump_yaml(doc), draw(st.integers(0, 10_000)))
        touched.append(())
    return Mutated(doc=doc, text=text, touched=tuple(touched))


# --- hostile YAML: the real examples, attacked where a careful attacker would --------------------


@dataclass(frozen=True)
class Tagged:
    """A scalar written with an explicit tag (``!!int abc``), whatever its text reads as."""

    tag: str
    text: str


class _HostileDumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
    """SafeDumper (libyaml's emitter: a file of 25,000 keys is written in a tenth of the time)
    that writes ``Tagged`` scalars with their tag (a shared or self-holding value is written as
    an anchor and aliases, as SafeDumper always does)."""


_HostileDumper.add_representer(
    Tagged, lambda dumper, value: dumper.represent_scalar(value.tag, value.text)
)

# Tags a hand-written or generated file may carry, the JSON ones included (with literals that
# do and do not read as them), and the literals PyYAML's patterns accept but cannot read.
TAGS = [f"tag:yaml.org,2002:{t}" for t in ("str", "int", "float", "bool", "null")] + [
    f"tag:yaml.org,2002:{t}" for t in ("timestamp", "binary", "set", "omap", "merge", "value")
]
TAG_LITERALS = ["abc", "maybe", "0x", "0x_", "0b_", "._", "nope", "1", "1.5", "true", "~", ""]
CONTROL = "".join(chr(c) for c in (*range(0x20), 0x7F, 0x85, 0x2028, 0x2029, 0xFEFF))


@functools.cache
def example_documents() -> list[Json]:
    """The bundled examples as plain values (every document of each)."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "examples"
    return [
        doc
        for path in sorted(root.glob("*.yaml"))
        for doc in yaml.safe_load_all(path.read_text())
        if isinstance(doc, dict)
    ]


@st.composite
def _attack(draw: st.DrawFn, doc: Json, *, kinds: tuple[str, ...]) -> Json:
    """One attack on ``doc`` (changed in place where it can be): an alias to a value or to a
    collection from inside itself, a tagged literal, deep nesting, thousands of keys, or
    control characters in every string."""
    paths = [p for p in paths_of(doc) if p]
    containers = [p for p in [(), *paths] if isinstance(get_at(doc, p), dict | list)]
    kind = draw(st.sampled_from(kinds))
    if kind == "control":  # in any string field, or in all of them
        char = st.sampled_from(CONTROL)
        every = draw(st.booleans())
        for path in [p for p in paths if isinstance(get_at(doc, p), str)]:
            if every or draw(st.integers(0, 3)) == 0:
                value = get_at(doc, path)
                at = draw(st.integers(0, len(value)))
                _set(doc, path, value[:at] + draw(char) + value[at:])
        return doc
    if kind == "many-keys":
        target = get_at(doc, draw(st.sampled_from([p for p in containers if p != ()] or [()])))
        count = draw(_sizes(small=(1, 10, 100), large=(1_000, 9_000, 25_000)))
        if isinstance(target, dict):
            target.update({f"k{i}": i for i in range(count)})
        else:
            target.extend(range(count))
        return doc
    if not paths:
        return doc
    path = draw(st.sampled_from(paths))
    if kind == "alias":  # the same value again elsewhere: an anchor and an alias
        # inside itself (a cycle) only as the last attack: no walk of the tree ends after it.
        # Inside is by identity, not by path: an earlier alias makes one value reachable by two.
        value = get_at(doc, path)
        held = {id(get_at(value, p)) for p in paths_of(value)}
        places = [p for p in paths if "cycle" in kinds or id(get_at(doc, p[:-1])) not in held]
        return _set(doc, draw(st.sampled_from(places)), value) if places else doc
    if kind == "cycle":  # a collection holding itself
        where = draw(st.sampled_from(containers))
        target = get_at(doc, where)
        if isinstance(target, dict):
            target[draw(unknown_keys())] = target
        else:
            target.append(target)
        return doc
    if kind == "tag":
        text = draw(st.sampled_from(TAG_LITERALS) | hostile_text())
        return _set(doc, path, Tagged(draw(st.sampled_from(TAGS)), text))
    depth = draw(_sizes(small=(2, 63, 64, 65), large=(200, 5_000)))
    # one draw for the shape of every level (a list or a map, by the bits of `shape`): a draw
    # per level made hypothesis's own bookkeeping most of an input's cost
    shape = draw(st.integers(0, 2**16 - 1))
    value = get_at(doc, path)
    for level in range(depth):
        value = {"a": value} if shape >> (level % 16) & 1 else [value]
    return _set(doc, path, value)


def _sizes(*, small: tuple[int, ...], large: tuple[int, ...]) -> st.SearchStrategy[int]:
    """A size, large one time in a hundred: most inputs stay cheap enough for `make fuzz` to
    try 100,000 of them within half an hour on two cores, and the large ones still come by the
    thousand."""
    return st.integers(0, 99).flatmap(lambda roll: st.sampled_from(large if roll == 0 else small))


@dataclass(frozen=True)
class Attacked:
    """An attacked example as plain values (what a program may hand the component) and as the
    YAML text a file would hold."""

    doc: Json
    text: str


@st.composite
def attacked_examples(draw: st.DrawFn) -> Attacked:
    """An example spec, attacked one to three times (a nesting too deep for PyYAML's own
    writer is written by hand)."""
    doc = copy.deepcopy(draw(st.sampled_from(example_documents())))
    for _ in range(draw(st.integers(0, 2))):
        doc = draw(_attack(doc, kinds=("alias", "tag", "many-keys", "control")))
    # last, as no walk of the tree ends after it
    doc = draw(_attack(doc, kinds=("alias", "cycle", "tag", "deep", "many-keys", "control")))
    try:
        text = yaml.dump(doc, Dumper=_HostileDumper, sort_keys=False, allow_unicode=True)
    except RecursionError:
        text = "x: " + "[" * 5_000 + "]" * 5_000 + "\n"
    return Attacked(doc, text)
