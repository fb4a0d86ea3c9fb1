"""The compiled-template cache: a render is the same bytes with a cold cache, a warm one and
none at all (a cache root that cannot be created)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "hello-world.yaml"


def render(cache_root: Path, cert: Path) -> str:
    env = {**os.environ, "FLUX_MINICLUSTER_CACHE": str(cache_root)}
    command = ["render", str(EXAMPLE), "--curve-cert", str(cert)]
    proc = subprocess.run(
        [sys.executable, "-m", "flux_minicluster.cli.main", *command],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return proc.stdout


def test_a_render_is_the_same_with_a_cold_a_warm_and_no_template_cache(tmp_path: Path) -> None:
    cert = tmp_path / "hello.cert"
    cache = tmp_path / "cache"
    cold = render(cache, cert)
    compiled = sorted((cache / "jinja2").iterdir())
    assert compiled, "the compiled templates were not kept"
    warm = render(cache, cert)
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    uncached = render(blocked, cert)
    assert cold == warm == uncached
    assert sorted((cache / "jinja2").iterdir()) == compiled
