"""Synchronous data-parallel training: MultiWorkerMirroredStrategy + Keras 3 Model.fit.

    tfhive run --workers 3 --gpus-per-worker 0 --restarts 2 -- python3 multi_worker_mirrored.py --model_dir=/shared/{run_id}
    tfhive run --workers 4 --gpus-per-worker 2 --strategy pack -- python3 multi_worker_mirrored.py --model_dir=/shared/{run_id}

Every worker runs this same script; the strategy reads TF_CONFIG (workers
only, no ps, no chief) and keeps one replica per visible GPU (or one on the
CPU with --gpus-per-worker 0), all-reducing gradients across all of them.
Every worker prints, at the start and the end of each epoch (Keras' epoch
index, from 0):

    worker:1 epoch 3 start
    worker:1 epoch 3 end loss=0.1234

A backup of the training state (weights, optimizer, epoch) goes to
--model_dir/backup after every epoch (keras.callbacks.BackupAndRestore), so
when a worker dies and tfhive --restarts starts every worker again with the
same TF_CONFIG, training resumes at the epoch after the last completed one
("worker:0 resumed from backup at epoch 4") instead of epoch 0. --model_dir
must then be a directory every worker's host sees (a shared home, NFS).
Worker 0 is the chief: only it writes the backup and the final model
(--model_dir/model.keras); the other workers read the chief's backup, save
their model to a temporary directory and delete it. The run succeeds when
every worker exits 0; the backup is deleted at the end of a complete fit.

--epoch_seconds stretches each epoch (a sleep after every step) so that a
test has time to kill a worker mid-training.

Follows the TensorFlow docs: tutorial "Multi-worker training with Keras"
(sections "Train the model", "Dataset sharding", "Fault tolerance" with
BackupAndRestore, "Model saving and loading"), the API page of
tf.distribute.MultiWorkerMirroredStrategy, and Keras 3's API page of
keras.callbacks.BackupAndRestore.
"""
import argparse
import os
import tempfile
import time

import numpy as np
import tensorflow as tf
import keras


def is_chief(resolver):
    """Worker 0 is the chief unless the cluster has a 'chief' task."""
    if resolver.task_type is None:  # no TF_CONFIG: a single local worker
        return True
    if "chief" in resolver.cluster_spec().jobs:
        return resolver.task_type == "chief"
    return resolver.task_type == "worker" and resolver.task_id == 0


def write_path(path, resolver):
    """The chief writes to path; another worker to a temporary directory beside it."""
    if is_chief(resolver):
        return path
    tmp = os.path.join(os.path.dirname(path), "workertemp_%d" % resolver.task_id)
    tf.io.gfile.makedirs(tmp)
    return os.path.join(tmp, os.path.basename(path))


class Sequential(keras.Sequential):
    """keras.Sequential whose Model.fit works under MultiWorkerMirroredStrategy.

    Keras 3's TensorFlow trainer (3.15 at least) fails twice with more than
    one worker (keras-team/keras#20585, tensorflow/tensorflow#72388):
    1. before the first step it builds the model from a first batch that it
       averages across the replicas with strategy.reduce, which cannot reduce
       an (x, y) tuple across workers: "Attempt to convert a value
       (PerReplica:...) with an unsupported type". Shapes and dtypes are all
       the build needs: take them from this worker's own part of the batch.
    2. after every step it averages the step's logs across the workers with
       strategy.reduce("MEAN", v, axis=0), which a scalar has no axis 0 for:
       "Invalid reduction dimension 0 for input with 0 dimensions". Give it
       each log as a 1-element vector: the mean over axis 0 of all replicas'
       vectors is the scalar mean fit expects."""

    def _maybe_symbolic_build(self, iterator=None, data_batch=None):
        if iterator is not None and self.distribute_strategy is not None:
            for _, _, it in iterator:
                batch = next(it)
                break
            data_batch = tf.nest.map_structure(
                lambda v: self.distribute_strategy.experimental_local_results(v)[0], batch)
            iterator = None
        super()._maybe_symbolic_build(iterator=iterator, data_batch=data_batch)

    def train_step(self, data):
        return {k: tf.reshape(v, [1]) for k, v in super().train_step(data).items()}


