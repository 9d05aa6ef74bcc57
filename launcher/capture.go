package launcher

import (
	"bytes"
	"fmt"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"

	"github.com/tfhive/tfhive/launcher/csvlog"
	"github.com/tfhive/tfhive/launcher/record"
	"github.com/tfhive/tfhive/probe/wording"
)

// --capture NAME=REGEX: the last match of REGEX's first group in a task's
// output is recorded under NAME in the summary, as a string. A group
// named step ((?P<step>[0-9]+)) is not the value: it is the training step
// the value belongs to, recorded beside each value in metrics.csv as a
// row named step, for the report's step axis (the first other group is
// the value; a capture whose one group is step records the step).
//
// Decisions:
//   - Lines are what the console shows: stdout and stderr separately, each
//     split at "\n" and at "\r" (so the last frame of a progress bar
//     counts, throttled or not), but the bytes as the log has them (colour
//     codes included). Empty lines are never matched. A line longer than
//     outMaxLine is matched in pieces of that size, as the console cuts it.
//   - "Last" is the order in which tfhive received the lines, across both
//     streams; within a line, the last match whose group took part.
//   - Matching runs in the stream's Write, under the task's lock, and only
//     for the tasks concerned: a run without --capture pays one nil check
//     per Write. Each Write's complete lines are searched backwards, so a
//     task that prints its loss on every line costs one match per Write,
//     not one per line; and a literal every match must contain (loss= in
//     loss=([0-9.]+)) is looked for with bytes.LastIndex before the regex
//     runs at all, so lines without it cost next to nothing.
//   - A value is kept up to captureMaxValue bytes (cut at a UTF-8
//     boundary): the summary of hundreds of tasks stays small.

// captureMaxValue is the longest value kept.
const captureMaxValue = 1 << 10

// Capture is one --capture.
type Capture struct {
	Name string
	Re   *regexp.Regexp
	// lit is a literal every match contains, or nil when none is known.
	lit []byte
	// val is the value's group; step the step group's, or 0 for none.
	val, step int
}

// stepName is the group, and the metric, that a step is recorded under.
const stepName = "step"

// Captures are a run's --capture flags and --capture-from.
type Captures struct {
	List []Capture
	// From is the one task whose output is matched; "" for every task.
	From string
}

// Names are the captures' names, in the order given.
func (c *Captures) Names() []string {
	var names []string
	for _, cp := range c.List {
		names = append(names, cp.Name)
	}
	return names
}

// Regexes are the captures by name, as given: the summary keeps them.
func (c *Captures) Regexes() map[string]string {
	m := map[string]string{}
	for _, cp := range c.List {
		m[cp.Name] = cp.Re.String()
	}
	return m
}

// concerns says whether task id's output is matched.
func (c *Captures) concerns(id string) bool {
	return c != nil && len(c.List) > 0 && (c.From == "" || c.From == id)
}

// CaptureError is a --capture that cannot work; InRegex says the REGEX
// is what is wrong.
type CaptureError struct {
	Msg     string
	InRegex bool
}

func (e *CaptureError) Error() string { return e.Msg }

var captureNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)

// ValidCaptureName: name could be a --capture's.
func ValidCaptureName(name string) bool { return captureNameRE.MatchString(name) }

// ParseCaptures reads --capture NAME=REGEX values. The errors are one line
// each, for a usage error.
func ParseCaptures(specs []string) (*Captures, error) {
	c := &Captures{}
	seen := map[string]bool{}
	for _, s := range specs {
		name, expr, ok := strings.Cut(s, "=")
		if !ok {
			return nil, &CaptureError{Msg: fmt.Sprintf("--capture %q: want NAME=REGEX, as loss=loss ([0-9.e+-]+)", s)}
		}
		if !captureNameRE.MatchString(name) {
			return nil, &CaptureError{Msg: fmt.Sprintf("--capture %q: %q is not a plain name (letters, digits and _, not starting with a digit, at most 64)", s, name)}
		}
		if seen[name] {
			return nil, &CaptureError{Msg: fmt.Sprintf("--capture %s given twice", name)}
		}
		seen[name] = true
		cp, err := compileCapture(name, expr)
		if err != nil {
			return nil, &CaptureError{Msg: fmt.Sprintf("--capture %s: %v", name, err), InRegex: true}
		}
		c.List = append(c.List, cp)
	}
	return c, nil
}

