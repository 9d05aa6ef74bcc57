package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/launcher/rundir"
)

// The caps on what is read of a run dir: a thousand tasks' summary or
// plan is well under a megabyte.
const (
	jsonMax     = 16 << 20
	maxSeries   = 4096 // distinct (task, GPU) or (task, metric) series kept
	maxEvents   = 10_000
	maxTaskRows = 256 // tasks drawn in the timeline and GPU charts
)

// Run is what a run's log dir holds, read for its report.
type Run struct {
	ID  string
	Dir string
	// Summary is nil for a run without one: still going on, or its
	// tfhive was killed.
	Summary *record.Summary
	Plan    *Plan
	// Repro is the run's record (repro.json), nil without one.
	Repro  *record.Repro
	Events []Event
	// GPU: each task's GPUs' utilisation and memory over time (--sample).
	GPU map[string]*TaskGPU
	// Metrics: each captured name's values over time, by task (--capture).
	Metrics map[string]map[string]*series
	// Notes say what could not be read, or was cut.
	Notes []string
}

// Plan is what the report shows of plan.json.
type Plan struct {
	RunID     string     `json:"run_id"`
	Framework string     `json:"framework"`
	Strategy  string     `json:"strategy"`
	Tasks     []PlanTask `json:"tasks"`
	// Reservations are the user's reservations the run was placed in.
	Reservations []struct {
		Host, ID, User, Note string
		GPUs                 []int
		From, Until          time.Time
	} `json:"reservations"`
}

// PlanTask is one task of the plan.
type PlanTask struct {
	ID   string   `json:"id"`
	Host string   `json:"host"`
	GPUs []int    `json:"gpus"`
	Argv []string `json:"argv"`
}

// Event is one row of events.csv.
type Event struct {
	Time             time.Time
	Task, Host, Kind string
	Detail           string
}

// TaskGPU is one task's samples: per GPU index.
type TaskGPU struct {
	Util, Mem map[int]*series
}

// Load reads the run in dir, whose id is id. A dir with neither a summary
// nor a plan holds no run: fs.ErrNotExist.
func Load(dir, id string) (*Run, error) {
	r := &Run{ID: id, Dir: dir, GPU: map[string]*TaskGPU{}, Metrics: map[string]map[string]*series{}}
	var s record.Summary
	switch err := readJSON(filepath.Join(dir, rundir.Summary), &s); {
	case err == nil:
		r.Summary = &s
	case !errors.Is(err, fs.ErrNotExist):
		r.note("summary.json: %v", why(err))
	}
	var p Plan
	switch err := readJSON(filepath.Join(dir, rundir.Plan), &p); {
	case err == nil:
		r.Plan = &p
	case !errors.Is(err, fs.ErrNotExist):
		r.note("plan.json: %v", why(err))
	}
	switch rp, err := readRepro(filepath.Join(dir, rundir.Repro)); {
	case err == nil:
		r.Repro = rp
	case !errors.Is(err, fs.ErrNotExist):
		r.note("repro.json: %v", why(err))
	}
	switch {
	case r.Summary == nil && r.Plan == nil:
		return nil, fs.ErrNotExist
	case r.Summary != nil && r.Summary.RunID != "":
		// A run's --log-dir may have another name than its id.
		r.ID = r.Summary.RunID
	case r.Plan != nil && r.Plan.RunID != "":
		r.ID = r.Plan.RunID
	}
	r.readEvents()
	r.readGPU()
	r.readMetrics()
	return r, nil
}

func (r *Run) note(format string, args ...any) {
	r.Notes = append(r.Notes, fmt.Sprintf(format, args...))
}

// readJSON decodes a JSON file of at most jsonMax bytes.
func readJSON(path string, v any) error {
	data, err := readJSONFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return errors.New("not a record tfhive writes")
	}
	return nil
}

