"""Parameter-server training: TF2 ParameterServerStrategy + ClusterCoordinator, custom training loop.

    tfhive run --chief --ps 2 --workers 2 --gpus-per-worker 0 -- python3 ps_strategy.py --model_dir=/shared/{run_id}
    tfhive run --chief --ps 2 --workers 2 --evaluator --gpus-per-worker 0 -- python3 ps_strategy.py --model_dir=/shared/{run_id}

- ps and worker tasks only run a tf.distribute.Server and join() it: they
  never end on their own (tfhive stops them when the chief has ended).
- The chief is the coordinator: it waits until every ps and worker accepts
  connections (tfhive starts all tasks at once), builds the strategy and,
  under its scope, the model's variables, which live on the ps tasks (it
  prints "chief: variable dense/kernel on /job:ps/replica:0/task:0/device:CPU:0"
  for each). It then schedules --steps_per_epoch training steps per epoch
  with ClusterCoordinator.schedule: each runs on whichever worker is free,
  and tf.print inside the step prints in that worker's own output
  ("worker step 12 loss=0.0345"; the step numbers of all workers together
  are 1..epochs*steps_per_epoch, each once). After each epoch the chief
  prints "chief: epoch 3 loss=0.0123 ..." (the mean of the epoch's step
  losses) and writes a checkpoint --model_dir/ckpt/ckpt-<epoch+1>
  (tf.train.CheckpointManager); after the last epoch it prints
  "chief: done, loss=..." and exits 0, which ends the run. A chief started
  again (tfhive --restarts restarts every task when the chief or a ps fails)
  resumes from the latest checkpoint ("chief: resumed from ... at epoch 3").
- With --evaluator, the evaluator task (TF_CONFIG: the training cluster and
  task type "evaluator") is a side-car evaluator: it waits for new
  checkpoints in --model_dir/ckpt (tf.train.checkpoints_iterator), restores
  each in turn and prints "evaluator: checkpoint ckpt-3 eval_loss=0.0123" on
  held-out data. Once it has evaluated the final checkpoint (ckpt-<epochs>)
  it prints "evaluator: done" and exits 0, unless tfhive has stopped it
  first because the chief ended: its end decides nothing. --model_dir must
  be storage both hosts see (NFS, a shared home).

Keras 3 (TF >= 2.16) has no ParameterServerStrategy support: Model.fit
cannot use it (DatasetCreator is gone) and so is keras.utils.SidecarEvaluator.
The model here is a plain tf.Module trained with plain SGD, nothing of Keras.

Follows the TensorFlow tutorial "Parameter server training with
ParameterServerStrategy" ("Clusters in the real world", "Training with a
custom training loop", "Evaluation": side-car evaluation with
tf.train.checkpoints_iterator) and the API pages of
tf.distribute.ParameterServerStrategy, tf.distribute.coordinator.ClusterCoordinator
and tf.train.CheckpointManager.
"""
import argparse
import os
import socket
import sys
import tempfile
import time

import tensorflow as tf

FEATURES = 10


def make_dataset(n, seed):
    """Synthetic regression y = x.w + 0.5 + noise, made here: nothing is downloaded."""
    w = tf.reshape(tf.range(1, FEATURES + 1, dtype=tf.float32) / FEATURES, [FEATURES, 1])
    x = tf.random.stateless_uniform([n, FEATURES], seed=[seed, 0])
    y = tf.matmul(x, w) + 0.5 + 0.01 * tf.random.stateless_normal([n, 1], seed=[seed, 1])
    return tf.data.Dataset.from_tensor_slices((x, y))


class Dense(tf.Module):
    """y = x.kernel + bias; under strategy.scope() its variables go to the ps tasks."""

    def __init__(self, units=1):
        super().__init__(name="dense")
        self.kernel = tf.Variable(tf.zeros([FEATURES, units]), name="dense/kernel")
        self.bias = tf.Variable(tf.zeros([units]), name="dense/bias")

    def __call__(self, x):
        return tf.matmul(x, self.kernel) + self.bias


def wait_for(addresses, timeout=300):
    """tfhive starts all tasks at once: wait until every server accepts connections."""
    deadline = time.time() + timeout
    for addr in addresses:
        host, port = addr.rsplit(":", 1)
        while True:
            try:
                socket.create_connection((host.strip("[]"), int(port)), timeout=5).close()
                break
            except OSError:
                if time.time() > deadline:
                    sys.exit("ps_strategy.py: %s not listening after %ds" % (addr, timeout))
                time.sleep(0.5)


