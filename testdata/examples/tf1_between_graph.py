"""TF1-style between-graph replication with asynchronous parameter servers.

    tfhive run --ps 2 --workers 2 --gpus-per-worker 0 --tf-flags -- python3 tf1_between_graph.py --train_steps=200

--tf-flags makes tfhive append --ps_hosts= --worker_hosts= --job_name= --task_index=
to each task's command; every task builds a tf.compat.v1.train.Server from them.
- ps tasks serve the variables: server.join(), until tfhive stops them.
- Each worker builds its own copy of the graph (graph mode:
  tf.compat.v1.disable_v2_behavior()); replica_device_setter puts the
  variables on the ps tasks, round-robin ("worker:1 variable w on
  /job:ps/task:1"), every other op on the worker. Every worker trains the
  same shared variables with asynchronous SGD until the shared global step
  reaches --train_steps, and counts its own steps in a shared vector
  updates_by_worker (on a ps), so that at the end each worker prints
      worker:1 done: local_steps=97 global_step=200 updates_by_worker=[103, 97] loss=0.0001
  (the last worker to end sees the final counts: one entry per worker, the
  sum is the global step). Every 50 local steps: "worker:0 global_step 120 loss=0.0012".
- After its first step each worker waits until every worker has made one
  (they count in updates_by_worker): the steps are tiny, and the workers'
  starts are seconds apart (TensorFlow's import, the chief's initialisation
  first), so a chief left alone can make all --train_steps before the last
  worker has begun; with the wait, every worker trains the shared variables.
- Worker 0 is the chief: it initialises the variables (and checkpoints to
  --model_dir when given: MonitoredTrainingSession); the other workers wait
  until it has. The run succeeds when every worker exits 0.

Follows the TensorFlow 1.x guide "Distributed TensorFlow" (section "Putting it
all together: example trainer program") and the API pages of
tf.compat.v1.train.replica_device_setter, tf.compat.v1.train.MonitoredTrainingSession
and tf.compat.v1.train.WorkerSessionCreator; runs on TensorFlow 1.15 and 2.x.
"""
import argparse
import time

import tensorflow as tf

v1 = tf.compat.v1
FEATURES = 10


def hosts(flag):
    return [h for h in flag.split(",") if h]


class WorkerSessionCreator(v1.train.WorkerSessionCreator):
    """The non-chief workers' session creator, checking every second (not 30).

    A non-chief worker waits until the chief has initialised the variables;
    TF's SessionManager checks every recovery_wait_secs=30 s, and
    MonitoredTrainingSession has no argument for it. As tfhive starts every
    task at once, the first check always comes too early: every non-chief
    would idle 30 s, and find the training over by then."""

    def _get_session_manager(self):
        if self._session_manager is None:
            self._session_manager = v1.train.SessionManager(
                local_init_op=self._scaffold.local_init_op,
                local_init_feed_dict=self._scaffold.local_init_feed_dict,
                ready_op=self._scaffold.ready_op,
                ready_for_local_init_op=self._scaffold.ready_for_local_init_op,
                graph=v1.get_default_graph(), recovery_wait_secs=1)
        return self._session_manager