func compileCapture(name, expr string) (Capture, error) {
	re, err := regexp.Compile(expr)
	if err != nil {
		// regexp's own words: "error parsing regexp: missing closing ): `(a`".
		return Capture{}, err
	}
	if re.NumSubexp() < 1 {
		return Capture{}, fmt.Errorf("%q has no group: put what to record in parentheses, as loss=([0-9.]+)", expr)
	}
	cp := Capture{Name: name, Re: re, val: 1}
	if k := re.SubexpIndex(stepName); k > 0 && re.NumSubexp() > 1 {
		cp.step = k
		if k == 1 {
			cp.val = 2
		}
	}
	// Parsed as regexp.Compile parses it, which just succeeded.
	if tree, err := syntax.Parse(expr, syntax.Perl); err == nil {
		if lit := requiredLiteral(tree.Simplify()); lit != "" {
			cp.lit = []byte(lit)
		}
	}
	return cp, nil
}

// requiredLiteral is a literal that every match of re contains, the
// longest found at the top level, or "".
func requiredLiteral(re *syntax.Regexp) string {
	switch re.Op {
	case syntax.OpLiteral:
		lit := string(re.Rune)
		// Case folding, a line end (never inside a line) or U+FFFD (which
		// the regexp matches for any invalid byte) rule bytes.Index out.
		if re.Flags&syntax.FoldCase != 0 || strings.ContainsAny(lit, "\n\r\uFFFD") {
			return ""
		}
		return lit
	case syntax.OpCapture, syntax.OpPlus:
		return requiredLiteral(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return requiredLiteral(re.Sub[0])
		}
	case syntax.OpConcat:
		best := ""
		for _, sub := range re.Sub {
			if l := requiredLiteral(sub); len(l) > len(best) {
				best = l
			}
		}
		return best
	}
	return ""
}

// taskCapture is the matching state of one task: its values so far and
// each stream's partial line.
type taskCapture struct {
	caps []Capture
	vals []string
	got  []bool
	part [2][]byte // stdout's, stderr's
	// steps are each capture's last step (its step group's), for End.
	steps []string
	// series records each value with its time (csvlog.Metrics); nil: not.
	series *csvlog.TaskMetrics
}

func newTaskCapture(c *Captures, series *csvlog.TaskMetrics) *taskCapture {
	return &taskCapture{caps: c.List, vals: make([]string, len(c.List)), got: make([]bool, len(c.List)), series: series,
		steps: make([]string, len(c.List))}
}

// write takes the next bytes of a stream (0 stdout, 1 stderr).
func (c *taskCapture) write(stream int, p []byte) {
	part := &c.part[stream]
	if len(*part) > 0 {
		k := firstLineEnd(p)
		if k < 0 {
			c.keep(part, p)
			return
		}
		c.keep(part, p[:k])
		c.match(*part)
		*part = (*part)[:0]
		p = p[k+1:]
	}
	if k := lastLineEnd(p); k >= 0 {
		c.match(p[:k])
		p = p[k+1:]
	}
	c.keep(part, p)
}

// flush matches the partial lines: the task's output ended.
func (c *taskCapture) flush() {
	for i := range c.part {
		c.match(c.part[i])
		c.part[i] = nil
	}
	if c.series != nil {
		for i, cp := range c.caps {
			if cp.step > 0 {
				c.series.End(len(c.caps)+i, stepName, c.steps[i])
			}
			c.series.End(i, cp.Name, c.vals[i])
		}
	}
}

// keep adds p to a partial line, matching it in pieces once it is longer
// than outMaxLine.
func (c *taskCapture) keep(part *[]byte, p []byte) {
	for len(*part)+len(p) > outMaxLine {
		n := outMaxLine - len(*part)
		*part = append(*part, p[:n]...)
		c.match(*part)
		*part = (*part)[:0]
		p = p[n:]
	}
	*part = append(*part, p...)
}

