"""The persistent compilation cache (jaxmdp._cache) and the listings that compile nothing.

Every test that compiles runs in a subprocess with a fresh cache directory under
``tmp_path``: JAX sets its cache up once per process, and the user's own cache must not
be touched.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import jax
import pytest

import jaxmdp as jm
from jaxmdp import _cache, cli

ROOT = Path(__file__).resolve().parents[1]

#: Events JAX's compiler records (jax.monitoring): a program loaded from the persistent
#: cache, and a program written to it after a compilation.
HIT = "/jax/compilation_cache/cache_hits"
WRITE = "/jax/compilation_cache/cache_misses"

#: A small jaxmdp run; prints JAX's cache events, the cache directory JAX used and the
#: pseudo-regret (to check that a loaded program computes what the compiled one did).
SIMULATE = f"""
import json
import jax
import numpy as np
counts = {{}}
jax.monitoring.register_event_listener(
    lambda event, **_: counts.__setitem__(event, counts.get(event, 0) + 1))
import jaxmdp as jm
traj = jm.simulate(jm.envs.make("paper-mdp"), "ucb", horizon=6, replications=2, seed=3,
                   progress=False)
print(json.dumps({{"hits": counts.get("{HIT}", 0), "writes": counts.get("{WRITE}", 0),
                  "dir": jax.config.jax_compilation_cache_dir,
                  "regret": np.asarray(traj.pseudo_regret).tolist()}}))
"""


def _env(**variables: str) -> dict[str, str]:
    """Our environment without any cache configuration, plus ``variables``."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("JAX_COMPILATION_CACHE_DIR", _cache.CACHE_DIR_VARIABLE,
                        _cache.DISABLE_VARIABLE, "JAX_LOG_COMPILES",
                        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS",
                        "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    env["JAX_PLATFORMS"] = "cpu"
    env.update(variables)
    return env


def _python(args: list[str], env: dict[str, str], cwd: Path = ROOT):
    result = subprocess.run([sys.executable, *args], env=env, cwd=cwd, capture_output=True,
                            text=True, timeout=600, check=False)
    assert result.returncode == 0, result.stderr[-4000:]
    return result


def _simulate(env: dict[str, str]) -> dict:
    return json.loads(_python(["-c", SIMULATE], env).stdout.splitlines()[-1])


def _entries(path: Path) -> int:
    return _cache.compilation_cache_info(path).entries


@pytest.fixture(scope="module")
def filled_cache(tmp_path_factory):
    """A cache directory filled by one process's ``simulate`` (the default cache, moved by
    JAXMDP_CACHE_DIR), and what that process printed."""
    path = tmp_path_factory.mktemp("jax-cache")
    first = _simulate(_env(JAXMDP_CACHE_DIR=str(path)))
    return path, first


def test_simulate_writes_the_default_cache_where_jaxmdp_cache_dir_says(filled_cache):
    path, first = filled_cache
    assert first["dir"] == str(path)
    assert first["writes"] > 0
    # (A program needed twice in one process, by functions the in-memory cache tells
    # apart, is written once and loaded the second time.)
    assert first["hits"] < first["writes"]
    assert 0 < _entries(path) <= first["writes"]


def test_a_second_process_loads_every_program_instead_of_compiling_it(filled_cache):
    path, first = filled_cache
    second = _simulate(_env(JAXMDP_CACHE_DIR=str(path)))
    # Every program the first process compiled (and wrote) or loaded is loaded; none is
    # compiled.
    assert second["writes"] == 0
    assert second["hits"] == first["writes"] + first["hits"]
    assert second["regret"] == first["regret"]  # bit for bit


def test_a_users_own_cache_directory_is_kept_by_simulate(filled_cache, tmp_path):
    # The user's directory holds the programs: simulate loads them from there and writes
    # nothing to jaxmdp's own directory.
    path, first = filled_cache
    ours = tmp_path / "jaxmdp-cache"
    code = f"import jax; jax.config.update('jax_compilation_cache_dir', {str(path)!r})\n"
    result = json.loads(_python(["-c", code + SIMULATE], _env(
        JAXMDP_CACHE_DIR=str(ours))).stdout.splitlines()[-1])
    assert result["dir"] == str(path)
    assert result["writes"] == 0
    assert result["hits"] == first["writes"] + first["hits"]
    assert not ours.exists()


def test_jaxmdp_no_compile_cache_turns_it_off(tmp_path):
    code = ("import jax, jax.numpy as jnp\nfrom jaxmdp import _cache\n"
            "print(_cache.enable_compilation_cache())\n"
            "jax.jit(lambda x: jnp.sin(x) + 1)(2.0).block_until_ready()\n"
            "print(jax.config.jax_compilation_cache_dir)")
    off = _python(["-c", code], _env(JAXMDP_CACHE_DIR=str(tmp_path / "off"),
                                     JAXMDP_NO_COMPILE_CACHE="1"))
    assert off.stdout.split() == ["None", "None"]
    assert _entries(tmp_path / "off") == 0
    on = _python(["-c", code], _env(JAXMDP_CACHE_DIR=str(tmp_path / "on"),
                                    JAXMDP_NO_COMPILE_CACHE="0"))
    assert on.stdout.split() == [str(tmp_path / "on")] * 2
    assert _entries(tmp_path / "on") == 1
    # Off also for a directory the user configured in JAX.
    user = tmp_path / "user"
    off = _python(["-c", code], _env(JAX_COMPILATION_CACHE_DIR=str(user),
                                     JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0",
                                     JAXMDP_NO_COMPILE_CACHE="1"))
    assert off.stdout.split() == ["None", str(user)]
    assert _entries(user) == 0


