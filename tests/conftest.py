"""Test configuration: float64 everywhere, headless matplotlib."""

import os

os.environ.setdefault("MPLBACKEND", "Agg")

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)


import subprocess  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def run_on_host_devices():
    """Runs Python ``code`` (with ``args``) in a subprocess whose JAX sees ``count`` CPU
    devices (the device count is fixed when JAX starts); float64, this checkout first on
    the path. Fails the test with the child's stderr if it fails."""

    def run(code: str, count: int, *args: str) -> subprocess.CompletedProcess:
        env = dict(os.environ)
        env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") +
                            f" --xla_force_host_platform_device_count={count}").strip()
        env["JAX_ENABLE_X64"] = "1"
        env["JAX_PLATFORMS"] = "cpu"
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
        result = subprocess.run([sys.executable, "-c", code, *args], env=env, cwd=ROOT,
                                capture_output=True, text=True, timeout=300, check=False)
        assert result.returncode == 0, result.stderr[-4000:]
        return result

    return run
