"""tf.random: the stateless ops and tf.random.Generator against TensorFlow's values bit for bit, the stateful draws'
repeatability under tf.random.set_seed, shapes, dtypes and bad input."""
import numpy as np
import pytest

from conftest import tensorflow_or_skip

SEEDS = [[1, 2], [0, 0], [-5, 123456789], [2**31 - 1, -2**31]]


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("op", ["stateless_uniform", "stateless_normal", "stateless_truncated_normal"])
def test_stateless_floats_match_tensorflow_bits(tf, op, dtype, seed):
    real = tensorflow_or_skip()
    for shape in ([7], [301, 33]):
        expected = getattr(real.random, op)(shape, seed, dtype=dtype).numpy()
        got = getattr(tf.random, op)(shape, seed, dtype=dtype).numpy()
        assert got.dtype == expected.dtype and got.shape == expected.shape
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_stateless_ints_match_tensorflow(tf, dtype):
    real = tensorflow_or_skip()
    for bounds in ((-7, 1000), (None, None), (0, 2**31 - 1)):
        expected = real.random.stateless_uniform([99], [3, 4], minval=bounds[0], maxval=bounds[1], dtype=dtype)
        got = tf.random.stateless_uniform([99], [3, 4], minval=bounds[0], maxval=bounds[1], dtype=dtype)
        np.testing.assert_array_equal(got.numpy(), expected.numpy())


def test_stateless_parameters_and_bfloat16_match_tensorflow(tf):
    real = tensorflow_or_skip()
    np.testing.assert_array_equal(tf.random.stateless_normal([50], [5, 6], mean=1.5, stddev=3.3).numpy(),
                                  real.random.stateless_normal([50], [5, 6], mean=1.5, stddev=3.3).numpy())
    np.testing.assert_array_equal(
        tf.random.stateless_uniform([50], [5, 6], minval=-1.5, maxval=3.3, dtype="float64").numpy(),
        real.random.stateless_uniform([50], [5, 6], minval=-1.5, maxval=3.3, dtype="float64").numpy())
    for op in ("stateless_uniform", "stateless_normal", "stateless_truncated_normal"):
        got = tf.cast(getattr(tf.random, op)([101], [5, 6], dtype=tf.bfloat16), tf.float32)
        expected = real.cast(getattr(real.random, op)([101], [5, 6], dtype=real.bfloat16), real.float32)
        np.testing.assert_array_equal(got.numpy(), expected.numpy())


def test_seed_split_and_fold_in_match_tensorflow(tf):
    real = tensorflow_or_skip()
    got, expected = tf.random.split([1, 2], 3), real.random.split([1, 2], 3)
    assert got.dtype == tf.int32 and got.shape == (3, 2)
    np.testing.assert_array_equal(got.numpy(), expected.numpy())
    np.testing.assert_array_equal(tf.random.experimental.stateless_split(np.array([1, 2]), 4).numpy(),
                                  real.random.experimental.stateless_split(np.array([1, 2]), 4).numpy())
    np.testing.assert_array_equal(tf.random.fold_in([1, 2], 7).numpy(), real.random.fold_in([1, 2], 7).numpy())
    np.testing.assert_array_equal(tf.random.experimental.stateless_fold_in([9, 2], np.int64(3)).numpy(),
                                  real.random.experimental.stateless_fold_in([9, 2], np.int64(3)).numpy())


def test_stateless_categorical_matches_tensorflow(tf):
    real = tensorflow_or_skip()
    rows = np.random.RandomState(0).randn(3, 20).astype(np.float32)
    for logits, n in (([[0.5, 1.0, -1.0]], 10), ([[0.1, 0.2], [3.0, -np.inf]], 7), (rows, 33)):
        logits = np.asarray(logits, np.float32)
        expected = real.random.stateless_categorical(logits, n, [4, 5]).numpy()
        got = tf.random.stateless_categorical(logits, n, [4, 5])
        assert got.dtype == tf.int64
        np.testing.assert_array_equal(got.numpy(), expected)
    assert tf.random.stateless_categorical([[0.0, 0.0]], 3, [1, 2], dtype=tf.int32).dtype == tf.int32


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_generator_matches_tensorflow_draws_and_state(tf, dtype):
    real = tensorflow_or_skip()
    theirs, ours = real.random.Generator.from_seed(1), tf.random.Generator.from_seed(1)
    for method in ("normal", "uniform", "truncated_normal", "normal"):
        expected = getattr(theirs, method)([5, 3], dtype=dtype).numpy()
        np.testing.assert_array_equal(getattr(ours, method)([5, 3], dtype=dtype).numpy(), expected)
        np.testing.assert_array_equal(ours.state.numpy(), theirs.state.numpy())


