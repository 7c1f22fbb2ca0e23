"""One experiment over two processes (``jax.distributed``) on this machine, against one.

Each test starts 2 local Python processes (CPU, one device each, gloo collectives, a free
port on 127.0.0.1) that join through ``jaxmdp._distributed.initialize``:

* ``jaxmdp.simulate``: the spec "ps_learner_garnet" (7 replications: 4 and 3, padded to 8)
  of tests/shared_runs.py and the batch of 3 GARNET MDPs x 3 replications of
  tests/test_sharding.py (9 runs, padded to 10) equal, in both processes, the one-process
  runs of this process bit for bit;
* ``jaxmdp run`` (MDP-PS and MDP-UCB on RiverSwim-6, T = 50, 3 replications), with a
  process killed once MDP-PS is saved: the survivor exits non-zero within the heartbeat
  timeout (plus slack) with JAX's message that another task died; the rerun reuses
  MDP-PS (computed over the two processes before the kill), computes MDP-UCB over two
  processes, and its results equal the one-process results bit for bit; only process 0
  writes files and prints the table;
* processes started with different arguments fail before any work.

Also here: the command line's cluster flags are validated before JAX starts.

Every subprocess runs under a timeout and is killed if it outlives it.
"""

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import jax
import numpy as np
import pytest
from shared_runs import SHARED_RUNS, shared_run

import jaxmdp as jm
from jaxmdp import cli, runner

ROOT = Path(__file__).resolve().parents[1]
TESTS = Path(__file__).resolve().parent

#: Seconds any one subprocess may run.
TIMEOUT = 300

#: The heartbeat timeout of the kill test (seconds), and the slack allowed past it for the
#: coordination service to notice and the survivor to exit.
HEARTBEAT = 5
SLACK = 30


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _environment() -> dict:
    env = dict(os.environ)
    flags = [f for f in env.get("XLA_FLAGS", "").split()
             if not f.startswith("--xla_force_host_platform_device_count")]
    env["XLA_FLAGS"] = " ".join(flags + ["--xla_force_host_platform_device_count=1"])
    env["JAX_ENABLE_X64"] = "1"
    env["JAX_PLATFORMS"] = "cpu"
    env["MPLBACKEND"] = "Agg"
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(TESTS), env.get("PYTHONPATH", "")])
    return env