// readJSONFile reads a file of at most jsonMax bytes, whole.
func readJSONFile(path string) ([]byte, error) {
	f, closeFile, size, cut, err := openBounded(path, jsonMax)
	if err != nil {
		return nil, err
	}
	defer closeFile()
	if cut {
		return nil, fmt.Errorf("larger than %d MiB", jsonMax>>20)
	}
	// Room for the file as it was at the open, and for ReadFrom to see
	// its end without growing: io.ReadAll would start at 512 bytes and
	// copy as it grows (a plan is 14 KiB on 64 GPUs).
	var b bytes.Buffer
	b.Grow(int(size) + bytes.MinRead)
	if _, err := b.ReadFrom(f); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// readRepro reads a repro.json of any format tfhive reads
// (record.ReadRepro): not decoded once as a json.RawMessage first, which
// would scan it twice more.
func readRepro(path string) (*record.Repro, error) {
	data, err := readJSONFile(path)
	if err != nil {
		return nil, err
	}
	rp, err := record.ReadRepro(data)
	var fe *record.ReproFormatError
	if err != nil && !errors.As(err, &fe) {
		err = errors.New("not a record tfhive writes")
	}
	return rp, err
}

// readCSVFile reads one of the run's CSV files, noting what went wrong;
// a file that is not there is no news (no --sample, no --capture).
func (r *Run) readCSVFile(name, header string, width int, row func([]string)) {
	note, err := readCSV(filepath.Join(r.Dir, name), header, width, row)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		r.note("%s: %v", name, why(err))
	case note != "":
		r.Notes = append(r.Notes, note)
	}
}

func (r *Run) readEvents() {
	dropped := 0
	r.readCSVFile(rundir.Events, "time,task,host,event,detail", 5, func(f []string) {
		t, ok := parseTime(f[0])
		if !ok {
			return
		}
		if len(r.Events) >= maxEvents {
			dropped++
			return
		}
		r.Events = append(r.Events, Event{Time: t, Task: f[1], Host: f[2], Kind: f[3], Detail: f[4]})
	})
	if dropped > 0 {
		r.note("events.csv: only its first %d events were read", maxEvents)
	}
}

func (r *Run) readGPU() {
	n, dropped, nonFinite := 0, 0, 0
	r.readCSVFile(rundir.GPUUsage, "time,task,host,gpu,util_pct,mem_mib", 6, func(f []string) {
		t, ok := parseTime(f[0])
		gpu, err1 := strconv.Atoi(f[3])
		util, err2 := strconv.ParseFloat(f[4], 64)
		mem, err3 := strconv.ParseFloat(f[5], 64)
		if !ok || err1 != nil || err2 != nil || err3 != nil {
			return
		}
		if !finite(util) || !finite(mem) {
			nonFinite++
			return
		}
		tg := r.GPU[f[1]]
		if tg == nil || tg.Util[gpu] == nil {
			if n >= maxSeries {
				dropped++
				return
			}
			n++
			if tg == nil {
				tg = &TaskGPU{Util: map[int]*series{}, Mem: map[int]*series{}}
				r.GPU[f[1]] = tg
			}
			tg.Util[gpu], tg.Mem[gpu] = &series{}, &series{}
		}
		tg.Util[gpu].add(point{t, util})
		tg.Mem[gpu].add(point{t, mem})
	})
	if dropped > 0 {
		r.note("gpu-usage.csv: only its first %d GPUs' series were read", maxSeries)
	}
	if nonFinite > 0 {
		r.note("gpu-usage.csv: %d samples not finite (NaN or infinite) left out", nonFinite)
	}
}

func (r *Run) readMetrics() {
	n, dropped, nonFinite := 0, 0, 0
	r.readCSVFile(rundir.Metrics, "time,task,name,value", 4, func(f []string) {
		t, ok := parseTime(f[0])
		v, err := strconv.ParseFloat(f[3], 64)
		if !ok || err != nil {
			return // a value that is no number is not drawn
		}
		if !finite(v) {
			// A loss gone NaN: said, not drawn (a NaN would blank
			// the chart, an infinity flatten it).
			nonFinite++
			return
		}
		byTask := r.Metrics[f[2]]
		if byTask == nil || byTask[f[1]] == nil {
			if n >= maxSeries {
				dropped++
				return
			}
			n++
			if byTask == nil {
				byTask = map[string]*series{}
				r.Metrics[f[2]] = byTask
			}
			byTask[f[1]] = &series{}
		}
		byTask[f[1]].add(point{t, v})
	})
	if dropped > 0 {
		r.note("metrics.csv: only its first %d series were read", maxSeries)
	}
	if nonFinite > 0 {
		r.note("metrics.csv: %d values not finite (NaN or infinite) left out", nonFinite)
	}
}

// taskIDs are the run's tasks in plan order (the summary's when there is
// no plan), then any other the files name.
func (r *Run) taskIDs() []string {
	var ids []string
	add := func(id string) {
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	if r.Plan != nil {
		for _, t := range r.Plan.Tasks {
			add(t.ID)
		}
	}
	if r.Summary != nil {
		for _, t := range r.Summary.Tasks {
			add(t.ID)
		}
	}
	return ids
}

// why is err without the path a *fs.PathError names: the report names
// the file.
func why(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
