package doctor

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/tfhive/tfhive/launcher/view"
)

// Report is the hosts' reports compared: `tfhive doctor --json`.
type Report struct {
	Hosts []Host `json:"hosts"`
	// Majority maps each item compared (python.executable,
	// python.version, modules.NAME, driver, cuda.FRAMEWORK,
	// cudnn.FRAMEWORK, nccl.torch, code) to the value most hosts have,
	// null for "none"; an item where no value has more hosts than every
	// other is left out.
	Majority map[string]*string `json:"majority"`
	// Differs: some host is not with the majority, or could not be
	// checked although it was reached.
	Differs bool `json:"differs"`

	modules []string
}

// doctorItem is one column of the doctor's table: a value per host.
type doctorItem struct {
	key    string // in Report.Majority and Host.Differs
	header string
	label  string // in messages
	none   string // what a nil value means, in messages
	get    func(*Host) *string
	// compared: free disk space is shown, never expected to match.
	compared bool
	// optional columns are left out of the table when no host has a value.
	optional bool
	// short, when set, is how a value is shown in the table and messages
	// (the JSON has it whole).
	short func(string) string
}

func doctorItems(modules []string) []doctorItem {
	items := []doctorItem{
		{key: "python.executable", header: "PYTHON", label: "python", none: "no python3 or python on the PATH", compared: true,
			get: func(d *Host) *string { return d.Python.Executable }},
		{key: "python.version", header: "VERSION", label: "python version", none: "unknown", compared: true,
			get: func(d *Host) *string { return d.Python.Version }},
	}
	for _, m := range modules {
		items = append(items, doctorItem{key: "modules." + m, header: strings.ToUpper(m), label: m, none: "not installed", compared: true,
			get: func(d *Host) *string { return d.Modules[m] }})
	}
	items = append(items, doctorItem{key: "driver", header: "DRIVER", label: "NVIDIA driver", none: "no nvidia-smi", compared: true,
		get: func(d *Host) *string {
			switch {
			case d.DriverError != "":
				return ptr("error")
			case d.NoDevices && d.Driver == nil:
				return ptr("nvidia-smi found no devices")
			}
			return d.Driver
		}})
	for _, fw := range []struct{ name, short string }{{"tensorflow", "TF"}, {"torch", "TORCH"}} {
		for _, lib := range []struct {
			key, name string
			get       func(*Host) map[string]*string
		}{
			{"cuda", "CUDA", func(d *Host) map[string]*string { return d.CUDA }},
			{"cudnn", "cuDNN", func(d *Host) map[string]*string { return d.CuDNN }},
			{"nccl", "NCCL", func(d *Host) map[string]*string { return d.NCCL }},
		} {
			if lib.key == "nccl" && fw.name == "tensorflow" {
				continue // TensorFlow's build info does not say
			}
			items = append(items, doctorItem{key: lib.key + "." + fw.name, header: fw.short + "-" + strings.ToUpper(lib.name),
				label: fw.name + "'s " + lib.name, none: "none", compared: true, optional: true,
				get: func(d *Host) *string { return lib.get(d)[fw.name] }})
		}
	}
	return append(items,
		doctorItem{key: "disk", header: "DISK", label: "free disk", none: "unknown",
			get: func(d *Host) *string {
				if d.DiskFreeBytes == nil {
					return nil
				}
				return ptr(humanBytes(*d.DiskFreeBytes))
			}},
		doctorItem{key: "code", header: "CODE", label: "code hash", none: "none", compared: true, optional: true,
			get: func(d *Host) *string { return d.Code }, short: view.ShortHash},
	)
}

// Compare marks, for every item, the hosts whose value is not the
// one most hosts have. Where no value has more hosts than every other
// (two hosts, two values), every host is marked: none can be taken as
// right. Hosts that could not be checked take no part.
func Compare(hosts []Host, modules []string) *Report {
	r := &Report{Hosts: hosts, Majority: map[string]*string{}, modules: modules}
	for i := range r.Hosts {
		r.Hosts[i].Differs = []string{}
		if r.Hosts[i].Error != "" && !r.Hosts[i].Unreachable {
			r.Differs = true
		}
	}
	for _, it := range doctorItems(modules) {
		if !it.compared {
			continue
		}
		var values []*string
		var checked []int
		for i := range r.Hosts {
			if r.Hosts[i].Error == "" {
				values = append(values, it.get(&r.Hosts[i]))
				checked = append(checked, i)
			}
		}
		maj, ok := majority(values)
		if ok {
			r.Majority[it.key] = maj
		}
		for j, v := range values {
			if !ok || !sameValue(v, maj) {
				h := &r.Hosts[checked[j]]
				h.Differs = append(h.Differs, it.key)
				r.Differs = true
			}
		}
	}
	return r
}

