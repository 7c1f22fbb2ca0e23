"""The deprecated modules and names kept for one release: each warns and is the new
object (jaxmdp.incremental, estimators, evi, sensitivity, examples, agents.planner;
simulate's planner keyword)."""

import importlib
import sys
import warnings

import numpy as np
import pytest

import jaxmdp as jm
from jaxmdp import planning


def test_simulate_planner_keyword_is_deprecated_and_forwarded():
    mdp = jm.envs.make("paper-mdp")
    with pytest.warns(DeprecationWarning, match="configure the agent instead"):
        old = jm.simulate(mdp, "ucb", 30, 2, seed=1, planner="full", refresh_every=5,
                          progress=False)
    new = jm.simulate(mdp, jm.get_agent("ucb", planner="full", refresh_every=5), 30, 2,
                      seed=1, progress=False)
    np.testing.assert_array_equal(old.pseudo_regret, new.pseudo_regret)
    with pytest.raises(TypeError, match="unexpected keyword arguments"):
        jm.simulate(mdp, "ucb", 30, 2, planer="full", progress=False)


@pytest.mark.parametrize("module", ["jaxmdp.incremental", "jaxmdp.estimators",
                                    "jaxmdp.sensitivity", "jaxmdp.examples",
                                    "jaxmdp.agents.planner"])
def test_old_modules_are_deprecated_aliases(module):
    sys.modules.pop(module, None)
    with pytest.warns(DeprecationWarning, match=f"{module} is deprecated"):
        importlib.import_module(module)


def test_old_evi_module_warns_on_use_and_keeps_jm_evi_the_function():
    import jaxmdp.evi  # noqa: F401

    assert callable(jm.evi) and jm.evi is planning.evi
    with pytest.warns(DeprecationWarning, match="jaxmdp.evi is deprecated"):
        from jaxmdp.evi import evi
    assert evi is planning.evi


def test_old_public_names_still_work():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from jaxmdp.evi import EVIResult, EVIStatus
        from jaxmdp.planning import PlanningSolution, gaps

    assert jm.PlanningSolution is jm.EVIResult is EVIResult is PlanningSolution
    assert jm.PlanningStatus is jm.EVIStatus is EVIStatus is planning.Status
    mdp = jm.envs.make("paper-mdp")
    np.testing.assert_array_equal(gaps(mdp), jm.gaps(mdp))
    assert jm.examples.paper_mdp is jm.envs.paper_mdp