def test_generator_ints_seeds_split_and_key_counter_match_tensorflow(tf):
    real = tensorflow_or_skip()
    big = 12345678901234567890123
    theirs, ours = real.random.Generator.from_seed(big), tf.random.Generator.from_seed(big)
    np.testing.assert_array_equal(ours.state.numpy(), theirs.state.numpy())
    for dtype in ("int32", "int64"):
        np.testing.assert_array_equal(ours.uniform([9], 3, 77, dtype=dtype).numpy(),
                                      theirs.uniform([9], 3, 77, dtype=dtype).numpy())
        np.testing.assert_array_equal(ours.uniform_full_int([4], dtype=dtype).numpy(),
                                      theirs.uniform_full_int([4], dtype=dtype).numpy())
    np.testing.assert_array_equal(ours.make_seeds(3).numpy(), theirs.make_seeds(3).numpy())
    for mine, real_one in zip(ours.split(2), theirs.split(2)):
        np.testing.assert_array_equal(mine.normal([4]).numpy(), real_one.normal([4]).numpy())
    theirs = real.random.Generator.from_key_counter(5, [7, 9], "philox")
    ours = tf.random.Generator.from_key_counter(5, [7, 9], "philox")
    np.testing.assert_array_equal(ours.state.numpy(), [7, 9, 5])
    np.testing.assert_array_equal(ours.normal([6]).numpy(), theirs.normal([6]).numpy())
    np.testing.assert_array_equal(tf.random.create_rng_state(5, "philox").numpy(),
                                  real.random.create_rng_state(5, "philox").numpy())


def test_generator_reset_copy_and_global(tf):
    g = tf.random.Generator.from_seed(7)
    first = g.normal([4]).numpy()
    copy = tf.random.Generator(g)
    np.testing.assert_array_equal(copy.uniform([3]).numpy(), g.uniform([3]).numpy())
    g.reset_from_seed(7)
    np.testing.assert_array_equal(g.normal([4]).numpy(), first)
    assert not np.array_equal(g.normal([4]).numpy(), first)
    g.reset(tf.random.Generator.from_seed(7).state)
    np.testing.assert_array_equal(g.normal([4]).numpy(), first)
    a, b = tf.random.Generator.from_non_deterministic_state(), tf.random.Generator.from_non_deterministic_state()
    assert not np.array_equal(a.state.numpy(), b.state.numpy())
    tf.random.set_global_generator(tf.random.Generator.from_seed(7))
    np.testing.assert_array_equal(tf.random.get_global_generator().normal([4]).numpy(), first)
    assert tf.random.experimental.Generator is tf.random.Generator


def test_generator_mean_is_differentiable(tf):
    mean = tf.Variable(1.0)
    g = tf.random.Generator.from_seed(2)
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(g.normal([3], mean=mean, stddev=2.0))
    assert float(tape.gradient(y, mean)) == 3.0


def test_stateful_draws_repeat_under_set_seed(tf):
    logits = tf.math.log([[0.2, 0.3, 0.5], [0.9, 0.05, 0.05]])

    def draws():
        tf.random.set_seed(11)
        return (tf.random.categorical(logits, 50).numpy(), tf.random.shuffle(tf.range(20)).numpy(),
                tf.random.uniform([30], minval=-3, maxval=9, dtype=tf.int64).numpy(),
                tf.random.gamma([5], [0.5, 2.0]).numpy(), tf.random.poisson([6], 3.0).numpy())

    first, second = draws(), draws()
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)
    categories, order, ints, gammas, counts = first
    assert categories.shape == (2, 50) and categories.dtype == np.int64 and set(categories.ravel()) <= {0, 1, 2}
    assert sorted(order) == list(range(20)) and list(order) != list(range(20))
    assert ints.dtype == np.int64 and ints.min() >= -3 and ints.max() < 9
    assert gammas.shape == (5, 2) and (gammas > 0).all()
    assert counts.shape == (6,) and counts.dtype == np.float32


