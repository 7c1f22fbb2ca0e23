"""Test configuration: float64 everywhere, headless matplotlib, the suite's compilation
cache, and (under pytest-xdist's ``--dist loadgroup``) whole modules or groups of modules
per worker.

pyproject.toml's ``pythonpath`` puts the repository root and tests/ on the path: test
modules import the NumPy references as ``from tests.reference import ...`` and the runs
simulated once per process and checked by several modules as ``import shared_runs``.

**The suite's compilation cache.** Nearly all of the suite's time is XLA compilation, so
the suite shares one persistent compilation cache between its xdist workers and the
subprocesses they start (the first process's conftest chooses the directory and the workers
inherit the variable ``JAXMDP_TEST_CACHE_DIR``): a program compiled by one module or worker
is loaded, not compiled again, by every other that needs it.

* Outside CI (the variable ``CI`` unset, or ``false``/``0``) the directory persists
  between runs, under the user's cache directory
  (``platformdirs.user_cache_dir("jaxmdp")/tests-jax-<jax version>-jaxlib-<version>``,
  ``~/.cache/jaxmdp/...`` on Linux), so a second run of an unchanged tree loads its
  programs instead of compiling them. A changed tree never loads a stale program: JAX's
  cache key is a hash of the program itself (its HLO), the compile options, the backend
  and the jax/jaxlib versions, so a program whose code changed is a new entry and is
  compiled. Delete the directory (or set ``JAXMDP_TEST_CACHE_DIR``) to start cold.
* Under CI (``CI=true``) every run starts cold: a fresh, empty temporary directory,
  removed at the end, so that a run never reads programs from an earlier one.
* ``JAXMDP_TEST_COMPILE_CACHE=0`` runs the suite without a cache.

(tests/test_cache.py checks jaxmdp's own cache in subprocesses with directories of their
own.)
"""

import os

os.environ.setdefault("MPLBACKEND", "Agg")
import tempfile  # noqa: E402
from importlib import metadata  # noqa: E402


def _persistent_cache_dir() -> str:
    """The suite's cache directory kept between local runs, one per jax/jaxlib version."""
    import platformdirs

    versions = f"jax-{metadata.version('jax')}-jaxlib-{metadata.version('jaxlib')}"
    path = os.path.join(platformdirs.user_cache_dir("jaxmdp"), f"tests-{versions}")
    os.makedirs(path, exist_ok=True)
    return path


_SUITE_CACHE = os.environ.get("JAXMDP_TEST_COMPILE_CACHE", "1") != "0"
_IN_CI = os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")
_OWNS_CACHE_DIR = False
if _SUITE_CACHE and "JAXMDP_TEST_CACHE_DIR" not in os.environ:
    if _IN_CI:
        os.environ["JAXMDP_TEST_CACHE_DIR"] = tempfile.mkdtemp(prefix="jaxmdp-tests-cache-")
        _OWNS_CACHE_DIR = True
    else:
        os.environ["JAXMDP_TEST_CACHE_DIR"] = _persistent_cache_dir()

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)
if _SUITE_CACHE:
    # jaxmdp's own set-up (every program cached); the directory counts as configured by the
    # user, so jaxmdp.simulate leaves it as it is, and subprocesses inherit it.
    from jaxmdp import _cache  # noqa: E402

    os.environ["JAX_COMPILATION_CACHE_DIR"] = os.environ["JAXMDP_TEST_CACHE_DIR"]
    # Subprocesses (command lines, several processes, forced host devices) read JAX's
    # thresholds from the environment: cache every program there too, not only those that
    # take a second to compile (JAX's default).
    os.environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = "0"
    os.environ["JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES"] = "-1"
    os.environ.setdefault(_cache.DISABLE_VARIABLE, "0")
    _cache.enable_compilation_cache(os.environ["JAXMDP_TEST_CACHE_DIR"])
else:
    os.environ.setdefault("JAXMDP_NO_COMPILE_CACHE", "1")


import gc  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TESTS = Path(__file__).resolve().parent


@pytest.fixture(autouse=True)
def _restore_registries():
    """A test (or a docstring example, or a tutorial page) that registers an agent or an
    environment leaves both registries as it found them."""
    from jaxmdp import envs, planning
    from jaxmdp.agents import AGENTS

    saved = [(table, table.snapshot()) for table in (AGENTS, envs._REGISTRY, planning.BALLS)]
    yield
    for table, contents in saved:
        table.restore(contents)


