"""What the kubelet prepares for a container before it runs: volumes on disk (the AtomicWriter
layout of configMap/secret/downwardAPI/projected volumes, emptyDir, hostPath, PVCs as
directories), the environment ($(VAR) expansion, valueFrom, envFrom) and the securityContext as
containerd and runc apply it. Stdlib only; adapted from ../shared/tools/podsim.py (written for
this project), reading ConfigMaps, Secrets and service-account tokens from the API server.
"""

from __future__ import annotations

import base64
import datetime
import grp
import math
import os
import pwd
import re
import stat
from collections.abc import Callable
from typing import Any

CLEAN_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# Linux capability numbers, and the set containerd gives a container that asks for nothing
CAPS = [
    "CHOWN", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "FSETID", "KILL", "SETGID", "SETUID",
    "SETPCAP", "LINUX_IMMUTABLE", "NET_BIND_SERVICE", "NET_BROADCAST", "NET_ADMIN", "NET_RAW",
    "IPC_LOCK", "IPC_OWNER", "SYS_MODULE", "SYS_RAWIO", "SYS_CHROOT", "SYS_PTRACE", "SYS_PACCT",
    "SYS_ADMIN", "SYS_BOOT", "SYS_NICE", "SYS_RESOURCE", "SYS_TIME", "SYS_TTY_CONFIG", "MKNOD",
    "LEASE", "AUDIT_WRITE", "AUDIT_CONTROL", "SETFCAP", "MAC_OVERRIDE", "MAC_ADMIN", "SYSLOG",
    "WAKE_ALARM", "BLOCK_SUSPEND", "AUDIT_READ", "PERFMON", "BPF", "CHECKPOINT_RESTORE",
]  # fmt: skip
DEFAULT_CAPS = [
    "CHOWN", "DAC_OVERRIDE", "FSETID", "FOWNER", "MKNOD", "NET_RAW", "SETGID", "SETUID",
    "SETFCAP", "SETPCAP", "NET_BIND_SERVICE", "SYS_CHROOT", "KILL", "AUDIT_WRITE",
]  # fmt: skip
# The volume types whose ownership the kubelet hands to the pod's fsGroup
FS_GROUP_KINDS = ("emptyDir", "configMap", "secret", "downwardAPI", "projected")


class PodError(Exception):
    """The pod cannot start as specified (the kubelet would report it and retry)."""


def expand(text: str, mapping: dict[str, str]) -> str:
    """Kubernetes $(VAR) expansion: $(NAME) becomes its value when defined, else stays as
    written; $$ is a literal $."""
    out = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "$" and i + 1 < n:
            nxt = text[i + 1]
            if nxt == "$":
                out.append("$")
                i += 2
                continue
            if nxt == "(":
                close = text.find(")", i + 2)
                if close != -1:
                    name = text[i + 2 : close]
                    out.append(mapping.get(name, f"$({name})"))
                    i = close + 1
                    continue
        out.append(ch)
        i += 1
    return "".join(out)


_QTY = {
    "": 1, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
    "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60,
}  # fmt: skip


def parse_quantity(q: Any) -> float:
    m = re.fullmatch(r"\s*([0-9.]+(?:[eE][-+]?[0-9]+)?)\s*([a-zA-Z]*)\s*", str(q))
    if not m or m.group(2) not in _QTY:
        raise PodError(f"cannot parse resource quantity {q!r}")
    return float(m.group(1)) * _QTY[m.group(2)]


def data_of(obj: dict[str, Any], kind: str) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    if kind == "Secret":
        for k, v in (obj.get("data") or {}).items():
            out[k] = base64.b64decode(v)
        for k, v in (obj.get("stringData") or {}).items():
            out[k] = str(v).encode()
    else:
        for k, v in (obj.get("data") or {}).items():
            out[k] = str(v).encode()
        for k, v in (obj.get("binaryData") or {}).items():
            out[k] = base64.b64decode(v)
    return out


def check_relpath(p: str, where: str) -> str:
    parts = str(p).split("/")
    if not p or str(p).startswith("/") or ".." in parts:
        raise PodError(f"{where}: path {p!r} must be relative without '..'")
    return str(p)


