"""The container side of the node agent: run as
``python -I -S container.py --container SPEC.json`` inside ``ip netns exec <pod netns> unshare
--mount --uts --ipc --pid --kill-child``, it builds the container's root file system (the host
root as a copy-on-write image), applies the securityContext as runc would, and execs the command;
``--dnat ALIAS TARGET`` (inside a pod's netns) installs ``ip daddr ALIAS dnat to TARGET``, how a
LoadBalancer address reaches the pod's own IP.

Stdlib only (it runs with ``-I -S``). Adapted from ../shared/tools/podsim.py (written for this
project): the same mounts, the same flux view simulation, the same hardening.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import socket
import struct
import sys

START_ERROR = 128  # exit code of a container that could not be created or exec'd
VIEW_HASH = "agent"

_NFT = 10  # NFNL_SUBSYS_NFTABLES
_NLA_NESTED = 0x8000


def _nla(typ: int, payload: bytes) -> bytes:
    n = 4 + len(payload)
    return struct.pack("=HH", n, typ) + payload + b"\0" * (-n % 4)


def _nla_str(typ: int, value: str) -> bytes:
    return _nla(typ, value.encode() + b"\0")


def _nla_be32(typ: int, value: int) -> bytes:
    return _nla(typ, struct.pack(">I", value & 0xFFFFFFFF))


def _nla_nest(typ: int, *attrs: bytes) -> bytes:
    return _nla(typ | _NLA_NESTED, b"".join(attrs))


def _nft_expr(name: str, *attrs: bytes) -> bytes:
    return _nla_nest(1, _nla_str(1, name), _nla_nest(2, *attrs))  # NFTA_LIST_ELEM{NAME, DATA}


def nft_dnat(alias: str, target: str) -> None:
    """Install `ip daddr ALIAS dnat to TARGET` (prerouting and output) in the current netns."""
    af_inet, req, ack, create, append = 2, 0x1, 0x4, 0x400, 0x800
    table = "agent"
    a, t = socket.inet_aton(alias), socket.inet_aton(target)
    msgs = []

    def msg(mtype: int, flags: int, family: int, res_id: int, body: bytes) -> None:
        seq = len(msgs) + 1
        payload = struct.pack("=BBH", family, 0, socket.htons(res_id)) + body
        msgs.append(
            (seq, flags, struct.pack("=IHHII", 16 + len(payload), mtype, flags, seq, 0) + payload)
        )

    msg(16, req, 0, _NFT, b"")  # NFNL_MSG_BATCH_BEGIN
    msg(_NFT << 8 | 0, req | ack | create, af_inet, 0, _nla_str(1, table))  # NFT_MSG_NEWTABLE
    for chain, hook in (("prerouting", 0), ("output", 3)):  # NF_INET_PRE_ROUTING, LOCAL_OUT
        msg(
            _NFT << 8 | 3,
            req | ack | create,
            af_inet,
            0,  # NFT_MSG_NEWCHAIN
            _nla_str(1, table)
            + _nla_str(3, chain)
            + _nla_nest(4, _nla_be32(1, hook), _nla_be32(2, -100))  # hook {num, priority dstnat}
            + _nla_str(7, "nat"),
        )
        exprs = (
            _nft_expr(
                "payload",
                _nla_be32(1, 1),
                _nla_be32(2, 1),  # reg 1 <- network header
                _nla_be32(3, 16),
                _nla_be32(4, 4),
            )  #   offset 16 (daddr), 4 bytes
            + _nft_expr(
                "cmp",
                _nla_be32(1, 1),
                _nla_be32(2, 0),  # reg 1 == alias
                _nla_nest(3, _nla(1, a)),
            )
            + _nft_expr("immediate", _nla_be32(1, 1), _nla_nest(2, _nla(1, t)))  # reg 1 <- target
            + _nft_expr(
                "nat",
                _nla_be32(1, 1),
                _nla_be32(2, af_inet),  # DNAT, ipv4, addr from reg 1
                _nla_be32(3, 1),
            )
        )
        msg(
            _NFT << 8 | 6,
            req | ack | create | append,
            af_inet,
            0,  # NFT_MSG_NEWRULE
            _nla_str(1, table) + _nla_str(2, chain) + _nla_nest(4, exprs),
        )
    msg(17, req, 0, _NFT, b"")  # NFNL_MSG_BATCH_END
    sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 12)  # NETLINK_NETFILTER
    try:
        sock.bind((0, 0))
        sock.sendto(b"".join(m for _, _, m in msgs), (0, 0))
        pending = {seq for seq, flags, _ in msgs if flags & ack}
        sock.settimeout(5)
        while pending:
            data = sock.recv(65536)
            off = 0
            while off + 16 <= len(data):
                length, mtype, _, seq, _ = struct.unpack_from("=IHHII", data, off)
                if mtype == 2:  # NLMSG_ERROR: error 0 is the ack
                    err = struct.unpack_from("=i", data, off + 16)[0]
                    if err:
                        raise OSError(
                            -err,
                            f"nf_tables DNAT {alias} -> {target}: message {seq}: "
                            f"{os.strerror(-err)}",
                        )
                    pending.discard(seq)
                off += (length + 3) & ~3 if length else len(data)
    finally:
        sock.close()


MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC = 32, 4096, 16384


def _libc():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mount.argtypes = [
        ctypes.c_char_p,
        ctypes.c_char_p,
        ctypes.c_char_p,
        ctypes.c_ulong,
        ctypes.c_char_p,
    ]
    return libc


def _mount(libc, src, target, fstype, flags, data=None, what=""):
    def enc(s):
        return None if s is None else str(s).encode()

    if libc.mount(enc(src), enc(target), enc(fstype), flags, enc(data)) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount {what or src} on {target}: {os.strerror(err)}")


def resolve_in_root(root: str, path: str) -> str:
    """Resolve path as the container will see it (symlinks interpreted inside root)."""
    parts = [p for p in path.split("/") if p not in ("", ".")]
    done: list = []
    hops = 0
    while parts:
        p = parts.pop(0)
        if p == "..":
            if done:
                done.pop()
            continue
        cand = os.path.join(root, *done, p)
        if os.path.islink(cand):
            hops += 1
            if hops > 40:
                raise OSError(f"too many symlinks resolving {path}")
            target = os.readlink(cand)
            if target.startswith("/"):
                done = []
            parts = [x for x in target.split("/") if x not in ("", ".")] + parts
            continue
        done.append(p)
    return os.path.join(root, *done)


def mountpoint(root: str, path: str, is_file: bool) -> str:
    target = resolve_in_root(root, path)
    try:
        if is_file:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            if not os.path.lexists(target):
                open(target, "a").close()
        else:
            os.makedirs(target, exist_ok=True)
    except OSError as e:
        hint = (
            " (a volume mounted read-only above it: Kubernetes fails the same way)"
            if e.errno == 30
            else ""
        )
        raise OSError(e.errno, f"cannot create mount point {path}: {e.strerror}{hint}") from None
    return target


def build_root(spec: dict) -> str:
    libc = _libc()
    scratch = spec["scratch"]
    _mount(libc, "tmpfs", scratch, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755", "scratch tmpfs")
    for d in ("upper", "work", "root", "vupper", "vwork"):
        os.mkdir(os.path.join(scratch, d))
    root = os.path.join(scratch, "root")
    # The "image": the host root file system, copy-on-write, changes kept in this container's tmpfs.
    _mount(
        libc,
        "overlay",
        root,
        "overlay",
        0,
        f"lowerdir=/,upperdir={scratch}/upper,workdir={scratch}/work",
        "overlay image",
    )
    _mount(libc, "proc", mountpoint(root, "/proc", False), "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    _mount(libc, "/sys", mountpoint(root, "/sys", False), None, MS_BIND | MS_REC)  # the netns sysfs
    _mount(libc, "/dev", mountpoint(root, "/dev", False), None, MS_BIND | MS_REC)
    _mount(
        libc,
        "tmpfs",
        mountpoint(root, "/dev/shm", False),
        "tmpfs",
        MS_NOSUID | MS_NODEV,
        "mode=1777",
    )
    _mount(
        libc, "tmpfs", mountpoint(root, "/run", False), "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755"
    )
    os.makedirs(os.path.join(root, "run/lock"), exist_ok=True)
    _mount(libc, spec["tmp"], mountpoint(root, "/tmp", False), None, MS_BIND)
    for src, dst in (
        (spec["hosts"], "/etc/hosts"),
        (spec["resolv"], "/etc/resolv.conf"),
        (spec["hostname_file"], "/etc/hostname"),
    ):
        _mount(libc, src, mountpoint(root, dst, True), None, MS_BIND)
    # The flux install stays visible, read-only, at its own path: the binaries find their
    # libraries, libexec and modules there (it stands in for the view image's /opt/software).
    prefix = spec["prefix"]
    tgt = mountpoint(root, prefix, False)
    _mount(libc, prefix, tgt, None, MS_BIND | MS_REC)
    _mount(libc, None, tgt, None, MS_REMOUNT | MS_BIND | MS_RDONLY, what="read-only remount")
    # Every user reaches it, as the view image's /opt/software: the directories above it (the
    # cache under /root, mode 0700 on the host) become searchable in this container's copy only.
    up = os.path.dirname(prefix)
    while up not in ("/", ""):
        where = resolve_in_root(root, up)
        mode = os.stat(where).st_mode
        if mode & 0o111 != 0o111:
            os.chmod(where, mode | 0o111)
        up = os.path.dirname(up)
    if spec["view"]:
        # The simulated flux view image: /opt/view (copy-on-write over the prefix),
        # /opt/views/view -> /opt/view, /opt/views/._view/<hash> -> /opt/view, empty /opt/software.
        _mount(
            libc,
            "overlay",
            mountpoint(root, "/opt/view", False),
            "overlay",
            0,
            f"lowerdir={prefix},upperdir={scratch}/vupper,workdir={scratch}/vwork",
            "flux view",
        )
        views = mountpoint(root, "/opt/views/._view", False)
        for link in (os.path.join(os.path.dirname(views), "view"), os.path.join(views, VIEW_HASH)):
            if not os.path.lexists(link):
                os.symlink("/opt/view", link)
        mountpoint(root, "/opt/software", False)
    for m in spec["mounts"]:
        tgt = mountpoint(root, m["target"], m["file"])
        _mount(libc, m["source"], tgt, None, MS_BIND | MS_REC, what=f"volume {m['volume']}")
        if m["readonly"]:
            _mount(
                libc,
                None,
                tgt,
                None,
                MS_REMOUNT | MS_BIND | MS_RDONLY,
                what=f"read-only volume {m['volume']}",
            )
    if spec.get("enforce") is not None:
        harden_root(libc, root, spec, spec["enforce"])
    return root


# --enforce: what runc does to every unprivileged container (containerd's default spec)
RUNTIME_READONLY_PATHS = ("/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger")
RUNTIME_MASKED_PATHS = (
    "/proc/acpi",
    "/proc/asound",
    "/proc/interrupts",
    "/proc/kcore",
    "/proc/keys",
    "/proc/latency_stats",
    "/proc/timer_list",
    "/proc/timer_stats",
    "/proc/sched_debug",
    "/proc/scsi",
    "/sys/firmware",
    "/sys/devices/virtual/powercap",
)


def harden_root(libc, root: str, spec: dict, enf: dict) -> None:
    ro = MS_REMOUNT | MS_BIND | MS_RDONLY
    if not enf["privileged"]:
        _mount(
            libc,
            None,
            os.path.join(root, "sys"),
            None,
            ro | MS_NOSUID | MS_NODEV | MS_NOEXEC,
            what="/sys read-only",
        )
        for p in RUNTIME_READONLY_PATHS:
            tgt = os.path.join(root, p.lstrip("/"))
            if os.path.exists(tgt):
                _mount(libc, tgt, tgt, None, MS_BIND | MS_REC, what=p)
                _mount(
                    libc,
                    None,
                    tgt,
                    None,
                    ro | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                    what=f"{p} read-only",
                )
        for p in RUNTIME_MASKED_PATHS:
            tgt = os.path.join(root, p.lstrip("/"))
            if os.path.isdir(tgt):
                _mount(libc, "tmpfs", tgt, "tmpfs", MS_RDONLY, what=f"mask {p}")
            elif os.path.exists(tgt):
                _mount(libc, os.path.join(root, "dev/null"), tgt, None, MS_BIND, what=f"mask {p}")
    if enf["readonly_root"]:
        # readOnlyRootFilesystem: the image (and what the agent adds to it: /run, /tmp, the
        # view) becomes read-only; volumes keep their own mode, /dev/shm and the kubelet's
        # /etc/hosts stay writable, containerd mounts /etc/hostname and /etc/resolv.conf
        # read-only with the root.
        mountpoint(root, spec["workdir"], False)  # runc creates the working directory first
        _mount(libc, None, root, None, ro, what="read-only root file system")
        _mount(
            libc,
            None,
            os.path.join(root, "run"),
            None,
            ro | MS_NOSUID | MS_NODEV,
            what="read-only /run",
        )
        _mount(libc, None, os.path.join(root, "tmp"), None, ro, what="read-only /tmp")
        for dst in ("/etc/resolv.conf", "/etc/hostname"):
            _mount(libc, None, resolve_in_root(root, dst), None, ro, what=f"read-only {dst}")
        if spec["view"]:
            _mount(libc, None, os.path.join(root, "opt/view"), None, ro, what="read-only flux view")


PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 24, 38, 47, 4


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def drop_privileges(spec: dict, enf: dict) -> None:
    """--enforce, as runc does it: the bounding set becomes the container's capabilities, then the
    user and groups change (a non-root uid keeps no permitted capability), inheritable and ambient
    are empty, and no_new_privs follows allowPrivilegeEscalation: false."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl.argtypes = [
        ctypes.c_int,
        ctypes.c_ulong,
        ctypes.c_ulong,
        ctypes.c_ulong,
        ctypes.c_ulong,
    ]

    def check(rc: int, what: str) -> None:
        if rc != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"{what}: {os.strerror(err)}")

    keep = set(enf["caps"])
    with open("/proc/sys/kernel/cap_last_cap") as f:
        last = int(f.read())
    for cap in range(last + 1):
        if cap not in keep:
            check(
                libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0),
                f"drop capability {cap} from the bounding set",
            )
    os.setgroups(sorted(set([spec["gid"]] + spec["groups"])))
    os.setgid(spec["gid"])
    os.setuid(spec["uid"])
    hdr, data = _CapHeader(0x20080522, 0), (_CapData * 2)()  # _LINUX_CAPABILITY_VERSION_3
    check(libc.capget(ctypes.byref(hdr), data), "capget")
    for w in range(2):
        mask = sum(1 << (c - 32 * w) for c in keep if 32 * w <= c < 32 * (w + 1))
        data[w].effective &= mask
        data[w].permitted &= mask
        data[w].inheritable = 0
    check(libc.capset(ctypes.byref(hdr), data), "capset")
    check(
        libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0),
        "clear the ambient capabilities",
    )
    if enf["no_new_privs"]:
        check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "set no_new_privs")


