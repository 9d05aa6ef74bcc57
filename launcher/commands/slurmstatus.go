package commands

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/tfhive/tfhive/launcher/slurmrun"
	"github.com/tfhive/tfhive/launcher/view"
	"github.com/tfhive/tfhive/probe/inventory"
)

// slurmStatus is `tfhive status --on slurm`: the partitions' nodes and
// their GPUs, free and in use, as status shows hosts (sinfo); --watch
// redraws it as status --watch does, an sinfo each time over the one
// connection.
func slurmStatus(ctx context.Context, o StatusOptions) error {
	if err := checkOnSlurm(o.Slurm); err != nil {
		return err
	}
	if o.Watch < 0 {
		return usagef("--watch must not be negative")
	}
	// Each refresh is an sinfo, which the cluster's slurmctld answers
	// among every user's requests: no faster than sinfo --iterate's
	// smallest, a second.
	if o.Watch != 0 && o.Watch < time.Second {
		return &UsageError{Msg: fmt.Sprintf("--watch %s: on Slurm 1s at least (each refresh is an sinfo, which the cluster's slurmctld answers)", o.Watch),
			Fix: "--watch 2s"}
	}
	ex, login, err := dialLogin(ctx, o.Hosts, o.Slurm.Login, o.Stderr)
	if err != nil {
		return err
	}
	defer ex.Close()
	show := func(w io.Writer) (inventory.Inventory, error) {
		nodes, err := slurmrun.Nodes(ctx, ex, login, o.Slurm.Partition)
		if err != nil {
			return inventory.Inventory{}, err
		}
		return inventory.Inventory{}, writeSlurmNodes(w, o.JSON, login, nodes)
	}
	if o.Watch == 0 {
		_, err := show(o.Stdout)
		return err
	}
	return o.watch(ctx, "tfhive status --on slurm", show, "")
}

// writeSlurmNodes prints sinfo's nodes as status prints hosts: a row a
// node of a partition, then the GPUs free (or one JSON document).
func writeSlurmNodes(w io.Writer, asJSON bool, login string, nodes []slurmrun.Node) error {
	if asJSON {
		if nodes == nil {
			nodes = []slurmrun.Node{}
		}
		return json.NewEncoder(w).Encode(map[string]any{"login": login, "nodes": nodes})
	}
	var rows [][]string
	total, free, up := 0, 0, map[string]bool{}
	for _, n := range nodes {
		part := n.Partition
		if n.Default {
			part += "*"
		}
		gpus := strconv.Itoa(n.GPUs)
		if n.GPUType != "" {
			gpus += " " + n.GPUType
		}
		f := max(n.GPUs-n.GPUsUsed, 0)
		if !nodeUsable(n.State) {
			f = 0
		}
		rows = append(rows, []string{part, n.Name, n.State, gpus, strconv.Itoa(n.GPUsUsed), strconv.Itoa(f), n.CPUs})
		// A node in two partitions is one node: counted once.
		if !up[n.Name] {
			up[n.Name] = true
			total += n.GPUs
			free += f
		}
	}
	if err := view.WriteTable(w, []string{"PARTITION", "NODE", "STATE", "GPUS", "USED", "FREE", "CPUS(A/I/O/T)"}, rows); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%d of %d GPUs free on %d nodes (sinfo on %s)\n", free, total, len(up), login)
	return err
}

// nodeUsable: a node in this state can start a job (sinfo's long
// states; a trailing * or ~ is a flag of it, a node not responding or
// powered down, which takes no job now either).
func nodeUsable(state string) bool {
	switch state {
	case "idle", "mixed", "allocated", "completing":
		return true
	}
	return false
}

// slurmQueue is `tfhive queue --on slurm`: the user's pending jobs, in
// the order Slurm would start them, and why each waits (squeue).
func slurmQueue(ctx context.Context, o QueueOptions) error {
	if err := checkOnSlurm(o.Slurm); err != nil {
		return err
	}
	ex, login, err := dialLogin(ctx, o.Hosts, o.Slurm.Login, o.Stderr)
	if err != nil {
		return err
	}
	defer ex.Close()
	ps, err := slurmrun.Queue(ctx, ex, login, o.Slurm.Partition)
	if err != nil {
		return err
	}
	if o.JSON {
		if ps == nil {
			ps = []slurmrun.Pending{}
		}
		return json.NewEncoder(o.Stdout).Encode(map[string]any{"login": login, "pending": ps})
	}
	if len(ps) == 0 {
		_, err := fmt.Fprintf(o.Stdout, "no job of yours is pending (squeue on %s)\n", login)
		return err
	}
	var rows [][]string
	for i, p := range ps {
		rows = append(rows, []string{strconv.Itoa(i + 1), p.ID, p.Name, p.Partition, p.Nodes, p.GRES, p.Reason, p.Submitted})
	}
	return view.WriteTable(o.Stdout, []string{"#", "JOBID", "NAME", "PARTITION", "NODES", "GRES", "WAITING FOR", "SUBMITTED"}, rows)
}

func checkOnSlurm(s SlurmOptions) error {
	if s.On != OnSlurm {
		return &UsageError{Msg: fmt.Sprintf("--on %q: the one place besides the hosts is slurm", s.On), Fix: "--on slurm --login HOST"}
	}
	return nil
}
