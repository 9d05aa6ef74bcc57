package launcher

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/tfhive/tfhive/launcher/csvlog"
	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/launcher/view"
	"github.com/tfhive/tfhive/probe/gpuquery"
)

// DefaultSample is --sample's default: GPU usage every 10 s costs the
// host one nvidia-smi per 10 s, and an idle GPU is seen within a minute.
const DefaultSample = 10 * time.Second

// MinSample is the shortest --sample: nvidia-smi itself takes tens of
// milliseconds.
const MinSample = 100 * time.Millisecond

// idleBelow is the utilisation (%) under which a task's GPUs count as
// idle.
const idleBelow = 5

// gpuRow is one line of nvidia-smi --query-gpu=index,uuid,
// utilization.gpu,memory.used --format=csv,noheader,nounits.
type gpuRow struct {
	index     int
	util, mem float64
}

// parseGPURow reads one CSV line; ok is false for anything else (an
// error text, "[N/A]" for a MIG device's utilisation).
func parseGPURow(line string) (gpuRow, bool) {
	u, ok := gpuquery.Row(line)
	return gpuRow{index: u.Index, util: u.Util, mem: u.MemMiB}, ok
}

// usageOf aggregates a task's samples; nil when there are none.
func usageOf(util, mem []float64) *record.GPUUsage {
	if len(util) == 0 {
		return nil
	}
	u := &record.GPUUsage{Samples: len(util)}
	u.UtilMean, u.UtilP95, u.UtilPeak = stats(util)
	u.MemMean, u.MemP95, u.MemPeak = stats(mem)
	return u
}

// stats: mean, 95th percentile (nearest rank) and maximum, the mean
// rounded to a tenth.
func stats(xs []float64) (mean, p95, peak float64) {
	s := slices.Clone(xs)
	slices.Sort(s)
	var sum float64
	for _, x := range s {
		sum += x
	}
	rank := int(math.Ceil(0.95*float64(len(s)))) - 1
	return math.Round(sum/float64(len(s))*10) / 10, s[max(rank, 0)], s[len(s)-1]
}

// idleTrack applies the idle rule to one task: its GPUs' mean
// utilisation under idleBelow in every sample for longer than the window
// warns once.
type idleTrack struct {
	since, last time.Time // the idle stretch; since zero: not idle
	sum         float64
	n           int
	warned      bool
	// note is the warned stretch, as it ended or goes on (warnedSince).
	note        string
	warnedSince time.Time
}

// add takes one sample's mean at t and returns the warning to print, if
// this sample makes the stretch long enough.
func (it *idleTrack) add(t time.Time, mean float64, window time.Duration) (warn string) {
	if mean >= idleBelow {
		it.since = time.Time{}
		return ""
	}
	if it.since.IsZero() {
		it.since, it.sum, it.n = t, 0, 0
	}
	it.sum += mean
	it.n++
	it.last = t
	d := t.Sub(it.since)
	if d < window || d == 0 {
		return ""
	}
	line := fmt.Sprintf("GPU idle (%.0f%%) for %s", it.sum/float64(it.n), view.ShortDuration(d))
	if !it.warned {
		it.warned, it.note, it.warnedSince = true, line, it.since
		return line
	}
	if it.since.Equal(it.warnedSince) {
		it.note = line
	}
	return ""
}

// usageBook collects the samples of every host's sampler: per task, the
// values, the idle rule, and gpu-usage.csv in the log dir.
type usageBook struct {
	mu sync.Mutex
	// csv appends when a run started again after a lost host adds to the
	// samples of its earlier starts.
	csv    csvlog.File
	window time.Duration
	say    func(task int, line string)
	tasks  []taskUsage
	// byHost: a host's GPU index → the tasks using it.
	byHost map[string]map[int][]int
	ids    []string // task ids, for the CSV
	hosts  []string
	// intruders: each task's, in the order first seen (intruders.go).
	intruders map[int][]record.Intruder
}

type taskUsage struct {
	util, mem []float64
	cur       float64 // this sample's sum over the task's GPUs
	curN      int
	idle      idleTrack
}

func newUsageBook(path string, window time.Duration, say func(int, string)) *usageBook {
	return &usageBook{csv: csvlog.File{Path: path, Header: "time,task,host,gpu,util_pct,mem_mib\n", BufSize: 4096}, window: window, say: say, byHost: map[string]map[int][]int{}}
}

// addTask registers task i, on host, using gpus.
func (b *usageBook) addTask(i int, id, host string, gpus []int) {
	for len(b.tasks) <= i {
		b.tasks = append(b.tasks, taskUsage{})
		b.ids = append(b.ids, "")
		b.hosts = append(b.hosts, "")
	}
	b.ids[i], b.hosts[i] = id, host
	m := b.byHost[host]
	if m == nil {
		m = map[int][]int{}
		b.byHost[host] = m
	}
	for _, g := range gpus {
		m[g] = append(m[g], i)
	}
}

// row records one GPU's values of the sample taken at t on host.
func (b *usageBook) row(host string, t time.Time, r gpuRow) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, i := range b.byHost[host][r.index] {
		tu := &b.tasks[i]
		tu.util = append(tu.util, r.util)
		tu.mem = append(tu.mem, r.mem)
		tu.cur += r.util
		tu.curN++
		b.writeCSV(t, i, host, r)
	}
}

// endSample closes host's sample taken at t: the idle rule sees each
// task's mean over its GPUs.
func (b *usageBook) endSample(host string, t time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	seen := map[int]bool{}
	for _, tasks := range b.byHost[host] {
		for _, i := range tasks {
			tu := &b.tasks[i]
			if seen[i] || tu.curN == 0 {
				continue
			}
			seen[i] = true
			mean := tu.cur / float64(tu.curN)
			tu.cur, tu.curN = 0, 0
			if warn := tu.idle.add(t, mean, b.window); warn != "" && b.say != nil {
				b.say(i, warn)
			}
		}
	}
}

func (b *usageBook) writeCSV(t time.Time, i int, host string, r gpuRow) {
	w := b.csv.Writer()
	if w == nil {
		return
	}
	fmt.Fprintf(w, "%s,%s,%s,%d,%s,%s\n", csvlog.Time(nil, t), csvlog.Field(b.ids[i]), csvlog.Field(host),
		r.index, strconv.FormatFloat(r.util, 'f', -1, 64), strconv.FormatFloat(r.mem, 'f', -1, 64))
}

// close flushes gpu-usage.csv.
func (b *usageBook) close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.csv.Close()
}

func (b *usageBook) usage(i int) *record.GPUUsage {
	b.mu.Lock()
	defer b.mu.Unlock()
	if i >= len(b.tasks) {
		return nil
	}
	tu := &b.tasks[i]
	u := usageOf(tu.util, tu.mem)
	if u != nil {
		u.Idle = tu.idle.note
	}
	return u
}
