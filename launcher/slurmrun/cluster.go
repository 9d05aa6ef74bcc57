package slurmrun

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/tfhive/tfhive/probe/remote"
	"github.com/tfhive/tfhive/probe/remote/shscript"
)

var (
	statusSh = shscript.Load(Scripts, "scripts/status.sh")
	queueSh  = shscript.Load(Scripts, "scripts/queue.sh")
)

// Node is one node of a partition as sinfo tells it.
type Node struct {
	Name, Partition, State string
	// Default: the partition is the cluster's default (sinfo's "debug*").
	Default bool
	// GPUs and GPUsUsed count its "gpu" generic resources; GPUType is
	// their type where the cluster names one ("a100").
	GPUs, GPUsUsed int
	GPUType        string
	// CPUs is sinfo's allocated/idle/other/total.
	CPUs string
}

// Pending is one of the user's pending jobs.
type Pending struct {
	ID, Name, Partition, Nodes, GRES, Reason, Submitted, Priority string
}

// Nodes runs status.sh on the login node: every node of every partition
// (of partition alone, when given).
func Nodes(ctx context.Context, ex remote.Executor, login, partition string) ([]Node, error) {
	out, err := runScript(ctx, ex, login, "sinfo", statusSh.With(setPartition(partition)))
	if err != nil {
		return nil, err
	}
	return ParseNodes(out), nil
}

// Queue runs queue.sh on the login node: the user's pending jobs.
func Queue(ctx context.Context, ex remote.Executor, login, partition string) ([]Pending, error) {
	out, err := runScript(ctx, ex, login, "squeue", queueSh.With(setPartition(partition)))
	if err != nil {
		return nil, err
	}
	return ParsePending(out), nil
}

// maxListing bounds what sinfo and squeue may print: a cluster of ten
// thousand nodes is a megabyte. A listing past it is not read at all: one
// cut short would leave out nodes, or jobs ahead in the queue, without
// saying so.
const maxListing = 16 << 20

func runScript(ctx context.Context, ex remote.Executor, login, what, script string) ([]byte, error) {
	rc, out, errb, err := remote.RunBounded(ctx, ex, "sh -s", strings.NewReader(script), maxListing, maxOwn)
	if errors.Is(err, remote.ErrTooMuchOutput) {
		return nil, fmt.Errorf("%s: %s: %w: not read", login, what, err)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", login, what, err)
	}
	if rc != 0 {
		msg := strings.TrimSpace(string(errb))
		if msg == "" {
			msg = fmt.Sprintf("exit %d", rc)
		}
		return nil, fmt.Errorf("%s: %s: %s", login, what, strings.TrimPrefix(msg, "tfhive: error: "))
	}
	return out, nil
}

// ParseNodes reads status.sh's lines ("sinfo|NODE|PARTITION|STATE|GRES|
// GRES_USED|CPUS"); a node in two partitions is a line each.
func ParseNodes(out []byte) []Node {
	var nodes []Node
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 4096), maxLine)
	for sc.Scan() {
		f := strings.Split(strings.TrimPrefix(sc.Text(), "sinfo|"), "|")
		if !strings.HasPrefix(sc.Text(), "sinfo|") || len(f) < 6 {
			continue
		}
		n := Node{Name: strings.TrimSpace(f[0]), Partition: strings.TrimSpace(f[1]), State: strings.TrimSpace(f[2]), CPUs: strings.TrimSpace(f[5])}
		n.Partition, n.Default = strings.CutSuffix(n.Partition, "*")
		n.GPUs, n.GPUType = gpus(f[3])
		n.GPUsUsed, _ = gpus(f[4])
		nodes = append(nodes, n)
	}
	return nodes
}

// gresRE is one generic resource of sinfo's Gres or GresUsed:
// "gpu:2", "gpu:a100:4(S:0-1)", "gpu:a100:1(IDX:0)", "gpu:0".
var gresRE = regexp.MustCompile(`^gpu(?::([A-Za-z0-9_.-]+))?:([0-9]+)`)

// gpus counts the GPUs of a Gres list ("gpu:a100:4(S:0-1),shard:8").
func gpus(list string) (n int, typ string) {
	for _, g := range splitGres(strings.TrimSpace(list)) {
		m := gresRE.FindStringSubmatch(g)
		if m == nil {
			continue
		}
		k, _ := strconv.Atoi(m[2])
		n += k
		if typ == "" {
			typ = m[1]
		}
	}
	return n, typ
}

// splitGres splits at the commas outside parentheses.
func splitGres(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

// ParsePending reads queue.sh's lines.
func ParsePending(out []byte) []Pending {
	var ps []Pending
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 4096), maxLine)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "squeue|")
		f := strings.SplitN(line, "|", 8)
		if !ok || len(f) < 8 {
			continue
		}
		ps = append(ps, Pending{ID: f[0], Partition: f[1], Nodes: f[2], GRES: f[3], Reason: f[4], Submitted: f[5], Priority: f[6], Name: f[7]})
	}
	return ps
}

func setPartition(p string) shscript.Var { return shscript.Set("tfhive_partition", p) }
