"""The table `jaxmdp envs` prints (jaxmdp/envs_table.json) against the solvers."""

import json

import numpy as np
import pytest

import jaxmdp as jm
from jaxmdp import _envs_table


def test_the_table_has_every_environment_and_column():
    data = json.loads(_envs_table.table_path().read_text())
    assert data["columns"] == [column.key for column in _envs_table.COLUMNS]
    assert list(data["rows"]) == jm.envs.names()
    for row in data["rows"].values():
        assert set(row) == {"instance"} | set(data["columns"])


@pytest.mark.parametrize("name", jm.envs.names())
def test_every_row_matches_a_recomputation(name):
    # A changed environment or solver fails here until the table is regenerated with
    # `python -m jaxmdp._envs_table`.
    shipped = _envs_table.load_table()[name]
    fresh = _envs_table.compute_row(name)
    assert shipped["instance"] == fresh["instance"] == _envs_table.instance(name)
    for column in _envs_table.COLUMNS:
        message = f"{name}, {column.key}: regenerate with python -m jaxmdp._envs_table"
        if column.spec == "d":
            assert shipped[column.key] == fresh[column.key], message
        else:
            np.testing.assert_allclose(shipped[column.key], fresh[column.key],
                                       rtol=column.rtol, atol=column.atol, err_msg=message)


def test_named_environments_are_finite_where_expected():
    # The shipped rows, each equal to jaxmdp.hardness's recomputation (test above).
    table = _envs_table.load_table()
    for name in ("paper-mdp", "riverswim-6", "sixarms", "grid-4-room"):
        assert np.isfinite(table[name]["diameter"]) and table[name]["min_gap"] > 0, name
    assert table["sixarms"]["gain"] == pytest.approx(1.0)


def test_a_name_missing_from_the_table_is_computed():
    shipped = _envs_table.load_table()
    computed = _envs_table.rows(["paper-mdp"], table={})[0]
    assert computed["instance"] == "paper-mdp"
    for column in _envs_table.COLUMNS:
        np.testing.assert_allclose(computed[column.key], shipped["paper-mdp"][column.key],
                                   rtol=column.rtol, atol=column.atol)
    stale = {"paper-mdp": {k: v for k, v in shipped["paper-mdp"].items() if k != "gain"}}
    assert _envs_table.rows(["paper-mdp"], table=stale)[0]["gain"] == computed["gain"]


def test_listing_lines_keep_their_columns():
    row = {"instance": "garnet-100-4-5", "S": 100, "A": 4, "gain": 0.5,
           "lower_bound": 123.456, "diameter": float("inf"), "bias_span": 2.5,
           "mixing_time": 17.0, "min_gap": float("nan")}
    numbers, description = _envs_table.format_row(row, "a description").split("\n")
    assert numbers.split() == ["garnet-100-4-5", "100", "4", "0.500000", "123.5", "inf",
                               "2.5", "17", "nan"]
    assert description.strip() == "a description"
    header = _envs_table.format_header()
    for title, value in (("gain", "0.500000"), ("diameter", "inf"), ("min gap", "nan")):
        assert header.index(title) + len(title) == numbers.index(value) + len(value)


def test_infinite_measures_are_listed_as_values():
    # DeepSea's optimal chain is periodic (never mixes): t_mix = inf, a value.
    row = _envs_table.load_table()["deepsea-N"]
    assert row["mixing_time"] == float("inf")
    assert " inf" in _envs_table.format_row(row, "")
