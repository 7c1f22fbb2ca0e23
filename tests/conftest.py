"""Test configuration: float64 everywhere, headless matplotlib, and (under pytest-xdist)
whole modules per worker."""

import os

os.environ.setdefault("MPLBACKEND", "Agg")

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)


import gc  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TESTS = Path(__file__).resolve().parent
# Test modules import tests/shared_runs.py (runs simulated once per process and checked
# by several modules); tests/ is on the path under pytest's default import mode already.
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))


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


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session, exitstatus):
    # After the last test: pytest's clean-up collects garbage five times over, walking
    # every object JAX's caches hold (seconds, at the end of each worker). Objects alive
    # now are moved out of the collector's reach first.
    gc.freeze()


# --- Distribution over pytest-xdist workers ---------------------------------------------
# Nearly all of the suite's time is XLA compilation, and the tests of a module share their
# compiled programs (and module-scoped fixtures) in-process. xdist's default ("load")
# scatters a module's tests over the workers, so each worker compiles the module's
# programs again. Under ``-n`` with the default distribution, the tests are instead sent
# a module (or a GROUP of modules sharing programs) at a time, the most expensive first
# (ORDER, measured), so that the last units to start are short. An explicit other
# ``--dist`` is left alone; without xdist nothing here applies.

#: Modules that share compiled programs or runs go to the same worker: the RiverSwim-6
#: runs of test_simulate, the command line's and test_envs' are the same programs; the
#: protocol's and the agents' tests share their planners on the paper's MDP; the modules
#: that check the runs of tests/shared_runs.py and the one that shards them.
_SIMULATE = "tests/test_simulate.py+cli+envs"
_PROTOCOL = "tests/test_protocol.py+agents"
_SHARED = "tests/test_sharding.py+scale+psrl_imed+ucrl"
GROUPS = {"tests/test_simulate.py": _SIMULATE, "tests/test_cli.py": _SIMULATE,
          "tests/test_envs.py": _SIMULATE,
          "tests/test_protocol.py": _PROTOCOL, "tests/test_agents.py": _PROTOCOL,
          "tests/test_sharding.py": _SHARED, "tests/test_scale.py": _SHARED,
          "tests/test_psrl_imed.py": _SHARED, "tests/test_ucrl.py": _SHARED}

#: Work units by decreasing cost (seconds on 2 cores); units not listed go first.
ORDER = [_SHARED, _SIMULATE, "tests/test_indices.py", _PROTOCOL, "tests/test_qform.py",
         "tests/test_gaussian_indices.py", "tests/test_planning.py",
         "tests/test_sensitivity.py", "tests/test_evi.py", "tests/test_l1.py",
         "tests/test_mdp.py", "tests/test_estimators.py", "tests/test_batching.py"]


def _unit(nodeid: str) -> str:
    module = nodeid.split("::", 1)[0]
    return GROUPS.get(module, module)


def _rank(nodeid: str) -> int:
    unit = _unit(nodeid)
    return ORDER.index(unit) if unit in ORDER else -1


def pytest_collection_modifyitems(config, items):
    # Workers only (the controller does not collect): the work units in ORDER, each in
    # its collection order. The same on every worker, as xdist requires.
    if hasattr(config, "workerinput") and config.workerinput.get("jaxmdp_module_units"):
        items.sort(key=lambda item: _rank(item.nodeid))  # stable


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    node.workerinput["jaxmdp_module_units"] = _module_units(node.config)


def _module_units(config) -> bool:
    return config.getvalue("dist") == "load"


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    if not _module_units(config):
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ModuleScheduling(LoadScopeScheduling):
        """xdist's loadscope with our units, in collection order (see above)."""

        def _split_scope(self, nodeid: str) -> str:
            return _unit(nodeid)

    config.option.loadscopereorder = False  # keep ORDER, not the number of tests
    return ModuleScheduling(config, log)
