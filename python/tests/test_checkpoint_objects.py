"""What tf.train.Checkpoint holds besides variables, as TensorFlow's tutorials checkpoint them: a dataset iterator
(iter(dataset), and a distributed dataset's) continues at the element after the saved one, a metric keeps its
accumulators, a Dropout layer its random stream; nested in a dict or a nested Checkpoint too."""
import numpy as np

import lockstep as tf


def dataset():
    return tf.data.Dataset.range(40).shuffle(40, seed=2).map(lambda x: x * 2).batch(4)


def test_an_iterator_restores_to_the_element_after_the_saved_one(tmp_path):
    it = iter(dataset())
    for _ in range(3):
        next(it)
    checkpoint = tf.train.Checkpoint(iterator=it)
    path = checkpoint.save(str(tmp_path / "ckpt"))
    expected = [next(it).numpy().tolist() for _ in range(4)]

    fresh = iter(dataset())
    tf.train.Checkpoint(iterator=fresh).restore(path).assert_consumed()
    assert [next(fresh).numpy().tolist() for _ in range(4)] == expected


def test_a_distributed_iterator_and_a_nested_one_restore(tmp_path):
    strategy = tf.distribute.MirroredStrategy()
    it = iter(strategy.experimental_distribute_dataset(dataset()))
    next(it)
    path = tf.train.Checkpoint(state={"iterator": it}).save(str(tmp_path / "ckpt"))
    expected = next(it).numpy().tolist()
    fresh = iter(strategy.experimental_distribute_dataset(dataset()))
    tf.train.Checkpoint(state={"iterator": fresh}).restore(path)
    assert next(fresh).numpy().tolist() == expected


def test_a_metric_keeps_its_accumulators(tmp_path):
    metric = tf.keras.metrics.SparseCategoricalAccuracy()
    metric.update_state([0, 1, 1], [[0.9, 0.1], [0.2, 0.8], [0.7, 0.3]])
    path = tf.train.Checkpoint(metric=metric).save(str(tmp_path / "ckpt"))
    fresh = tf.keras.metrics.SparseCategoricalAccuracy()
    tf.train.Checkpoint(metric=fresh).restore(path)
    assert np.isclose(fresh.result().numpy(), 2 / 3)
    fresh.update_state([0], [[0.9, 0.1]])
    assert np.isclose(fresh.result().numpy(), 3 / 4), "the restored counts go on accumulating"


def test_dropout_in_a_subclassed_model_continues_its_random_stream(tmp_path):
    class Net(tf.keras.Model):
        def __init__(self):
            super().__init__()
            self.dense = tf.keras.layers.Dense(8)
            self.dropout = tf.keras.layers.Dropout(0.5, seed=4)

        def call(self, x, training=False):
            return self.dropout(self.dense(x), training=training)

    x = np.ones((2, 3), np.float32)
    net = Net()
    net(x, training=True)
    path = tf.train.Checkpoint(model=net).save(str(tmp_path / "ckpt"))
    expected = net(x, training=True).numpy()

    again = Net()
    again(x)  # builds it; training=False draws nothing
    tf.train.Checkpoint(model=again).restore(path)
    np.testing.assert_array_equal(again(x, training=True).numpy() != 0, expected != 0)
