"""jaxmdp.indices._common: the checks and helpers shared by the index functions."""

import jax.numpy as jnp
import numpy as np
import pytest


def test_shared_checks_name_every_shape_cast_and_poison_per_element():
    from jaxmdp.indices._common import check_shapes, nan_where, normalise, prepare

    with pytest.raises(ValueError, match=r"m.shape=\(3,\), sigma.shape=\(\), rho.shape=\(2,\)"):
        check_shapes("f", np.ones((2, 4)), np.ones(4), m=np.ones(3), sigma=np.ones(()),
                     rho=np.ones(2))
    with pytest.raises(ValueError, match="S must be at least 1"):
        check_shapes("f", np.ones(0), np.ones(0))
    p, v, delta = prepare("f", np.ones(2, np.float32), np.ones(2, np.float64), delta=1)
    assert p.dtype == v.dtype == delta.dtype == jnp.float64
    np.testing.assert_array_equal(normalise(jnp.array([[2.0, 6.0], [0.0, 0.0]])),
                                  [[0.25, 0.75], [0.0, 0.0]])
    out = nan_where(jnp.array([True, False]), jnp.ones((2, 3)))
    assert np.isnan(out[0]).all() and (out[1] == 1).all()
