"""A STAND-IN for ``pulumi-language-python``, for the e2e tests only.

The Go module proxy refuses the real Python language host (pyproject.toml's toolchain table
names the module and version). Without it the real Pulumi CLI cannot run a plugin whose
``PulumiPlugin.yaml`` says ``runtime: python``, such as ``components/``, the MiniCluster
component package: ``pulumi package get-schema ./components``, ``pulumi package add
./components`` and every ``pulumi up`` of a program using it start that plugin through the
language host's ``RunPlugin``.

This serves the LanguageRuntime calls the CLI makes to run such a plugin, nothing else:

- ``Handshake``, ``GetPluginInfo``, ``About``;
- ``InstallDependencies``: installs nothing. The real host would create the plugin's virtualenv
  (``components/venv``) from requirements.txt; this one runs plugins with its own interpreter
  (the dev venv's, whose packages are requirements.txt's) and says so;
- ``GetRequiredPackages``/``GetRequiredPlugins``: none;
- ``RunPlugin`` for resource plugins: ``<python> -u <plugin dir> <args>`` with the request's
  environment and working directory, stdout and stderr streamed as they come, then the exit code.

Programs (``Run``) and policy packs are refused with a message: Python programs run through the
Automation API in these tests, policy packs through ``pulumi-analyzer-policy-python``.

    pulumi-language-python [--version V] [engine flags...] <engine address>

prints the port it serves on, as every plugin does. Its interpreter is the one running it.
"""

from __future__ import annotations

import argparse
import os
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from concurrent import futures
from typing import Any

import grpc
from pulumi.runtime.proto import language_pb2, language_pb2_grpc, plugin_pb2

NAME = "pulumi-language-python (flux-minicluster e2e stand-in)"
CHUNK = 64 * 1024


class StandInLanguageHost(language_pb2_grpc.LanguageRuntimeServicer):
    def __init__(self, version: str) -> None:
        self.version = version
        self.children: set[subprocess.Popen[bytes]] = set()
        self.lock = threading.Lock()

    # -- identity ------------------------------------------------------------------------------

    def Handshake(self, request: Any, context: Any) -> Any:
        return language_pb2.LanguageHandshakeResponse()

    def GetPluginInfo(self, request: Any, context: Any) -> Any:
        return plugin_pb2.PluginInfo(version=self.version)

    def About(self, request: Any, context: Any) -> Any:
        return language_pb2.AboutResponse(
            executable=sys.executable,
            version=self.version,
            metadata={"stand-in": NAME},
        )

    # -- what a plugin needs -------------------------------------------------------------------

    def GetRequiredPlugins(self, request: Any, context: Any) -> Any:
        return language_pb2.GetRequiredPluginsResponse()

    def GetRequiredPackages(self, request: Any, context: Any) -> Any:
        return language_pb2.GetRequiredPackagesResponse()

    def InstallDependencies(self, request: Any, context: Any) -> Iterator[Any]:
        directory = request.info.program_directory or request.directory
        message = (
            f"{NAME}: no virtualenv is created for {directory}; plugins run with {sys.executable}\n"
        )
        yield language_pb2.InstallDependenciesResponse(stdout=message.encode())

    def RunPlugin(self, request: Any, context: Any) -> Iterator[Any]:
        if request.kind and request.kind != "resource":
            context.abort(
                grpc.StatusCode.UNIMPLEMENTED,
                f"{NAME} runs resource plugins only, not {request.kind} plugins",
            )
        directory = request.info.program_directory or request.program
        if not directory:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"{NAME}: no plugin directory")
        env = dict(item.split("=", 1) for item in request.env if "=" in item) or None
        proc = subprocess.Popen(
            [sys.executable, "-u", directory, *request.args],
            cwd=request.pwd or directory,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        with self.lock:
            self.children.add(proc)
        # The CLI stops a plugin by cancelling this call.
        context.add_callback(lambda: _stop(proc))
        try:
            yield from _stream(proc)
        finally:
            _stop(proc)
            with self.lock:
                self.children.discard(proc)

    # -- refused, with a reason ----------------------------------------------------------------

    def Run(self, request: Any, context: Any) -> Any:
        context.abort(
            grpc.StatusCode.UNIMPLEMENTED,
            f"{NAME} runs no Python programs (the e2e tests use the Automation API for them)",
        )

    def stop_children(self) -> None:
        with self.lock:
            children = list(self.children)
        for proc in children:
            _stop(proc)


def _stream(proc: subprocess.Popen[bytes]) -> Iterator[Any]:
    """The child's stdout and stderr chunks as they come, then its exit code."""
    chunks: queue.Queue[tuple[str, bytes]] = queue.Queue()

    def pump(name: str, fd: int) -> None:
        while data := os.read(fd, CHUNK):
            chunks.put((name, data))
        chunks.put((name, b""))

    streams = {"stdout": proc.stdout, "stderr": proc.stderr}
    pumps = [
        threading.Thread(target=pump, args=(name, stream.fileno()), daemon=True)
        for name, stream in streams.items()
        if stream is not None
    ]
    for thread in pumps:
        thread.start()
    open_streams = len(pumps)
    while open_streams:
        name, data = chunks.get()
        if not data:
            open_streams -= 1
        else:
            yield language_pb2.RunPluginResponse(**{name: data})
    yield language_pb2.RunPluginResponse(exitcode=proc.wait())


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="pulumi-language-python", description=__doc__)
    parser.add_argument("--version", default="0.0.0", help="the version GetPluginInfo reports")
    # The engine's own flags come before its address; this host needs neither.
    parser.add_argument("--tracing", help="ignored")
    args, _engine_flags_and_address = parser.parse_known_args(argv)
    host = StandInLanguageHost(args.version)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    language_pb2_grpc.add_LanguageRuntimeServicer_to_server(host, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print(port, flush=True)

    def shutdown(signum: int, frame: Any) -> None:
        host.stop_children()
        server.stop(grace=None)

    signal.signal(signal.SIGTERM, shutdown)
    signal.signal(signal.SIGINT, shutdown)
    server.wait_for_termination()
    host.stop_children()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