class ChiefBackupAndRestore(keras.callbacks.BackupAndRestore):
    """keras.callbacks.BackupAndRestore, with only the chief writing and deleting.

    Keras 3's BackupAndRestore knows nothing of multi-worker training: every
    worker would write the same backup_dir/latest.weights.h5 at the same
    moment (h5py refuses a file another process holds open) and every worker
    would rmtree the directory at the end. The workers of a synchronous
    strategy hold the same weights, so one copy, the chief's, is enough;
    every worker restores from it (on_train_begin is the parent's).

    double_checkpoint keeps the epoch before too: a SIGKILL in the middle of
    writing the backup (a preemption's grace over: tfhive run --grace) leaves
    a file h5py cannot open, and the restore then falls back to that one."""

    def __init__(self, backup_dir, chief):
        super().__init__(backup_dir=backup_dir, double_checkpoint=True)
        self._chief = chief

    def _save_model(self):
        if self._chief:
            super()._save_model()

    def on_train_end(self, logs=None):
        if self._chief:
            super().on_train_end(logs)


class EpochLog(keras.callbacks.Callback):
    """Greppable epoch lines on every worker, and the --epoch_seconds stretch."""

    def __init__(self, name, step_sleep):
        super().__init__()
        self._name, self._step_sleep = name, step_sleep

    def on_train_begin(self, logs=None):
        # BackupAndRestore (earlier in the list) has set the epoch fit starts at.
        initial = getattr(self.model, "_initial_epoch", None) or 0
        if initial:
            print("%s resumed from backup at epoch %d" % (self._name, initial), flush=True)

    def on_epoch_begin(self, epoch, logs=None):
        print("%s epoch %d start" % (self._name, epoch), flush=True)

    def on_train_batch_end(self, batch, logs=None):
        if self._step_sleep:
            time.sleep(self._step_sleep)

    def on_epoch_end(self, epoch, logs=None):
        print("%s epoch %d end loss=%.4f" % (self._name, epoch, (logs or {})["loss"]), flush=True)


def make_dataset(n=2048, seed=0):
    """MNIST-like synthetic data made here (nothing is downloaded): 28x28 inputs,
    10 classes given by a fixed random linear map. The same seed on every worker
    yields the same data, which tf.data then shards across workers."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 28, 28)).astype(np.float32)
    w = rng.standard_normal((28 * 28, 10)).astype(np.float32)
    y = np.argmax(x.reshape(n, -1) @ w, axis=1).astype(np.int64)
    return tf.data.Dataset.from_tensor_slices((x, y))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model_dir", default=os.path.join(
        tempfile.gettempdir(), "tfhive-mwms-" + os.environ.get("TFHIVE_RUN_ID", "local")),
        help="backup and final model; shared by the workers' hosts")
    p.add_argument("--epochs", type=int, default=8)
    p.add_argument("--steps_per_epoch", type=int, default=10)
    p.add_argument("--batch_size", type=int, default=32, help="per replica (GPU, or CPU)")
    p.add_argument("--epoch_seconds", type=float, default=0.0,
                   help="make each epoch last at least about this long (sleep after each step)")
    args = p.parse_args()

    # Create the strategy before any other TensorFlow op: it parses TF_CONFIG,
    # starts this task's gRPC server and configures the collective ops.
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    resolver = strategy.cluster_resolver
    chief = is_chief(resolver)
    name = "%s:%s" % (resolver.task_type or "worker", resolver.task_id or 0)
    print("%s: %d replicas in sync" % (name, strategy.num_replicas_in_sync), flush=True)

    # tf.data.Dataset.batch takes the global batch: per-replica x replicas.
    global_batch = args.batch_size * strategy.num_replicas_in_sync
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
    dataset = (make_dataset().shuffle(2048, seed=1).repeat()
               .batch(global_batch).with_options(options))

    with strategy.scope():  # model building and compile under the scope
        model = Sequential([
            keras.Input(shape=(28, 28)),
            keras.layers.Flatten(),
            keras.layers.Dense(64, activation="relu"),
            keras.layers.Dense(10),
        ])
        model.compile(optimizer=keras.optimizers.Adam(learning_rate=1e-3),
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                      metrics=["accuracy"])
    tf.io.gfile.makedirs(args.model_dir)
    callbacks = [
        ChiefBackupAndRestore(os.path.join(args.model_dir, "backup"), chief),
        EpochLog(name, args.epoch_seconds / max(args.steps_per_epoch, 1)),
    ]
    model.fit(dataset, epochs=args.epochs, steps_per_epoch=args.steps_per_epoch,
              callbacks=callbacks, verbose=0)

    # Every worker saves; only the chief's copy is kept.
    target = write_path(os.path.join(args.model_dir, "model.keras"), resolver)
    model.save(target)
    if chief:
        print("%s: model saved to %s" % (name, target), flush=True)
    else:
        tf.io.gfile.rmtree(os.path.dirname(target))
        print("%s: done" % name, flush=True)


if __name__ == "__main__":
    main()