def set_volume_ownership(path: str, gid: int, readonly: bool) -> None:
    """The kubelet's SetVolumeOwnership: group fsGroup on everything, group rw (ro: r), and the
    setgid bit on directories."""
    mask = 0o440 if readonly else 0o660
    for base, dirs, files in os.walk(path):
        links = [os.path.join(base, d) for d in dirs if os.path.islink(os.path.join(base, d))]
        for full in [base, *links] + [os.path.join(base, f) for f in files]:
            st = os.lstat(full)
            os.lchown(full, -1, gid)
            if stat.S_ISLNK(st.st_mode):
                continue
            extra = mask | (0o110 | stat.S_ISGID if stat.S_ISDIR(st.st_mode) else 0)
            os.chmod(full, stat.S_IMODE(st.st_mode) | extra)


# A getter: (kind, namespace, name) -> the object or None (404)
Getter = Callable[[str, str, str], "dict[str, Any] | None"]
# What a kubelet gives every container (from the `kubernetes` Service): the agent relays that
# address to the API server (agent.py's ApiProxy).
API_SERVICE_ENV = {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}

# A token maker: (namespace, service account, audience, expirationSeconds) -> token
TokenMaker = Callable[[str, str, "str | None", int], str]


class Preparer:
    """Everything for one pod: its volumes under ``state``, and each container's spec for
    container.py."""

    def __init__(
        self,
        pod: dict[str, Any],
        ip: str,
        node: str,
        state: str,
        pvc_root: str,
        get: Getter,
        token: TokenMaker,
    ) -> None:
        self.pod = pod
        self.meta = pod["metadata"]
        self.spec = pod["spec"]
        self.ns = self.meta["namespace"]
        self.ip = ip
        self.node = node
        self.state = state
        self.pvc_root = pvc_root
        self.get = get
        self.token = token
        self.volumes: dict[str, dict[str, Any]] = {}
        self.ts = datetime.datetime.now(datetime.UTC).strftime("..%Y_%m_%d_%H_%M_%S.000000001")

    # -- volume sources ---------------------------------------------------------------------
    def _atomic_dir(self, path: str, files: list[tuple[str, bytes, int]]) -> None:
        os.makedirs(path, mode=0o777, exist_ok=True)
        os.chmod(path, 0o777)
        real = os.path.join(path, self.ts)
        os.makedirs(real, mode=0o755)
        tops: list[str] = []
        for rel, data, mode in files:
            full = os.path.join(real, rel)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "wb") as f:
                f.write(data)
            os.chmod(full, mode)
            top = rel.split("/")[0]
            if top not in tops:
                tops.append(top)
        os.symlink(self.ts, os.path.join(path, "..data"))
        for top in tops:
            os.symlink(os.path.join("..data", top), os.path.join(path, top))

    def _project(
        self, data: dict[str, bytes], items: Any, mode: int, where: str, optional: bool
    ) -> list[tuple[str, bytes, int]]:
        files = []
        if items:
            for k, it in enumerate(items):
                key = it.get("key")
                if key not in data:
                    if optional:
                        continue
                    raise PodError(f"{where}: key {key!r} not found")
                rel = check_relpath(it.get("path", key), f"{where}.items[{k}]")
                m = it.get("mode")
                files.append((rel, data[key], mode if m is None else int(m)))
        else:
            for key, val in data.items():
                files.append((check_relpath(key, where), val, mode))
        return files

    def _source(
        self, kind: str, name: str, src: dict[str, Any], mode: int, where: str
    ) -> list[tuple[str, bytes, int]]:
        optional = bool(src.get("optional"))
        obj = self.get(kind, self.ns, name)
        if obj is None:
            if optional:
                return []
            raise PodError(f'{where}: {kind.lower()} "{name}" not found')
        return self._project(data_of(obj, kind), src.get("items"), mode, where, optional)

    def _downward(self, items: Any, mode: int, where: str) -> list[tuple[str, bytes, int]]:
        files = []
        for k, it in enumerate(items or []):
            rel = check_relpath(it.get("path"), f"{where}.items[{k}]")
            if it.get("fieldRef"):
                val = self.field_ref(it["fieldRef"].get("fieldPath", ""), where)
            else:
                val = self.resource_ref(None, it.get("resourceFieldRef") or {}, where)
            m = it.get("mode")
            files.append((rel, val.encode(), mode if m is None else int(m)))
        return files

    def prepare_volumes(self) -> None:
        base = os.path.join(self.state, "vol")
        psc = self.spec.get("securityContext") or {}
        for v in self.spec.get("volumes") or []:
            name = v["name"]
            where = f"volume {name}"
            path = os.path.join(base, name)
            ro = False
            kind = next((key for key in v if key != "name"), "emptyDir")
            src = v.get(kind) or {}
            mode = int(src.get("defaultMode", 0o644)) if isinstance(src, dict) else 0o644
            if kind == "configMap":
                self._atomic_dir(path, self._source("ConfigMap", src["name"], src, mode, where))
                ro = True
            elif kind == "secret":
                files = self._source("Secret", src["secretName"], src, mode, where)
                self._atomic_dir(path, files)
                ro = True
            elif kind == "downwardAPI":
                self._atomic_dir(path, self._downward(src.get("items"), mode, where))
                ro = True
            elif kind == "projected":
                files = []
                for s, source in enumerate(src.get("sources") or []):
                    w = f"{where} sources[{s}]"
                    if "configMap" in source:
                        cm = source["configMap"]
                        files += self._source("ConfigMap", cm["name"], cm, mode, w)
                    elif "secret" in source:
                        sec = source["secret"]
                        files += self._source("Secret", sec["name"], sec, mode, w)
                    elif "downwardAPI" in source:
                        files += self._downward(source["downwardAPI"].get("items"), mode, w)
                    elif "serviceAccountToken" in source:
                        tok = source["serviceAccountToken"]
                        sa = self.spec.get("serviceAccountName") or "default"
                        value = self.token(
                            self.ns,
                            sa,
                            tok.get("audience"),
                            int(tok.get("expirationSeconds", 3600)),
                        )
                        files.append((check_relpath(tok["path"], w), value.encode(), mode))
                    else:
                        raise PodError(f"{w}: projected source {list(source)} is not supported")
                self._atomic_dir(path, files)
                ro = True
            elif kind == "emptyDir":
                os.makedirs(path, exist_ok=True)
                os.chmod(path, 0o777)
            elif kind == "hostPath":
                path = self._host_path(src, where)
            elif kind == "persistentVolumeClaim":
                path = os.path.join(self.pvc_root, self.ns, src["claimName"])
                os.makedirs(path, exist_ok=True)
                os.chmod(path, 0o777)
                ro = bool(src.get("readOnly"))
            else:
                raise PodError(f"{where}: volume type {kind!r} is not supported by the node agent")
            self.volumes[name] = {"path": path, "kind": kind, "ro": ro}
            if psc.get("fsGroup") is not None and kind in FS_GROUP_KINDS:
                set_volume_ownership(path, int(psc["fsGroup"]), ro)

    def _host_path(self, hp: dict[str, Any], where: str) -> str:
        path = os.path.normpath(str(hp.get("path")))
        typ = hp.get("type") or ""
        exists = os.path.lexists(path)
        # type "" checks nothing, and the runtime creates a missing path as a directory
        if typ in ("", "DirectoryOrCreate") and not exists:
            os.makedirs(path, mode=0o755)
        elif typ == "FileOrCreate" and not exists:
            open(path, "a").close()
        elif typ and typ not in ("DirectoryOrCreate", "FileOrCreate"):
            checks = {
                "Directory": stat.S_ISDIR,
                "File": stat.S_ISREG,
                "Socket": stat.S_ISSOCK,
                "CharDevice": stat.S_ISCHR,
                "BlockDevice": stat.S_ISBLK,
            }
            if not exists or not checks[typ](os.stat(path).st_mode):
                raise PodError(f"{where}: hostPath {path} is not a {typ} on this node")
        return path

    # -- env ------------------------------------------------------------------------------------
    def field_ref(self, fp: str, where: str) -> str:
        m = re.fullmatch(r"metadata\.(labels|annotations)\['([^']+)'\]", fp)
        labels = self.meta.get("labels") or {}
        annotations = self.meta.get("annotations") or {}
        if m:
            d = labels if m.group(1) == "labels" else annotations
            return str(d.get(m.group(2), ""))
        simple = {
            "metadata.name": self.meta["name"],
            "metadata.namespace": self.ns,
            "metadata.uid": self.meta["uid"],
            "spec.nodeName": self.node,
            "spec.serviceAccountName": self.spec.get("serviceAccountName") or "default",
            "status.hostIP": self.ip,
            "status.hostIPs": self.ip,
            "status.podIP": self.ip,
            "status.podIPs": self.ip,
            "metadata.labels": "\n".join(f'{k}="{v}"' for k, v in sorted(labels.items())),
            "metadata.annotations": "\n".join(f'{k}="{v}"' for k, v in sorted(annotations.items())),
        }
        if fp not in simple:
            raise PodError(f"{where}: fieldRef {fp!r} is not supported")
        return simple[fp]

    def resource_ref(self, ctr: dict[str, Any] | None, rf: dict[str, Any], where: str) -> str:
        cname = rf.get("containerName")
        if cname:
            every = (self.spec.get("initContainers") or []) + self.spec["containers"]
            ctr = next((c for c in every if c["name"] == cname), None)
        if ctr is None:
            raise PodError(f"{where}: resourceFieldRef needs a containerName")
        kind, _, what = str(rf.get("resource", "")).partition(".")
        resources = ctr.get("resources") or {}
        val = (resources.get(kind) or {}).get(what)
        if val is None and kind == "requests":
            val = (resources.get("limits") or {}).get(what)
        if val is None:
            if kind == "limits" and what == "cpu":
                val = os.cpu_count() or 1
            elif kind == "limits" and what == "memory":
                val = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
            else:
                val = 0
        divisor = parse_quantity(rf.get("divisor", "1"))
        return str(math.ceil(parse_quantity(val) / divisor))

    def env(self, c: dict[str, Any]) -> dict[str, str]:
        env: dict[str, str] = {}
        for ef in c.get("envFrom") or []:
            kind = "ConfigMap" if "configMapRef" in ef else "Secret"
            ref = ef.get("configMapRef") or ef.get("secretRef") or {}
            obj = self.get(kind, self.ns, ref.get("name", ""))
            if obj is None:
                if ref.get("optional"):
                    continue
                missing = f'{kind.lower()} "{ref.get("name")}" not found'
                raise PodError(f"container {c['name']}: {missing}")
            for key, val in data_of(obj, kind).items():
                env[ef.get("prefix", "") + key] = val.decode(errors="replace")
        for e in c.get("env") or []:
            name = e["name"]
            where = f"container {c['name']} env {name}"
            vf = e.get("valueFrom")
            if not vf:
                env[name] = expand(str(e.get("value", "")), env)
            elif "secretKeyRef" in vf or "configMapKeyRef" in vf:
                kind = "Secret" if "secretKeyRef" in vf else "ConfigMap"
                ref = vf.get("secretKeyRef") or vf.get("configMapKeyRef")
                obj = self.get(kind, self.ns, ref["name"])
                data = None if obj is None else data_of(obj, kind)
                if data is None or ref["key"] not in data:
                    if ref.get("optional"):
                        continue
                    raise PodError(f"{where}: {kind} {ref['name']} key {ref['key']} not found")
                env[name] = data[ref["key"]].decode(errors="replace")
            elif "fieldRef" in vf:
                env[name] = self.field_ref(vf["fieldRef"].get("fieldPath", ""), where)
            elif "resourceFieldRef" in vf:
                env[name] = self.resource_ref(c, vf["resourceFieldRef"], where)
        return env

    # -- securityContext --------------------------------------------------------------------
    def security(self, c: dict[str, Any]) -> dict[str, Any]:
        """uid/gid/groups and what runc applies: the bounding set, no_new_privs, a read-only
        root, or a refusal to create the container (runAsNonRoot with root)."""
        psc = self.spec.get("securityContext") or {}
        csc = c.get("securityContext") or {}

        def pick(key: str) -> Any:
            return csc[key] if csc.get(key) is not None else psc.get(key)

        run_as_user, run_as_group = pick("runAsUser"), pick("runAsGroup")
        uid = int(run_as_user or 0)  # the host root as the image has no USER: root
        try:
            pw: pwd.struct_passwd | None = pwd.getpwuid(uid)
        except KeyError:
            pw = None
        gid = int(run_as_group) if run_as_group is not None else (pw.pw_gid if pw else 0)
        groups = [g.gr_gid for g in grp.getgrall() if pw and pw.pw_name in g.gr_mem]
        groups += [int(g) for g in psc.get("supplementalGroups") or []]
        if psc.get("fsGroup") is not None:
            groups.append(int(psc["fsGroup"]))
        refuse = None
        name, pod = c["name"], self.meta["name"]
        if pick("runAsNonRoot"):
            if run_as_user is None:
                refuse = (
                    "container has runAsNonRoot and image will run as root "
                    f"(pod: {pod}, container: {name})"
                )
            elif uid == 0:
                refuse = (
                    f"container's runAsUser breaks non-root policy (pod: {pod}, container: {name})"
                )
        privileged = bool(csc.get("privileged"))
        caps = set(DEFAULT_CAPS)
        cap_spec = csc.get("capabilities") or {}
        add = [str(x).upper() for x in cap_spec.get("add") or []]
        drop = [str(x).upper() for x in cap_spec.get("drop") or []]
        if "ALL" in add:
            caps = set(CAPS)
        if "ALL" in drop:
            caps = set()
        caps |= {x for x in add if x in CAPS}
        caps -= {x for x in drop if x in CAPS}
        if privileged:
            caps = set(CAPS)
        return {
            "uid": uid,
            "gid": gid,
            "groups": sorted(set(groups) - {gid}),
            "enforce": {
                "caps": sorted(CAPS.index(x) for x in caps),
                "privileged": privileged,
                "no_new_privs": csc.get("allowPrivilegeEscalation") is False,
                "readonly_root": bool(csc.get("readOnlyRootFilesystem")),
                "refuse": refuse,
            },
        }

    def container_spec(
        self,
        c: dict[str, Any],
        *,
        hostname: str,
        etc: str,
        hostname_file: str,
        prefix: str,
        view: bool,
        tmp: str,
        scratch: str,
    ) -> dict[str, Any]:
        """The document container.py reads for one start of container ``c``."""
        sec = self.security(c)
        ctr_env = self.env(c)
        try:
            home = pwd.getpwuid(sec["uid"]).pw_dir
        except KeyError:
            home = "/"
        env = {"PATH": CLEAN_PATH, "HOSTNAME": hostname, "HOME": home, **API_SERVICE_ENV}
        if c.get("tty"):
            env["TERM"] = "xterm"
        env.update(ctr_env)
        argv = [expand(str(a), ctr_env) for a in (c.get("command") or [])]
        argv += [expand(str(a), ctr_env) for a in (c.get("args") or [])]
        if not argv:
            raise PodError(
                f"container {c['name']}: no command/args, and the image (the host root) has "
                "no entrypoint"
            )
        mounts = []
        for vm in c.get("volumeMounts") or []:
            vol = self.volumes.get(vm["name"])
            if vol is None:
                raise PodError(f"container {c['name']}: no volume named {vm['name']!r}")
            source = vol["path"]
            sub = vm.get("subPath") or (
                expand(str(vm["subPathExpr"]), ctr_env) if vm.get("subPathExpr") else ""
            )
            if sub:
                check_relpath(sub, f"container {c['name']} subPath")
                cand = os.path.join(source, sub)
                if not os.path.lexists(cand):
                    os.makedirs(cand, mode=0o755)
                source = os.path.realpath(cand)
            mounts.append(
                {
                    "source": source,
                    "target": os.path.normpath(vm["mountPath"]),
                    "file": not os.path.isdir(source),
                    "readonly": bool(vm.get("readOnly")) or vol["ro"],
                    "volume": vm["name"],
                }
            )
        mounts.sort(key=lambda m: len([p for p in m["target"].split("/") if p]))
        return {
            "name": c["name"],
            "hostname": hostname,
            "scratch": scratch,
            "tmp": tmp,
            "hosts": f"{etc}/hosts",
            "resolv": f"{etc}/resolv.conf",
            "hostname_file": hostname_file,
            "prefix": prefix,
            "view": view,
            "mounts": mounts,
            "argv": argv,
            "env": env,
            "workdir": c.get("workingDir") or "/",
            "uid": sec["uid"],
            "gid": sec["gid"],
            "groups": sec["groups"],
            "enforce": sec["enforce"],
        }