def test_cli_no_compile_cache_turns_it_off(tmp_path):
    # Without the flag, simulate (and the command line) would write the programs there.
    cache = tmp_path / "cache"
    # (An agent whose programs compile fast: the flag, not the agent, is under test.)
    _python(["-m", "jaxmdp", "run", "--env", "paper-mdp", "--agents", "optimistic_q", "--horizon",
             "6", "--replications", "2", "--no-progress", "--out", str(tmp_path / "out"),
             "--no-compile-cache"], _env(JAXMDP_CACHE_DIR=str(cache)))
    assert (tmp_path / "out" / "results.npz").is_file()
    assert _entries(cache) == 0


def test_experiment_parser_sets_the_cache_up(monkeypatch):
    from experiments import _common

    # The parser's calls, recorded in order (the real ones change this process's JAX).
    calls = []
    monkeypatch.setattr(_cache, "enable_compilation_cache", lambda: calls.append("enable"))
    monkeypatch.setattr(_cache, "disable_compilation_cache", lambda: calls.append("disable"))
    for measures_time, argv, expected in ((False, [], ["enable"]),
                                          (False, ["--no-compile-cache"],
                                           ["disable", "enable"]),
                                          (True, [], ["disable", "enable"])):
        parser = _common.base_parser("test", compile_cache=not measures_time)
        args = parser.parse_args(argv)
        assert args.no_compile_cache is ("--no-compile-cache" in argv)
        assert calls == expected
        calls.clear()


def test_cache_dir_follows_jaxmdp_cache_dir_and_xdg(monkeypatch, tmp_path):
    monkeypatch.setenv(_cache.CACHE_DIR_VARIABLE, str(tmp_path / "here"))
    assert _cache.cache_dir() == tmp_path / "here"
    monkeypatch.setenv(_cache.CACHE_DIR_VARIABLE, "~/jaxmdp-test-cache")
    assert _cache.cache_dir() == Path.home() / "jaxmdp-test-cache"
    monkeypatch.delenv(_cache.CACHE_DIR_VARIABLE)
    if sys.platform.startswith("linux"):
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
        assert _cache.cache_dir() == tmp_path / "xdg" / "jaxmdp"


@pytest.mark.parametrize("value, disabled", [("1", True), ("true", True), ("ON", True),
                                             ("yes", True), ("0", False), ("", False),
                                             ("off", False), (None, False)])
def test_is_disabled_reads_the_variable(monkeypatch, value, disabled):
    if value is None:
        monkeypatch.delenv(_cache.DISABLE_VARIABLE, raising=False)
    else:
        monkeypatch.setenv(_cache.DISABLE_VARIABLE, value)
    assert _cache.is_disabled() is disabled


def test_cache_command_prints_and_clears(filled_cache, tmp_path, capsys, monkeypatch):
    import shutil

    path, _ = filled_cache
    copy = tmp_path / "copy"
    shutil.copytree(path, copy)
    (copy / "notes.txt").write_text("not an entry")
    entries = _entries(copy)
    size = sum(p.stat().st_size for p in copy.iterdir() if p.name.endswith("-cache"))
    # The command reports the directory JAX uses (set here as a user would; nothing is
    # compiled while it is set).
    monkeypatch.delenv(_cache.DISABLE_VARIABLE, raising=False)
    before = jax.config.jax_compilation_cache_dir
    enabled = jax.config.jax_enable_compilation_cache
    jax.config.update("jax_compilation_cache_dir", str(copy))
    jax.config.update("jax_enable_compilation_cache", True)
    try:
        assert cli.main(["cache"]) == 0
        out = capsys.readouterr().out
        assert cli.main(["cache", "--clear"]) == 0
        cleared = capsys.readouterr().out
    finally:
        jax.config.update("jax_compilation_cache_dir", before)
        jax.config.update("jax_enable_compilation_cache", enabled)
    assert f"compilation cache: {copy}\nstate: on\n" in out
    assert f"entries: {entries} compiled programs, {size / 1e6:.1f} MB" in out
    assert f"deleted {entries} compiled programs" in cleared
    assert _entries(copy) == 0
    assert [p.name for p in copy.iterdir()] == ["notes.txt"]


@pytest.mark.parametrize("args", [["-c", "import jaxmdp"], ["-m", "jaxmdp", "envs"],
                                  ["-m", "jaxmdp", "agents"], ["-m", "jaxmdp", "cache"]])
def test_listings_compile_no_program(args, tmp_path):
    result = _python(args, _env(JAX_LOG_COMPILES="1", JAXMDP_CACHE_DIR=str(tmp_path)))
    assert "Compiling" not in result.stderr
    assert "Finished XLA compilation" not in result.stderr
    if "envs" in args:
        lines = result.stdout.splitlines()  # a header, then two lines per environment
        assert len(lines) == 1 + 2 * len(jm.envs.names())


def test_reproduce_turns_the_cache_off_for_scripts_that_measure_time():
    from experiments import reproduce

    scripts = reproduce.discover()
    timed = {script.stem for script in scripts if reproduce.runs_alone(script)}
    assert {"timing", "scaling"} <= timed
    for script in scripts:
        on = reproduce.script_env(script, True).get(_cache.DISABLE_VARIABLE)
        assert on == ("1" if script.stem in timed else os.environ.get(
            _cache.DISABLE_VARIABLE))
        assert reproduce.script_env(script, False)[_cache.DISABLE_VARIABLE] == "1"
        assert (reproduce.script_env(script, True).get("JAX_COMPILATION_CACHE_DIR")
                == os.environ.get("JAX_COMPILATION_CACHE_DIR"))