def _start(argv_of, count: int = 2) -> list[subprocess.Popen]:
    """``count`` processes, process ``i`` running ``argv_of(i, port)``."""
    port = _free_port()
    return [subprocess.Popen([sys.executable, *argv_of(i, port)], env=_environment(),
                             cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
            for i in range(count)]


def _finish(processes, timeout: float = TIMEOUT) -> list[tuple[int, str, str]]:
    """``(returncode, stdout, stderr)`` of each process; kills them all past ``timeout``."""
    deadline = time.monotonic() + timeout
    out = []
    try:
        for p in processes:
            stdout, stderr = p.communicate(timeout=max(1.0, deadline - time.monotonic()))
            out.append((p.returncode, stdout, stderr))
    finally:
        for p in processes:
            if p.poll() is None:
                p.kill()
                p.communicate()
    return out


def _cluster(i: int, port: int) -> list[str]:
    return ["--coordinator", f"127.0.0.1:{port}", "--num-processes", "2", "--process-id",
            str(i)]


_SIMULATE_SCRIPT = textwrap.dedent("""
    import sys
    from jaxmdp import _distributed

    process, port, stem = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    _distributed.initialize(coordinator=f"127.0.0.1:{port}", num_processes=2,
                            process_id=process)
    import jax, numpy as np
    import jaxmdp as jm
    from shared_runs import SHARED_RUNS, run_spec

    assert (jax.process_count(), len(jax.devices()), len(jax.local_devices())) == (2, 2, 1)
    out = {}
    for name in ("ps_learner_garnet",):
        traj = run_spec(SHARED_RUNS[name])
        for field, value in traj._asdict().items():
            if field != "agent_state" and value is not None:
                out[f"{name}/{field}"] = np.asarray(value)
        for i, leaf in enumerate(jax.tree_util.tree_leaves(traj.agent_state)):
            out[f"{name}/agent_state/{i}"] = np.asarray(leaf)
    batch = jm.simulate(jm.envs.batch("garnet-5-2-3", seeds=range(3)), "ucb", 90, 3, 2,
                        progress=False, chunk_size=40)
    for field in ("pseudo_regret", "regret", "counts"):
        out[f"batch/{field}"] = np.asarray(getattr(batch, field))
    np.savez(f"{stem}.{process}.npz", **out)
""")


def test_simulate_over_two_processes_equals_one_process(tmp_path):
    stem = str(tmp_path / "two")
    results = _finish(_start(lambda i, port: ["-c", _SIMULATE_SCRIPT, str(i), str(port),
                                              stem]))
    for code, _, stderr in results:
        assert code == 0, stderr[-4000:]
    batch = jm.simulate(jm.envs.batch("garnet-5-2-3", seeds=range(3)), "ucb", 90, 3, 2,
                        progress=False, chunk_size=40)
    for process in (0, 1):  # every process holds every replication's results
        two = dict(np.load(f"{stem}.{process}.npz"))
        for name in ("ps_learner_garnet",):
            one = shared_run(name)
            assert SHARED_RUNS[name][3]["replications"] == one.counts.shape[0]
            for field, value in one._asdict().items():
                if field == "agent_state" or value is None:
                    assert f"{name}/{field}" not in two, (name, field)
                    continue
                # Bit for bit: float64 values compared exactly.
                np.testing.assert_array_equal(two.pop(f"{name}/{field}"), value,
                                              err_msg=f"{name} {field} (process {process})")
            for i, leaf in enumerate(jax.tree_util.tree_leaves(one.agent_state)):
                np.testing.assert_array_equal(two.pop(f"{name}/agent_state/{i}"), leaf,
                                              err_msg=f"{name} agent state leaf {i}")
        for field in ("pseudo_regret", "regret", "counts"):
            np.testing.assert_array_equal(two.pop(f"batch/{field}"), getattr(batch, field),
                                          err_msg=f"batch {field} (process {process})")
        assert not two, sorted(two)
    assert batch.pseudo_regret.shape == (3, 3, 90)
    # 7 replications split 4 + 3 (padded to 8): different replications, different runs.
    ps = shared_run("ps_learner_garnet")
    assert ps.counts.shape[0] == 7 and not np.array_equal(ps.counts[3], ps.counts[4])


#: MDP-PS then MDP-UCB on RiverSwim-6, T = 50, 3 replications (2 + 1, padded to 4), seed
#: 1: MDP-PS's one-process program is that of jaxmdp.runner's docstring example.
RUN = ["run", "--env", "riverswim-6", "--agents", "ps,ucb", "--horizon", "50",
       "--replications", "3", "--seed", "1", "--no-progress", "--x64"]


@pytest.fixture(scope="module")
def one_process(tmp_path_factory):
    """The results of ``RUN`` in this process (one process, one device)."""
    out = tmp_path_factory.mktemp("one")
    assert cli.main([*RUN, "--out", str(out)]) == 0
    return runner.load_results(out / "results.npz")


def _same_results(saved, reference):
    settings, data = saved
    ref_settings, ref_data = reference
    assert settings == ref_settings
    assert sorted(data) == sorted(ref_data)
    for key, value in ref_data.items():
        if not key.startswith("seconds_"):
            np.testing.assert_array_equal(data[key], value, err_msg=key)


def test_processes_with_different_arguments_fail_before_any_work(tmp_path):
    out = tmp_path / "mismatch"
    horizon = RUN.index("--horizon") + 1
    results = _finish(_start(lambda i, port: [
        "-m", "jaxmdp", *RUN[:horizon], str(50 + i), *RUN[horizon + 1:], "--out", str(out),
        *_cluster(i, port)]))
    for code, _, stderr in results:
        assert code == 2, stderr[-4000:]
        assert "every process must be started with the same arguments, got different ones " \
               "in process(es) [1] and process 0" in stderr, stderr[-4000:]
    assert not out.exists()


def test_killed_process_stops_the_other_and_the_rerun_resumes(tmp_path, one_process):
    out = tmp_path / "killed"
    argv = ["-m", "jaxmdp", *RUN, "--out", str(out), "--heartbeat-timeout", str(HEARTBEAT)]
    processes = _start(lambda i, port: [*argv, *_cluster(i, port)])
    try:
        # Kill process 1 once the first agent (MDP-PS) is saved: during MDP-UCB, whose
        # results process 0 cannot gather without it.
        deadline = time.monotonic() + TIMEOUT
        settings = out / "results.json"
        while not (settings.exists() and "ps" in json.loads(settings.read_text())["agents"]):
            assert time.monotonic() < deadline and processes[0].poll() is None, \
                processes[0].communicate()[1][-4000:]
            time.sleep(0.05)
        saved = runner.load_results(out / "results.npz")
        processes[1].send_signal(signal.SIGKILL)
        killed = time.monotonic()
        code, _, stderr = _finish(processes[:1], timeout=HEARTBEAT + SLACK)[0]
        elapsed = time.monotonic() - killed
    finally:
        _finish(processes)
    assert code != 0, stderr[-4000:]
    assert elapsed < HEARTBEAT + SLACK, elapsed
    # JAX's message (xla/pjrt/distributed/client.h), naming the lost process.
    assert "This most likely indicates that another task died" in stderr, stderr[-4000:]
    assert "stopped sending heartbeats" in stderr, stderr[-4000:]
    assert list(saved[0]["agents"]) == ["ps"]
    # The rerun reuses MDP-PS, saved before the kill, and completes with MDP-UCB.
    results = _finish(_start(lambda i, port: [*argv, *_cluster(i, port)]))
    for code, _, stderr in results:
        assert code == 0, stderr[-4000:]
    assert "ps: reusing" in results[0][1] and "ucb: reusing" not in results[0][1]
    resumed = runner.load_results(out / "results.npz")
    for key in ("pseudo_regret_ps", "regret_ps", "seconds_ps", "times"):
        np.testing.assert_array_equal(resumed[1][key], saved[1][key], err_msg=key)
    _same_results(resumed, one_process)
    # Only process 0 writes files and prints the table.
    assert sorted(p.name for p in out.iterdir()) == ["regret.png", "results.json",
                                                     "results.npz", "table.csv", "table.md",
                                                     "table_paired.csv"]
    assert "| ucb | 3 |" in results[0][1] and "| ucb |" not in results[1][1]


@pytest.mark.parametrize("flags, message", [
    (["--coordinator", "127.0.0.1:1234", "--num-processes", "2"],
     "--coordinator, --num-processes and --process-id go together, got --coordinator, "
     "--num-processes without --process-id"),
    (["--coordinator", "localhost", "--num-processes", "2", "--process-id", "0"],
     "--coordinator must be HOST:PORT with a port in 1..65535, got 'localhost'"),
    (["--coordinator", "127.0.0.1:1234", "--num-processes", "2", "--process-id", "2"],
     r"--process-id must be an integer in 0..1 \(--num-processes 2\), got 2"),
    (["--distributed", "--process-id", "0"],
     "--distributed finds the cluster itself; leave out --process-id"),
])
def test_cluster_flags_are_validated(tmp_path, capsys, flags, message):
    import re

    argv = ["run", "--env", "riverswim-6", "--agents", "ucb", "--out", str(tmp_path),
            "--x64", *flags]
    assert cli.main(argv) == 2
    assert re.search(message, capsys.readouterr().err)