def run_chief(resolver, args):
    spec = resolver.cluster_spec()
    wait_for(spec.job_tasks("ps") + spec.job_tasks("worker"))
    strategy = tf.distribute.ParameterServerStrategy(resolver)
    coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
    with strategy.scope():  # variables are created on the ps tasks, round-robin
        model = Dense()
        step = tf.Variable(0, dtype=tf.int64, name="global_step")
    for v in model.trainable_variables + (step,):
        print("chief: variable %s on %s" % (v.name.split(":")[0], v.device), flush=True)

    def dataset_fn():  # runs on every worker: its own shuffled, endless copy
        return make_dataset(4096, seed=42).shuffle(4096).repeat().batch(args.batch_size)

    per_worker_iterator = iter(coordinator.create_per_worker_dataset(dataset_fn))

    @tf.function
    def train_step(iterator):
        def replica_fn(x, y):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(model(x) - y))
            for var, grad in zip(model.trainable_variables,
                                 tape.gradient(loss, model.trainable_variables)):
                var.assign_sub(args.learning_rate * grad)
            n = step.assign_add(1)
            # Runs on the worker that runs the step: printed in its own output.
            tf.print(tf.strings.format("worker step {} loss={}", (n, loss)),
                     output_stream=sys.stdout)
            return loss

        x, y = next(iterator)
        return strategy.run(replica_fn, args=(x, y))

    ckpt_dir = os.path.join(args.model_dir, "ckpt")
    checkpoint = tf.train.Checkpoint(model=model, step=step)
    manager = tf.train.CheckpointManager(checkpoint, ckpt_dir, max_to_keep=None)
    first = 0
    if manager.latest_checkpoint:  # a restarted run (tfhive --restarts): resume
        checkpoint.restore(manager.latest_checkpoint)
        first = int(manager.latest_checkpoint.rsplit("-", 1)[1])
        print("chief: resumed from %s at epoch %d" % (manager.latest_checkpoint, first),
              flush=True)
    loss = float("nan")
    for epoch in range(first, args.epochs):
        losses = [coordinator.schedule(train_step, args=(per_worker_iterator,))
                  for _ in range(args.steps_per_epoch)]
        coordinator.join()  # every step of the epoch has run
        loss = sum(float(l.fetch()) for l in losses) / len(losses)
        path = manager.save(checkpoint_number=epoch + 1)
        print("chief: epoch %d loss=%.4f global_step=%d checkpoint %s"
              % (epoch, loss, int(step.numpy()), os.path.basename(path)), flush=True)
    print("chief: done, loss=%.4f, checkpoints in %s" % (loss, ckpt_dir), flush=True)


def run_evaluator(args):
    model = Dense()  # the same model, no strategy
    checkpoint = tf.train.Checkpoint(model=model, step=tf.Variable(0, dtype=tf.int64))
    x, y = next(iter(make_dataset(1024, seed=7).batch(1024)))  # held-out data
    ckpt_dir = os.path.join(args.model_dir, "ckpt")
    final = "ckpt-%d" % args.epochs
    print("evaluator: waiting for checkpoints in %s" % ckpt_dir, flush=True)
    done = set()
    # checkpoints_iterator yields the latest checkpoint each time there is a
    # new one (it polls every second); evaluate every one written since.
    for latest in tf.train.checkpoints_iterator(ckpt_dir, min_interval_secs=0):
        state = tf.train.get_checkpoint_state(ckpt_dir)
        for path in (state.all_model_checkpoint_paths if state else [latest]):
            name = os.path.basename(path)
            if name in done:
                continue
            done.add(name)
            checkpoint.restore(path).expect_partial()
            loss = tf.reduce_mean(tf.square(model(x) - y))
            print("evaluator: checkpoint %s eval_loss=%.4f" % (name, loss), flush=True)
        if final in done:  # the chief writes no more
            print("evaluator: done", flush=True)
            return


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model_dir", default=os.path.join(
        tempfile.gettempdir(), "tfhive-ps-" + os.environ.get("TFHIVE_RUN_ID", "local")))
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--steps_per_epoch", type=int, default=20)
    p.add_argument("--batch_size", type=int, default=32, help="batch of one step on one worker")
    p.add_argument("--learning_rate", type=float, default=0.1)
    args = p.parse_args()

    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    role = resolver.task_type
    if role in ("ps", "worker"):
        # Lets the coordinator notice a failed worker or ps (tutorial workaround).
        os.environ["GRPC_FAIL_FAST"] = "use_caller"
        server = tf.distribute.Server(
            resolver.cluster_spec(), job_name=role, task_index=resolver.task_id,
            protocol=resolver.rpc_layer or "grpc", start=True)
        print("%s:%d serving" % (role, resolver.task_id), flush=True)
        server.join()
    elif role == "chief":
        run_chief(resolver, args)
    elif role == "evaluator":
        run_evaluator(args)
    else:
        sys.exit("ps_strategy.py: TF_CONFIG has no chief/ps/worker/evaluator task (got %r); "
                 "start it with tfhive run --chief --ps N --workers M" % role)


if __name__ == "__main__":
    main()
