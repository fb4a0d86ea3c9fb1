"""Where things live inside a MiniCluster pod, and the port its brokers talk on.

The entrypoint scripts, the init container, the pod volumes, validation and the policy rules must
agree on these paths, keys and ports, and an operator user expects the operator's layout
(``/flux_operator/wait-0.sh``, ``/mnt/flux/view``, ``/opt/software``), so each is defined once
here, below everything that reads it.
"""

from __future__ import annotations

import posixpath
from typing import Final

# The entrypoint ConfigMap (scripts, broker.toml, hostlist), mounted read-only.
ENTRYPOINT_DIR: Final = "/flux_operator"
# The curve Secret, mounted read-only; the entrypoint copies the file and makes it 0600, since
# Flux refuses a certificate readable by group or other and a Secret mount may be group-readable.
CURVE_DIR: Final = "/mnt/curve"
CURVE_FILE: Final = "curve.cert"
# The spack software tree of the flux view; its binaries have absolute RPATHs into it.
SOFTWARE_DIR: Final = "/opt/software"
# Fallback $HOME when the image's home is "/".
HOME_DIR: Final = "/home/flux-operator"
# The container's termination message (Kubernetes' default terminationMessagePath, which the pods
# keep): the kubelet mounts a file there writable by any user and shows what a container wrote in
# it once it ended (status.containerStatuses[].state.terminated.message, `kubectl describe pod`).
TERMINATION_LOG: Final = "/dev/termination-log"

# v1alpha1 multi-user mode and the RESTful server: the MiniCluster's generated credentials (the
# RESTful Secret, the users Secret) are mounted read-only here, one file per key, and the munge
# key here; the entrypoint installs the munge key where munged wants it, owned by munge, 0400.
CREDENTIALS_DIR: Final = "/mnt/flux-credentials"
MUNGE_DIR: Final = "/mnt/munge"
MUNGE_KEY: Final = "munge.key"
# Keys of the RESTful Secret (and the file names they are mounted as).
RESTFUL_USER: Final = "restful-user"
RESTFUL_TOKEN: Final = "restful-token"
RESTFUL_SECRET_KEY: Final = "restful-secret-key"
# v1alpha1's curveCertSecret: the key that holds the certificate in the user's Secret.
V1ALPHA1_CURVE_KEY: Final = "curve-cert"


def mount_point(path: str) -> str:
    """The directory an absolute mount path names: ``//mnt/curve``, ``/mnt/./curve/`` and
    ``/x/../mnt/curve`` are all /mnt/curve to the container runtime, while the API server
    compares mount paths as strings, so every comparison of paths goes through here."""
    return "/" + posixpath.normpath(path).lstrip("/")


def mounted_under(path: str, root: str) -> bool:
    """Whether a mount at ``path`` lands on ``root`` or inside it."""
    point, top = mount_point(path), mount_point(root)
    return point == top or point.startswith(top.rstrip("/") + "/")


def user_password(user: str) -> str:
    """The users Secret's key (and file name) holding ``user``'s password."""
    return f"password-{user}"


# Fixed pod volume names.
SOFTWARE_VOLUME: Final = "spack-software"
HOME_VOLUME: Final = "flux-operator-home"
CURVE_VOLUME: Final = "curve-cert"
CREDENTIALS_VOLUME: Final = "flux-credentials"
MUNGE_VOLUME: Final = "munge-key"
# An emptyDir at the Flux container's default output directory (spec.DEFAULT_LOGS_DIR), so that
# the entrypoint writes nothing on the root filesystem by default.
OUTPUT_VOLUME: Final = "flux-output"
# The entrypoint ConfigMap volume is named after the ConfigMap (<name>-entrypoint); the flux view
# emptyDir after flux.container.name (flux-view), as the operator names them.

# ConfigMap keys (and the file names they are mounted as).
INIT_SCRIPT: Final = "flux-init.sh"
BROKER_TOML: Final = "broker.toml"
HOSTLIST: Final = "hostlist"

# Written by the Flux container's entrypoint into the flux view's directory for whoever runs
# Flux in the pod (a person, the readiness probe, `minicluster flux`): Flux's environment and
# the broker's socket (templates/wait-view.sh.j2).
VIEW_HELPER: Final = "flux-view.sh"

# The port every broker binds (broker.toml's default_port), which a bursting root's lead Service
# exposes to the clusters that join it, and the name of that port on Services.
BROKER_PORT: Final = 8050
BROKER_PORT_NAME: Final = "flux-broker"
# eth0 is the pod's interface; Flux replaces %p with the host's port.
BROKER_BIND: Final = "tcp://eth0:%p"


def wait_script(index: int) -> str:
    """The Flux container's entrypoint, keyed by the container's index as the operator does."""
    return f"wait-{index}.sh"


def start_script(index: int) -> str:
    """A wrapped sidecar's entrypoint."""
    return f"start-{index}.sh"