@pytest.fixture(autouse=True)
def _restore_compilation_cache_settings():
    """A test that turns the compilation cache off in its process (a script's argument
    parser called in-process, e.g. ``experiments/timing.py``'s, which measures compile
    times) leaves it as it found it.

    Left off, JAX still reads and writes the cache it opened, but under keys of other
    compile options (without the cache directory), and ``JAXMDP_NO_COMPILE_CACHE=1`` reaches
    the subprocesses that the worker's later tests start: which programs miss then depends
    on which tests xdist happened to send to that worker after it, so a second run of an
    unchanged tree compiled hundreds of programs again.
    """
    from jaxmdp import _cache

    variable = os.environ.get(_cache.DISABLE_VARIABLE)
    settings = {name: getattr(jax.config, name) for name in
                ("jax_enable_compilation_cache", "jax_compilation_cache_dir")}
    yield
    if variable is None:
        os.environ.pop(_cache.DISABLE_VARIABLE, None)
    else:
        os.environ[_cache.DISABLE_VARIABLE] = variable
    for name, value in settings.items():
        if getattr(jax.config, name) != value:
            jax.config.update(name, value)


@pytest.fixture
def run_on_host_devices():
    """Runs Python ``code`` (with ``args``) in a subprocess whose JAX sees ``count`` CPU
    devices (the device count is fixed when JAX starts); float64, this checkout and tests/
    (``import shared_runs``) first on the path. Fails the test with the child's stderr if
    it fails."""

    def run(code: str, count: int, *args: str) -> subprocess.CompletedProcess:
        env = dict(os.environ)
        env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") +
                            f" --xla_force_host_platform_device_count={count}").strip()
        env["JAX_ENABLE_X64"] = "1"
        env["JAX_PLATFORMS"] = "cpu"
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(TESTS),
                                             env.get("PYTHONPATH", "")])
        result = subprocess.run([sys.executable, "-c", code, *args], env=env, cwd=ROOT,
                                capture_output=True, text=True, timeout=300, check=False)
        assert result.returncode == 0, result.stderr[-4000:]
        return result

    return run


def _memory_mappings() -> int:
    """How many memory mappings this process holds (0 where /proc cannot tell)."""
    try:
        with open("/proc/self/maps", "rb") as maps:
            return sum(1 for _ in maps)
    except OSError:
        return 0


#: Mappings past which compiled programs are freed between modules (see below).
MAX_MAPPINGS = 30_000


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item, nextitem):
    # Each compiled XLA:CPU program holds a few memory mappings (about 3.4 each) until it is
    # freed, and a long xdist worker that keeps every program alive reaches the kernel's
    # vm.max_map_count (65,530 by default) and dies inside LLVM ("Fatal Python error:
    # Aborted" or a segmentation fault in backend_compile_and_load). Between modules, once
    # the process holds more than MAX_MAPPINGS mappings (or wherever /proc/self/maps cannot
    # be read), the programs are freed; until then later modules reuse them.
    if nextitem is None or nextitem.module is not item.module:
        mappings = _memory_mappings()
        if mappings == 0 or mappings > MAX_MAPPINGS:
            jax.clear_caches()
            gc.collect()


def pytest_unconfigure(config):
    # The process that created the suite's compilation cache removes it at the end.
    if _OWNS_CACHE_DIR and not hasattr(config, "workerinput"):
        shutil.rmtree(os.environ["JAXMDP_TEST_CACHE_DIR"], ignore_errors=True)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session, exitstatus):
    # After the last test: pytest's clean-up collects garbage five times over, walking
    # every object JAX's caches hold (seconds, at the end of each worker). Objects alive
    # now are moved out of the collector's reach first.
    gc.freeze()


# --- Distribution over pytest-xdist workers ---------------------------------------------
# Nearly all of the suite's time is XLA compilation. The suite runs under xdist's
# ``--dist loadgroup`` (pyproject.toml's addopts), which sends the tests of one
# ``xdist_group`` to one worker, and every test is put in the group of its own module here,
# so that a module's tests share their compiled programs and module-scoped fixtures in one
# process. Programs that several modules compile (tests/shared_runs.py's runs, the agents'
# simulations) are shared between the workers through the suite's compilation cache
# (above), not by sending the modules to one worker. agents/test_all_agents.py marks each
# agent's cases with a group of that agent's own, so the agents spread over the workers.
# Without xdist the marks do nothing.


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    # tryfirst: before xdist's worker reads the marks into the node ids.
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::", 1)[0]))