def test_gamma_poisson_binomial_shapes_and_determinism(tf):
    a = tf.random.stateless_gamma([400, 2], [1, 2], alpha=[1.0, 9.0], beta=[1.0, 3.0])
    assert a.shape == (400, 2) and a.dtype == tf.float32
    np.testing.assert_array_equal(a.numpy(), tf.random.stateless_gamma([400, 2], [1, 2], [1.0, 9.0], [1.0, 3.0]).numpy())
    np.testing.assert_allclose(a.numpy().mean(axis=0), [1.0, 3.0], rtol=0.15)
    assert tf.random.gamma([4], [1.0, 2.0], beta=[[1.0], [2.0]]).shape == (4, 2, 2)
    p = tf.random.stateless_poisson([500], [3, 4], lam=4.0)
    assert p.dtype == tf.int32 and abs(p.numpy().mean() - 4.0) < 0.5
    b = tf.random.stateless_binomial([500], [3, 4], counts=10, probs=0.3)
    assert b.dtype == tf.int32 and b.numpy().max() <= 10 and abs(b.numpy().mean() - 3.0) < 0.4


def test_stateless_shapes_and_empty(tf):
    assert tf.random.stateless_normal([], [1, 2]).shape == ()
    assert tf.random.stateless_normal([0, 3], [1, 2]).shape == (0, 3)
    assert tf.random.stateless_truncated_normal([2, 0], [1, 2]).shape == (2, 0)
    assert tf.random.stateless_categorical([[0.0, 1.0]], 0, [1, 2]).shape == (1, 0)
    t = tf.random.stateless_truncated_normal([1000], [1, 2], mean=5.0, stddev=0.5).numpy()
    assert t.min() > 4.0 and t.max() < 6.0
    assert tf.random.shuffle(3).numpy() == 3


def test_bad_input(tf):
    with pytest.raises(tf.errors.InvalidArgumentError, match="shape \\[2\\]"):
        tf.random.stateless_normal([2], seed=[1, 2, 3])
    with pytest.raises(tf.errors.InvalidArgumentError, match="int32 or int64"):
        tf.random.stateless_uniform([2], seed=[1.0, 2.0])
    with pytest.raises(ValueError, match="maxval"):
        tf.random.uniform([2], dtype=tf.int32)
    with pytest.raises(ValueError, match="minval and maxval"):
        tf.random.stateless_uniform([2], [1, 2], minval=0, dtype=tf.int32)
    with pytest.raises(tf.errors.InvalidArgumentError, match="minval < maxval"):
        tf.random.stateless_uniform([2], [1, 2], minval=5, maxval=5, dtype=tf.int64)
    with pytest.raises(tf.errors.InvalidArgumentError, match="matrix"):
        tf.random.stateless_categorical([0.5, 0.5], 3, [1, 2])
    with pytest.raises(tf.errors.InvalidArgumentError, match="matrix"):
        tf.random.categorical([0.5, 0.5], 3)
    with pytest.raises(tf.errors.InvalidArgumentError, match="nonnegative"):
        tf.random.stateless_categorical([[0.5, 0.5]], -1, [1, 2])
    with pytest.raises(ValueError, match="int32 or int64"):
        tf.random.stateless_categorical([[0.5, 0.5]], 3, [1, 2], dtype=tf.float32)
    with pytest.raises(TypeError, match="floating"):
        tf.random.stateless_normal([2], [1, 2], dtype=tf.int32)
    with pytest.raises(ValueError, match="alg"):
        tf.random.stateless_normal([2], [1, 2], alg="foo")
    with pytest.raises(NotImplementedError, match="threefry"):
        tf.random.stateless_normal([2], [1, 2], alg="threefry")
    with pytest.raises(ValueError, match="3 int64 values"):
        tf.random.Generator(state=[1, 2], alg="philox")
    with pytest.raises(tf.errors.InvalidArgumentError, match="alpha"):
        tf.random.stateless_gamma([3], [1, 2], alpha=-1.0)
    with pytest.raises(NotImplementedError, match="tf.random.fixed_unigram_candidate_sampler"):
        tf.random.fixed_unigram_candidate_sampler
