package view

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/tfhive/tfhive/probe/wording"
	"github.com/tfhive/tfhive/schedule"
)

// WritePlan renders a plan for a person, in four blocks separated by blank
// lines: a one-line summary, the task table, the resource matrix (host × GPU,
// each cell the task holding the GPU, "busy", "excl" or "free"; "-" where a
// host has no such GPU; with --nic, a NIC column names the interface each
// host's tasks use) and every task's TF_CONFIG — for a torch plan, every
// rank's torchrun variables instead, the master on the summary line. Tables
// are plain columns so that grep and awk work on them.
func WritePlan(w io.Writer, p *schedule.Plan) error {
	nGPUs := 0
	for _, t := range p.Tasks {
		nGPUs += len(t.GPUs)
	}
	hosts := p.Hosts()
	nic := ""
	if p.NIC != "" {
		nic = ", nic " + p.NIC
	}
	var err error
	if p.Torch() {
		_, err = fmt.Fprintf(w, "run %s: torch, %s on %s, %s, strategy %s%s, master %s\n", p.RunID,
			wording.Count(len(p.Tasks), "rank"), wording.Count(len(hosts), "host"), wording.Count(nGPUs, "GPU"), p.Strategy, nic, p.Master)
	} else {
		_, err = fmt.Fprintf(w, "run %s: %s on %s, %s, strategy %s%s\n", p.RunID,
			wording.Count(len(p.Tasks), "task"), wording.Count(len(hosts), "host"), wording.Count(nGPUs, "GPU"), p.Strategy, nic)
	}
	if err == nil && p.Code != nil {
		_, err = io.WriteString(w, codeLine(p.Code)+"\n")
	}
	if err == nil {
		_, err = io.WriteString(w, "\n")
	}
	if err != nil {
		return err
	}

	rows := make([][]string, len(p.Tasks))
	for i, t := range p.Tasks {
		rows[i] = []string{t.Role, strconv.Itoa(t.Index), t.Host, t.Address, IntList(t.GPUs), Dash(viewArgv(t.Argv))}
	}
	if err := WriteTable(w, []string{"ROLE", "INDEX", "HOST", "ADDRESS", "GPUS", "COMMAND"}, rows); err != nil {
		return err
	}
	if _, err := io.WriteString(w, "\n"); err != nil {
		return err
	}
	if err := writeMatrix(w, p.Matrix, p.NIC != ""); err != nil {
		return err
	}
	if _, err := io.WriteString(w, "\n"); err != nil {
		return err
	}
	if p.Torch() {
		return writeRanks(w, p)
	}
	rows = make([][]string, len(p.Tasks))
	for i, t := range p.Tasks {
		rows[i] = []string{t.ID, t.TFConfig}
	}
	return WriteTable(w, []string{"TASK", "TF_CONFIG"}, rows)
}

// writeRanks shows what sets a torch rank apart: the variables of its env
// that differ between ranks (MASTER_ADDR, MASTER_PORT and WORLD_SIZE are the
// same for all and on the summary line).
func writeRanks(w io.Writer, p *schedule.Plan) error {
	vars := []string{"RANK", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "CUDA_VISIBLE_DEVICES"}
	rows := make([][]string, len(p.Tasks))
	for i, t := range p.Tasks {
		rows[i] = []string{t.ID}
		for _, v := range vars {
			rows[i] = append(rows[i], Dash(t.Env[v]))
		}
	}
	return WriteTable(w, append([]string{"TASK"}, vars...), rows)
}

