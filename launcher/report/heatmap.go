package report

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"time"
)

// The whole run's GPUs at once: a row per GPU (host and index, with the
// task on it), the run's time across in heatCols columns, each cell
// coloured by the GPU's mean utilisation in it (hovering says it, and the
// memory's peak); no cell where no sample fell. Each task's own line
// charts stay, folded below (render.go).

const (
	heatCols = 120
	heatRowH = 14
)

// heatScale: light to dark blue (ColorBrewer's Blues), for 0…100 %.
var heatScale = []string{"#f7fbff", "#deebf7", "#c6dbef", "#9ecae1", "#6baed6", "#4292c6", "#2171b5", "#08519c", "#08306b"}

func heatColor(util float64) string {
	i := int(math.Round(math.Max(0, math.Min(100, util)) / 100 * float64(len(heatScale)-1)))
	return heatScale[i]
}

// gpuRow is one GPU's samples, of every task on it.
type gpuRow struct {
	host  string
	gpu   int
	tasks []string
	util  []point
	mem   []point
}

// gpuHeatmap draws the run's GPUs from t0 for span; more is how many
// GPUs past maxTaskRows are left out.
func gpuHeatmap(r *Run, t0 time.Time, span time.Duration) (chart, int) {
	byKey := map[string]*gpuRow{}
	var rows []*gpuRow
	for _, id := range r.taskIDs() {
		g := r.GPU[id]
		if g == nil {
			continue
		}
		host := hostOf(r, id)
		for _, idx := range slices.Sorted(maps.Keys(g.Util)) {
			k := host + "\x00" + strconv.Itoa(idx)
			row := byKey[k]
			if row == nil {
				row = &gpuRow{host: host, gpu: idx}
				byKey[k] = row
				rows = append(rows, row)
			}
			row.tasks = append(row.tasks, id)
			row.util = append(row.util, g.Util[idx].points()...)
			row.mem = append(row.mem, g.Mem[idx].points()...)
		}
	}
	slices.SortStableFunc(rows, func(a, b *gpuRow) int { return cmp.Or(cmp.Compare(a.host, b.host), cmp.Compare(a.gpu, b.gpu)) })
	more := 0
	if len(rows) > maxTaskRows {
		more, rows = len(rows)-maxTaskRows, rows[:maxTaskRows]
	}
	c := frame("GPU utilisation of every GPU", 960, float64(40+heatRowH*max(1, len(rows))), 200)
	if len(rows) == 0 {
		c.Empty = "no samples"
		return c, 0
	}
	for _, u := range []float64{0, 25, 50, 75, 100} {
		c.Legend = append(c.Legend, legendItem{Color: heatColor(u), Label: numLabel(u) + "%"})
	}
	ta := timeAxis{t0: t0, span: span, l: c.L, r: c.R}
	c.XTicks = ta.ticks()
	cw := (c.R - c.L) / heatCols
	col := func(t time.Time) int {
		if span <= 0 {
			return 0
		}
		return max(0, min(heatCols-1, int(float64(t.Sub(t0))/float64(span)*heatCols)))
	}
	for i, row := range rows {
		y := c.T + float64(i*heatRowH)
		label := row.host + " GPU " + strconv.Itoa(row.gpu)
		c.Rows = append(c.Rows, rowLabel{Y: y + heatRowH/2 + 4, Label: label + " (" + joinIDs(row.tasks) + ")"})
		var sum, peak [heatCols]float64
		var n [heatCols]int
		// A sample stands for the time until the next (--sample 30s
		// over a minute's run: half of it each), unless that is more
		// than twice the row's usual interval (the GPU went unsampled:
		// a link lost).
		byTime := func(a, b point) int { return a.t.Compare(b.t) }
		slices.SortStableFunc(row.util, byTime)
		slices.SortStableFunc(row.mem, byTime)
		hold := 2 * medianGap(row.util)
		fill := func(pts []point, f func(k int, v float64)) {
			for j, p := range pts {
				end := col(p.t)
				if j+1 < len(pts) && pts[j+1].t.Sub(p.t) <= hold {
					end = max(end, col(pts[j+1].t)-1)
				}
				for k := col(p.t); k <= end; k++ {
					f(k, p.v)
				}
			}
		}
		fill(row.util, func(k int, v float64) { sum[k] += v; n[k]++ })
		fill(row.mem, func(k int, v float64) { peak[k] = math.Max(peak[k], v) })
		// Cells alike side by side (the same utilisation and memory)
		// are one rect: a steady week's row is a few of them.
		for k := 0; k < heatCols; {
			if n[k] == 0 {
				k++
				continue
			}
			mean := sum[k] / float64(n[k])
			e := k + 1
			for e < heatCols && n[e] > 0 && sum[e]/float64(n[e]) == mean && peak[e] == peak[k] {
				e++
			}
			from := time.Duration(float64(span) * float64(k) / heatCols).Round(time.Second)
			to := time.Duration(float64(span) * float64(e) / heatCols).Round(time.Second)
			c.Cells = append(c.Cells, bar{X: c.L + float64(k)*cw, Y: y + 1, W: float64(e-k)*cw + 0.4, H: heatRowH - 2, Color: heatColor(mean),
				Title: fmt.Sprintf("%s (%s), %s–%s: %s%% used, %s at most", label, joinIDs(row.tasks), durLabel(from), durLabel(to),
					numLabel(math.Round(mean)), mibLabel(peak[k]))})
			k = e
		}
	}
	return c, more
}

// medianGap is the median time between pts, in time order.
func medianGap(pts []point) time.Duration {
	var gaps []time.Duration
	for i := 1; i < len(pts); i++ {
		gaps = append(gaps, pts[i].t.Sub(pts[i-1].t))
	}
	if len(gaps) == 0 {
		return 0
	}
	slices.Sort(gaps)
	return gaps[len(gaps)/2]
}

func joinIDs(ids []string) string {
	s := ""
	for i, id := range ids {
		if i > 0 {
			s += ", "
		}
		s += id
	}
	return s
}