// match looks for each capture's last match in lines, complete lines
// separated by "\n" or "\r", searching from the end.
func (c *taskCapture) match(lines []byte) {
	for i := range c.caps {
		cp := &c.caps[i]
		r := lines
		// bytes.Index is vectorised, LastIndex is not: most output holds
		// no match at all, and is passed over at Index's speed.
		if cp.lit != nil && bytes.Index(r, cp.lit) < 0 {
			continue
		}
		for len(r) > 0 {
			start, end := 0, len(r)
			if cp.lit != nil {
				pos := bytes.LastIndex(r, cp.lit)
				if pos < 0 {
					break
				}
				start, end = lineStart(r, pos), lineEnd(r, pos+len(cp.lit))
			} else {
				start = lineStart(r, end)
			}
			if v, step, ok := lastGroup(cp, r[start:end]); ok {
				if step != nil && c.series != nil {
					// Before the value: the report pairs a value with
					// the step nearest in time.
					step = wording.Cut(step, captureMaxValue)
					c.series.Found(len(c.caps)+i, stepName, step)
					c.steps[i] = string(step)
				}
				c.set(i, v)
				break
			}
			if start == 0 {
				break
			}
			r = r[:start-1]
		}
	}
}

// lastGroup is the value group of cp's last match in line whose value
// group took part, with that match's step group (nil when it has none,
// or it took no part).
func lastGroup(cp *Capture, line []byte) (val, step []byte, ok bool) {
	if len(line) == 0 || !cp.Re.Match(line) {
		return nil, nil, false
	}
	ms := cp.Re.FindAllSubmatchIndex(line, -1)
	for j := len(ms) - 1; j >= 0; j-- {
		m := ms[j]
		if m[2*cp.val] < 0 {
			continue
		}
		if k := cp.step; k > 0 && m[2*k] >= 0 {
			step = line[m[2*k]:m[2*k+1]]
		}
		return line[m[2*cp.val]:m[2*cp.val+1]], step, true
	}
	return nil, nil, false
}

func (c *taskCapture) set(i int, v []byte) {
	v = wording.Cut(v, captureMaxValue)
	if c.series != nil {
		c.series.Found(i, c.caps[i].Name, v)
	}
	if c.got[i] && c.vals[i] == string(v) {
		return
	}
	c.vals[i], c.got[i] = string(v), true
}

// metrics are the values captured, by name; nil when none was.
func (c *taskCapture) metrics() map[string]string {
	var m map[string]string
	for i, cp := range c.caps {
		if c.got[i] {
			if m == nil {
				m = map[string]string{}
			}
			m[cp.Name] = c.vals[i]
		}
	}
	return m
}

func isLineEnd(b byte) bool { return b == '\n' || b == '\r' }

// firstLineEnd is the index of the first "\n" or "\r" in p, or -1.
func firstLineEnd(p []byte) int {
	i := bytes.IndexByte(p, '\n')
	if i < 0 {
		i = len(p)
	}
	if j := bytes.IndexByte(p[:i], '\r'); j >= 0 {
		return j
	}
	if i == len(p) {
		return -1
	}
	return i
}

// lastLineEnd is the index of the last "\n" or "\r" in p, or -1: a scan
// of the partial line at the end only.
func lastLineEnd(p []byte) int {
	for i := len(p) - 1; i >= 0; i-- {
		if isLineEnd(p[i]) {
			return i
		}
	}
	return -1
}

// lineStart is where the line holding p[i-1] (or ending at i) begins.
func lineStart(p []byte, i int) int {
	for i > 0 && !isLineEnd(p[i-1]) {
		i--
	}
	return i
}

// lineEnd is where the line holding p[i] ends.
func lineEnd(p []byte, i int) int {
	for i < len(p) && !isLineEnd(p[i]) {
		i++
	}
	return i
}

// RunMetrics chooses the run's value of each capture: the first of
// these tasks that captured one, in this order: the task that decided the
// run, the chief, worker 0, then the others in plan order. tasks are the
// summary's (the deciding one first, when there is one).
func RunMetrics(tasks []record.TaskResult, decided bool) map[string]string {
	var order []int
	add := func(i int) {
		if i >= 0 && !slices.Contains(order, i) {
			order = append(order, i)
		}
	}
	if decided && len(tasks) > 0 {
		add(0)
	}
	find := func(id string) int {
		for i, t := range tasks {
			if t.ID == id {
				return i
			}
		}
		return -1
	}
	add(find("chief:0"))
	add(find("worker:0"))
	for i := range tasks {
		add(i)
	}
	var m map[string]string
	for _, i := range order {
		for k, v := range tasks[i].Metrics {
			if _, ok := m[k]; !ok {
				if m == nil {
					m = map[string]string{}
				}
				m[k] = v
			}
		}
	}
	return m
}
