"""What TensorFlow resolved for this task, one "tf_env: key=value" line each.

    tfhive run --chief --ps 1 --workers 2 --evaluator --gpus-per-worker 0 -- python3 tf_env.py

Every task (chief, ps, worker, evaluator) prints what TensorFlow makes of the
environment tfhive gave it, then exits 0; it starts no server and trains
nothing, so a test can compare these lines with `tfhive plan`:

    tf_env: version=2.21.0
    tf_env: task_type=worker task_id=1
    tf_env: cluster={"chief": ["h1:2222"], "ps": ["h2:2222"], "worker": [...]}
    tf_env: master=h3:2223
    tf_env: rpc_layer=grpc
    tf_env: visible_devices=<CUDA_VISIBLE_DEVICES, or "unset">
    tf_env: devices=CPU,GPU
    tf_env: tfhive_task=worker:1 run_id=<TFHIVE_RUN_ID>

With --tf-flags (TF1 flags instead of TF_CONFIG) it prints the flags as the
ClusterSpec they make: task_type/task_id from --job_name/--task_index.

Follows the API pages of tf.distribute.cluster_resolver.TFConfigClusterResolver
(task_type, task_id, cluster_spec, master, rpc_layer) and
tf.config.list_physical_devices.
"""
import argparse
import json
import os

import tensorflow as tf


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    # Only with tfhive run --tf-flags; TF_CONFIG is used otherwise.
    p.add_argument("--ps_hosts", default=None)
    p.add_argument("--worker_hosts", default=None)
    p.add_argument("--job_name", default=None)
    p.add_argument("--task_index", type=int, default=None)
    args = p.parse_args()

    print("tf_env: version=%s" % tf.__version__)
    if args.job_name is not None:
        jobs = {}
        for job, flag in (("ps", args.ps_hosts), ("worker", args.worker_hosts)):
            if flag:
                jobs[job] = [h for h in flag.split(",") if h]
        spec = tf.train.ClusterSpec(jobs)
        task_type, task_id = args.job_name, args.task_index or 0
        print("tf_env: source=tf-flags")
        print("tf_env: task_type=%s task_id=%d" % (task_type, task_id))
        print("tf_env: cluster=%s" % json.dumps(spec.as_dict(), sort_keys=True))
        if task_type in spec.jobs:
            print("tf_env: master=%s" % spec.task_address(task_type, task_id))
        print("tf_env: rpc_layer=grpc")
    else:
        resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
        print("tf_env: source=%s" % ("TF_CONFIG" if os.environ.get("TF_CONFIG") else "none"))
        print("tf_env: task_type=%s task_id=%s" % (resolver.task_type, resolver.task_id))
        print("tf_env: cluster=%s" % json.dumps(resolver.cluster_spec().as_dict(), sort_keys=True))
        # master() is this task's own address in the cluster, "host:port"
        # (grpc:// only when TF_CONFIG has an "rpc_layer", which tfhive's
        # has not); the evaluator is not part of the training cluster.
        if resolver.task_type in resolver.cluster_spec().jobs:
            print("tf_env: master=%s" % resolver.master())
        else:
            print("tf_env: master=none (%s is not in the cluster)" % resolver.task_type)
        # No "rpc_layer" in TF_CONFIG means TensorFlow's default, grpc.
        print("tf_env: rpc_layer=%s" % (resolver.rpc_layer or "grpc"))
    print("tf_env: visible_devices=%s" % os.environ.get("CUDA_VISIBLE_DEVICES", "unset"))
    print("tf_env: devices=%s" % ",".join(d.device_type
                                          for d in tf.config.list_physical_devices()))
    print("tf_env: tfhive_task=%s run_id=%s" % (os.environ.get("TFHIVE_TASK", "unset"),
                                                os.environ.get("TFHIVE_RUN_ID", "unset")),
          flush=True)


if __name__ == "__main__":
    main()