def container_main(spec_path: str) -> None:
    try:
        with open(spec_path) as f:
            spec = json.load(f)
        enf = spec.get("enforce")
        if (
            enf is not None and enf["refuse"]
        ):  # the kubelet would leave it Waiting: CreateContainerConfigError
            print(
                f"agent: CreateContainerConfigError: Error: {enf['refuse']}",
                file=sys.stderr,
                flush=True,
            )
            os._exit(START_ERROR)
        socket.sethostname(spec["hostname"])
        os.umask(0o022)
        root = build_root(spec)
        os.chroot(root)
        os.chdir("/")
        os.makedirs(spec["workdir"], exist_ok=True)
        os.chdir(spec["workdir"])
        if enf is not None:
            drop_privileges(spec, enf)
        elif spec["gid"] or spec["uid"] or spec["groups"]:
            os.setgroups(sorted(set([spec["gid"]] + spec["groups"])))
            os.setgid(spec["gid"])
            os.setuid(spec["uid"])
    except Exception as e:
        print(f"agent: cannot create container {spec_path}: {e}", file=sys.stderr, flush=True)
        os._exit(START_ERROR)
    for sig in (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT):
        signal.signal(
            sig, signal.SIG_DFL
        )  # Python changed these; the container must not inherit that
    argv = spec["argv"]
    try:
        os.execvpe(argv[0], argv, spec["env"])
    except OSError as e:
        print(
            f"agent: exec {argv[0]!r}: {e.strerror} (PATH={spec['env'].get('PATH')})",
            file=sys.stderr,
            flush=True,
        )
        os._exit(START_ERROR)


# --------------------------------------------------------------------------------------------
# Orchestration, cleanup and the CLI


def main(argv: list[str]) -> None:
    if len(argv) == 2 and argv[0] == "--container":
        container_main(argv[1])
    elif len(argv) == 3 and argv[0] == "--dnat":
        nft_dnat(argv[1], argv[2])
    else:
        sys.exit("usage: container.py --container SPEC.json | --dnat ALIAS TARGET")


if __name__ == "__main__":
    main(sys.argv[1:])