def wait_for_workers(target, config, updates, name, timeout=300):
    """Returns once every worker has counted a step in updates (on a ps),
    or after timeout seconds (a worker that never starts fails its run in
    tfhive anyway; this one goes on alone). A plain session: a
    MonitoredSession's run would run the hooks too."""
    deadline = time.monotonic() + timeout
    with v1.Session(target, config=config) as sess:
        while True:
            counts = sess.run(updates)
            if all(c > 0 for c in counts):
                return
            if time.monotonic() > deadline:
                print("%s: gave up waiting for every worker after %d s: updates_by_worker=[%s]"
                      % (name, timeout, ", ".join(str(c) for c in counts)), flush=True)
                return
            time.sleep(0.05)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ps_hosts", default="", help="comma-separated host:port")
    p.add_argument("--worker_hosts", default="", help="comma-separated host:port")
    p.add_argument("--job_name", choices=["ps", "worker"], required=True)
    p.add_argument("--task_index", type=int, default=0)
    p.add_argument("--train_steps", type=int, default=200, help="global steps to train")
    p.add_argument("--batch_size", type=int, default=32)
    p.add_argument("--learning_rate", type=float, default=0.1)
    p.add_argument("--model_dir", default="", help="chief's checkpoint dir (default: none)")
    args = p.parse_args()
    ps_hosts, worker_hosts = hosts(args.ps_hosts), hosts(args.worker_hosts)
    if not ps_hosts or not worker_hosts:
        p.error("needs --ps_hosts and --worker_hosts (tfhive run --ps N --workers M --tf-flags)")

    v1.disable_v2_behavior()  # graph mode, sessions, TF1 variables
    cluster = v1.train.ClusterSpec({"ps": ps_hosts, "worker": worker_hosts})
    server = v1.train.Server(cluster, job_name=args.job_name, task_index=args.task_index)
    if args.job_name == "ps":
        print("ps:%d serving" % args.task_index, flush=True)
        server.join()
        return

    name = "worker:%d" % args.task_index
    chief = args.task_index == 0
    # Variables go round-robin to the ps tasks, every other op to this worker.
    with v1.device(v1.train.replica_device_setter(
            worker_device="/job:worker/task:%d" % args.task_index, cluster=cluster)):
        global_step = v1.train.get_or_create_global_step()
        # Synthetic linear regression made in the graph: nothing is downloaded.
        true_w = tf.reshape(tf.range(1, FEATURES + 1, dtype=tf.float32) / FEATURES,
                            [FEATURES, 1])
        x = v1.random_uniform([args.batch_size, FEATURES])
        y = tf.matmul(x, true_w) + 0.5 + 0.01 * v1.random_normal([args.batch_size, 1])
        w = v1.get_variable("w", [FEATURES, 1], initializer=v1.zeros_initializer())
        b = v1.get_variable("b", [1], initializer=v1.zeros_initializer())
        updates = v1.get_variable("updates_by_worker", [len(worker_hosts)], dtype=tf.int64,
                                  initializer=v1.zeros_initializer(), trainable=False)
        loss = v1.losses.mean_squared_error(y, tf.matmul(x, w) + b)
        train_op = tf.group(
            v1.train.GradientDescentOptimizer(args.learning_rate).minimize(
                loss, global_step=global_step),
            v1.scatter_add(updates, [args.task_index], tf.constant([1], tf.int64)))
    for var in (global_step, w, b, updates):
        print("%s variable %s on %s" % (name, var.op.name, var.device), flush=True)

    # Talk only to the ps tasks and this worker, so a worker that has already
    # finished and exited cannot hold the others up.
    config = v1.ConfigProto(
        allow_soft_placement=True,
        device_filters=["/job:ps", "/job:worker/task:%d" % args.task_index])
    hooks = [v1.train.StopAtStepHook(last_step=args.train_steps)]
    if chief:
        session = v1.train.MonitoredTrainingSession(
            master=server.target, is_chief=True, checkpoint_dir=args.model_dir or None,
            hooks=hooks, config=config)
    else:
        session = v1.train.MonitoredSession(
            session_creator=WorkerSessionCreator(master=server.target, config=config),
            hooks=hooks)
    local_steps, value = 0, float("nan")
    with session as sess:
        while not sess.should_stop():
            _, step, value = sess.run([train_op, global_step, loss])
            local_steps += 1
            if local_steps == 1:
                wait_for_workers(server.target, config, updates, name)
            if local_steps % 50 == 0:
                print("%s global_step %d loss=%.4f" % (name, step, value), flush=True)
    # The shared variables as they are now (the other workers may still add a step).
    with v1.Session(server.target, config=config) as sess:
        step, counts = sess.run([global_step, updates])
    print("%s done: local_steps=%d global_step=%d updates_by_worker=[%s] loss=%.4f"
          % (name, local_steps, step, ", ".join(str(c) for c in counts), value), flush=True)


if __name__ == "__main__":
    main()