// majority is the value more of values have than any other; ok is false
// when two values tie for the most, and true for no values at all.
func majority(values []*string) (*string, bool) {
	var distinct []*string
	var counts []int
	for _, v := range values {
		i := slices.IndexFunc(distinct, func(d *string) bool { return sameValue(d, v) })
		if i < 0 {
			distinct, counts = append(distinct, v), append(counts, 0)
			i = len(distinct) - 1
		}
		counts[i]++
	}
	if len(distinct) == 0 {
		return nil, true
	}
	best := 0
	for i := range counts {
		if counts[i] > counts[best] {
			best = i
		}
	}
	for i := range counts {
		if i != best && counts[i] == counts[best] {
			return nil, false
		}
	}
	return distinct[best], true
}

func sameValue(a, b *string) bool { return a == nil && b == nil || a != nil && b != nil && *a == *b }

// Problem is one thing wrong with one host: a value not with the
// majority, or a check that could not run.
type Problem struct {
	Host string
	Item string // the item's label ("python version", "torch"), or "check"
	Text string // the whole line, naming host and item
}

// Problems lists what makes the report differ, host by host in order.
func (r *Report) Problems() []Problem {
	items := doctorItems(r.modules)
	var out []Problem
	for i := range r.Hosts {
		h := &r.Hosts[i]
		if h.Error != "" {
			if !h.Unreachable {
				out = append(out, Problem{Host: h.Host, Item: "check", Text: h.Host + ": " + h.Error})
			}
			continue
		}
		for _, key := range h.Differs {
			it := items[slices.IndexFunc(items, func(it doctorItem) bool { return it.key == key })]
			v := it.show(it.get(h))
			text := fmt.Sprintf("%s: %s %s", h.Host, it.label, v)
			if maj, ok := r.Majority[key]; ok {
				have, of := r.count(it, maj)
				text += fmt.Sprintf(", where %d of %d hosts have %s", have, of, it.show(maj))
			} else {
				text += ", and no value is on more hosts than every other"
			}
			out = append(out, Problem{Host: h.Host, Item: it.label, Text: text})
		}
	}
	return out
}

// count is how many checked hosts have v, of how many checked.
func (r *Report) count(it doctorItem, v *string) (have, of int) {
	for i := range r.Hosts {
		if r.Hosts[i].Error == "" {
			of++
			if sameValue(it.get(&r.Hosts[i]), v) {
				have++
			}
		}
	}
	return have, of
}

// show is a value in a message: nil says what it means.
func (it doctorItem) show(v *string) string {
	if v == nil {
		return "(" + it.none + ")"
	}
	return it.cell(*v)
}

func (it doctorItem) cell(v string) string {
	if it.short != nil {
		return it.short(v)
	}
	return v
}

// Write prints the doctor's table: a row per host, a column per
// item, "*" after a value not with the majority, "-" for none and "?" for
// what a host that could not be checked did not say. Columns of the CUDA
// libraries and the code hash are left out when no host has one; NOTE
// appears when some host could not be checked.
func Write(w io.Writer, r *Report) error {
	var items []doctorItem
	for _, it := range doctorItems(r.modules) {
		keep := !it.optional
		for i := 0; !keep && i < len(r.Hosts); i++ {
			keep = it.get(&r.Hosts[i]) != nil
		}
		if keep {
			items = append(items, it)
		}
	}
	header := []string{"HOST"}
	for _, it := range items {
		header = append(header, it.header)
	}
	notes := slices.ContainsFunc(r.Hosts, func(h Host) bool { return h.Error != "" })
	if notes {
		header = append(header, "NOTE")
	}
	rows := make([][]string, len(r.Hosts))
	for i := range r.Hosts {
		h := &r.Hosts[i]
		row := []string{h.Host}
		for _, it := range items {
			cell := "-"
			if v := it.get(h); v != nil {
				cell = it.cell(*v)
			} else if h.Error != "" {
				cell = "?"
			}
			if slices.Contains(h.Differs, it.key) {
				cell += "*"
			}
			row = append(row, cell)
		}
		if notes {
			row = append(row, view.Dash(h.Error))
		}
		rows[i] = row
	}
	return view.WriteTable(w, header, rows)
}

// WriteJSON prints `tfhive doctor --json`.
func WriteJSON(w io.Writer, r *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// humanBytes is a size as df -h shows it: 118G, 9.5G, 512M.
func humanBytes(n int64) string {
	const units = "KMGTPE"
	if n < 1024 {
		return strconv.FormatInt(n, 10) + "B"
	}
	v, u := float64(n)/1024, 0
	for v >= 1024 && u < len(units)-1 {
		v, u = v/1024, u+1
	}
	if v < 10 {
		return strconv.FormatFloat(v, 'f', 1, 64) + units[u:u+1]
	}
	return strconv.FormatFloat(v, 'f', 0, 64) + units[u:u+1]
}
