"""The machine calibration line of the benchmarks (benchmarks/_calibration.py)."""

import json
import re
import sys
from pathlib import Path

import pytest

from benchmarks import _calibration


def test_calibrate_times_both_workloads_and_formats_one_line():
    result = _calibration.calibrate(repeats=2)
    assert result["numpy_ms"] > 0 and result["xla_ms"] > 0
    assert result["repeats"] == 2 and result["cpu_count"] >= 1
    line = _calibration.calibration_line(result)
    assert "\n" not in line
    assert re.fullmatch(r"calibration: numpy [\d.]+ ms, xla [\d.]+ ms \(median of 2; load "
                        r"(n/a|[\d.]+); \d+ cpus; jax \S+ .+\)", line)


@pytest.mark.parametrize("repeats", [0, -1, 1.5, True, "3"])
def test_calibrate_rejects_bad_repeats(repeats):
    with pytest.raises(ValueError, match=r"repeats must be a positive integer, got"):
        _calibration.calibrate(repeats=repeats)


def test_the_median_is_of_the_timed_runs_not_the_warm_up(monkeypatch):
    calls = []
    # perf_counter at the start and end of each timed run (the warm-up is not timed):
    # 0.3 s, 0.1 s, 0.2 s.
    clock = iter([0.0, 0.3, 1.0, 1.1, 2.0, 2.2])
    monkeypatch.setattr(_calibration.time, "perf_counter", lambda: next(clock))
    assert _calibration._median_ms(lambda: calls.append(1), 3) == pytest.approx(200.0)
    assert len(calls) == 4


def test_no_compile_cache_keeps_even_a_users_cache_off(tmp_path):
    import os
    import subprocess

    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, JAX_COMPILATION_CACHE_DIR=str(tmp_path),
               JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0", JAX_PLATFORMS="cpu",
               PYTHONPATH=os.pathsep.join([str(root), str(root / "benchmarks")]))
    env.pop("JAXMDP_NO_COMPILE_CACHE", None)
    code = ("import os, jax, jax.numpy as jnp, _calibration\n"
            "import jaxmdp as jm\n"
            "_calibration.no_compile_cache()\n"
            "jax.jit(lambda x: jnp.cos(x) * 2)(1.0).block_until_ready()\n"
            "jm.solve_average_reward(jm.envs.make('paper-mdp'))\n"
            "print(os.environ['JAXMDP_NO_COMPILE_CACHE'])")
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                            text=True, timeout=600, check=False)
    assert result.returncode == 0, result.stderr[-4000:]
    assert result.stdout.split() == ["1"]
    assert not [p for p in tmp_path.iterdir() if p.name.endswith("-cache")]


def test_compare_prints_the_calibration_line_unless_it_only_plots(tmp_path, monkeypatch,
                                                                   capsys):
    # experiments/compare.py reports wall times: a run that computes prints the machine's
    # calibration line first; --plot-only, which measures nothing, does not.
    from experiments import compare

    monkeypatch.setattr(compare._calibration, "calibration_line",
                        lambda result=None: "calibration: <this machine>")
    argv = ["--horizon", "20", "--replications", "2", "--agents", "ucb", "--envs",
            "paper-mdp", "--no-progress", "--results-dir", str(tmp_path / "results"),
            "--figures-dir", str(tmp_path / "figures")]
    compare.main(argv)
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "calibration: <this machine>"
    assert "| paper-mdp (T = 20) | MDP-UCB |" in out
    compare.main(argv + ["--plot-only"])
    out = capsys.readouterr().out
    assert "calibration" not in out and "| paper-mdp (T = 20) | MDP-UCB |" in out


def test_save_record_writes_the_json_atomically(tmp_path, capsys):
    record = {"settings": {"horizon": 10}, "rows": [{"us_per_step": 0.5}]}
    path = _calibration.save_record(tmp_path / "new", "bench-T10", record)
    assert path.parent == tmp_path / "new" and path.name.startswith("bench-T10-")
    assert json.loads(path.read_text()) == record
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temporary file left
    assert f"saved {path}" in capsys.readouterr().out
