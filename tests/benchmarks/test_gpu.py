"""benchmarks/gpu.py --smoke: the GPU benchmark's code (device rows, the CPU process, the
JSON and the markdown table) at tiny sizes, on the CPU."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_gpu_benchmark_smoke_run(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    result = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gpu.py"), "--smoke",
                             "--out", str(tmp_path)], env=env, cwd=ROOT,
                            capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 0, result.stderr[-4000:]
    assert result.stdout.startswith("calibration: numpy ")
    [path] = tmp_path.glob("gpu-smoke-*.json")
    record = json.loads(path.read_text())
    rows, cpu = record["rows"], record["cpu_rows"]
    assert {row["kind"] for row in rows} == {"index", "agent", "scale"}
    assert record["settings"]["smoke"] and record["calibration"]["numpy_ms"] > 0
    for row in rows + cpu:
        assert "error" not in row and "skipped" not in row, row
        assert row["us"] > 0 and row["first_s"] > 0 and row["compile_s"] >= 0, row
    # Index rows: both solvers in both dtypes, converged, with their passes.
    index = [row for row in rows if row["kind"] == "index"]
    assert {(row["solver"], row["dtype"]) for row in index} == {
        (s, d) for s in ("kl_ucb", "kinf") for d in ("float32", "float64")}
    assert all(row["converged"] and 1 <= row["passes"] <= 64 for row in index)
    # One CPU row per index row and per agent (its agent and scale rows share it).
    assert len(cpu) == len(index) + len({row["agent"] for row in rows if "agent" in row})
    table = path.with_suffix(".md").read_text().splitlines()
    assert table[0].startswith("calibration: ")
    for row in rows:
        line = next(line for line in table if line.startswith(f"| {row['id']} |"))
        assert "not reached" not in line and line.count("|") == 10
