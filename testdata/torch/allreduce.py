#!/usr/bin/env python3
"""One all-reduce over the ranks of `tfhive run --framework torch`.

Written as a script for torchrun would be: the rendezvous comes from the
environment (MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE through env://), the
backend is gloo, so no GPU is needed. Every rank contributes rank+1, the
all_reduce sums them, and every rank checks the sum against
WORLD_SIZE*(WORLD_SIZE+1)/2, printing

    rank R of W: sum S ok

and exiting 0, or exiting 1 on a wrong sum. A rank that cannot meet the
others gives up after --timeout seconds (default 60).

--fail-rank R makes rank R exit 3 before joining, as a crashed rank would:
the others then wait in the rendezvous until tfhive stops them. With
--fail-attempts N it does so only while $TFHIVE_ATTEMPT (tfhive run
--restarts) is below N.
"""

import argparse
import os
import sys
from datetime import timedelta

import torch
import torch.distributed as dist


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--fail-rank", type=int, default=-1)
    ap.add_argument("--fail-attempts", type=int, default=0)
    args = ap.parse_args()
    attempt = int(os.environ.get("TFHIVE_ATTEMPT") or 0)
    if args.fail_attempts > 0 and attempt >= args.fail_attempts:
        args.fail_rank = -1

    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    where = f"rank {rank} of {world}"
    if rank == args.fail_rank:
        print(f"{where}: failing on purpose", file=sys.stderr, flush=True)
        return 3

    dist.init_process_group("gloo", init_method="env://", timeout=timedelta(seconds=args.timeout))
    try:
        if dist.get_rank() != rank or dist.get_world_size() != world:
            print(f"{where}: the group says rank {dist.get_rank()} of {dist.get_world_size()}", file=sys.stderr, flush=True)
            return 1
        t = torch.tensor([float(rank + 1)], dtype=torch.float64)
        dist.all_reduce(t, op=dist.ReduceOp.SUM)
        got, want = int(t.item()), world * (world + 1) // 2
        if got != want:
            print(f"{where}: sum {got}, want {want}", file=sys.stderr, flush=True)
            return 1
        print(f"{where}: sum {got} ok", flush=True)
        # No rank leaves (closing its sockets) before every rank has its sum.
        dist.barrier()
        return 0
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    sys.exit(main())