// writeMatrix has one column per GPU index seen on any host, so that GPU 3
// of every host lines up, and a NOTE column for hosts without usable GPUs;
// with nics, a NIC column after the address ("-" where none was chosen).
func writeMatrix(w io.Writer, m []schedule.MatrixHost, nics bool) error {
	var idx []int
	for _, h := range m {
		for _, g := range h.GPUs {
			if !slices.Contains(idx, g.Index) {
				idx = append(idx, g.Index)
			}
		}
	}
	slices.Sort(idx)
	header := []string{"HOST", "ADDRESS"}
	if nics {
		header = append(header, "NIC")
	}
	for _, i := range idx {
		header = append(header, "GPU"+strconv.Itoa(i))
	}
	header = append(header, "NOTE")
	rows := make([][]string, len(m))
	for r, h := range m {
		row := []string{h.Host, h.Address}
		if nics {
			row = append(row, Dash(h.Interface))
		}
		for _, i := range idx {
			cell := "-"
			for _, g := range h.GPUs {
				if g.Index == i {
					cell = matrixCell(g)
				}
			}
			row = append(row, cell)
		}
		rows[r] = append(row, h.Note)
	}
	return WriteTable(w, header, rows)
}

func matrixCell(g schedule.MatrixGPU) string {
	switch {
	case g.Task != "":
		return g.Task
	case g.State == schedule.Busy:
		return "busy"
	case g.State == schedule.Excluded:
		return "excl" // short: the matrix is read across, 8+ columns wide
	}
	return "free"
}

// WritePlanJSON writes the plan document described on schedule.Plan,
// indented, one document per call. `run` reads back the same structure.
//
// Tasks are encoded one at a time: each holds a TF_CONFIG listing every
// task, so the document grows with the square of the tasks (10 MB at
// 512), and encoding it whole kept several copies of it in memory. The
// bytes are what encoding the plan whole gives.
func WritePlanJSON(w io.Writer, p *schedule.Plan) error {
	if p.Tasks == nil {
		return planEncoder(w, "").Encode(p)
	}
	head := *p
	head.Tasks = []schedule.Task{}
	var hb bytes.Buffer
	if err := planEncoder(&hb, "").Encode(&head); err != nil {
		return err
	}
	// Outside JSON strings (where quotes are escaped) this text is the
	// empty task list's and nothing else.
	before, after, ok := bytes.Cut(hb.Bytes(), []byte(`"tasks": []`))
	if !ok {
		return fmt.Errorf("plan JSON without its task list")
	}
	bw := bufio.NewWriter(w)
	bw.Write(before)
	bw.WriteString(`"tasks": [`)
	var tb bytes.Buffer
	te := planEncoder(&tb, "    ")
	for i := range p.Tasks {
		tb.Reset()
		if err := te.Encode(&p.Tasks[i]); err != nil {
			return err
		}
		if i > 0 {
			bw.WriteByte(',')
		}
		bw.WriteString("\n    ")
		bw.Write(bytes.TrimSuffix(tb.Bytes(), []byte("\n")))
	}
	if len(p.Tasks) > 0 {
		bw.WriteString("\n  ")
	}
	bw.WriteByte(']')
	bw.Write(after)
	return bw.Flush()
}

func planEncoder(w io.Writer, prefix string) *json.Encoder {
	enc := json.NewEncoder(w)
	enc.SetIndent(prefix, "  ")
	// TF_CONFIG and commands are not HTML; \u003c in them only confuses.
	enc.SetEscapeHTML(false)
	return enc
}

func Dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// viewArgv shows argv the way a person would type it into sh, so that a
// command copied from the table runs the same.
func viewArgv(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = viewQuote(a)
	}
	return strings.Join(q, " ")
}

func viewQuote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("@%+=:,./-_", c)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// codeLine says what --sync will do: "code 1a2b3c4d5e6f: 12 files,
// 1.2 MiB; on gpu01; to send to gpu02, gpu03".
func codeLine(c *schedule.PlanCode) string {
	var have, send []string
	for _, h := range c.Hosts {
		if h.Present {
			have = append(have, h.Host)
		} else {
			send = append(send, h.Host)
		}
	}
	line := fmt.Sprintf("code %s: %s, %s", ShortHash(c.Hash), wording.Count(c.Files, "file"), Size(c.Bytes))
	if len(have) > 0 {
		line += "; on " + strings.Join(have, ", ")
	}
	if len(send) > 0 {
		line += "; to send to " + strings.Join(send, ", ")
	}
	return line
}

// ShortHash is how a tree's hash is shown to a person: its first 12
// digits, as git shortens commits.
func ShortHash(h string) string { return h[:min(len(h), 12)] }
