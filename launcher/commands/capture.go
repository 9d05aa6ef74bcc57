package commands

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tfhive/tfhive/launcher"
	"github.com/tfhive/tfhive/schedule"
)

// captures reads --capture and --capture-from; ids are the run's task
// ids, or nil when not known yet (attach -H checks --capture-from once it
// found the run). nil, nil without --capture.
func captures(specs []string, from string, ids []string) (*launcher.Captures, error) {
	if len(specs) == 0 {
		if from != "" {
			return nil, &UsageError{Msg: "--capture-from without --capture", Fix: "add --capture NAME=REGEX: --capture-from says whose output it reads"}
		}
		return nil, nil
	}
	c, err := launcher.ParseCaptures(specs)
	if err != nil {
		ue := &UsageError{Msg: err.Error()}
		if ce, ok := err.(*launcher.CaptureError); ok && ce.InRegex {
			ue.Fix = "REGEX is Go's syntax (RE2); its first group is what is recorded"
		}
		return nil, ue
	}
	if from != "" {
		role, index, ok := strings.Cut(from, ":")
		if !ok || role == "" || index == "" {
			return nil, usagef("--capture-from %q: want ROLE:INDEX, as worker:0", from)
		}
		if err := knownTask("--capture-from", from, ids); err != nil {
			return nil, err
		}
	}
	c.From = from
	return c, nil
}

// knownTask refuses a task id the run does not have.
func knownTask(flag, id string, ids []string) error {
	if ids == nil || slices.Contains(ids, id) {
		return nil
	}
	return &UsageError{Msg: fmt.Sprintf("%s %s: the run has no such task", flag, id), Fix: "its tasks are " + describeTasks(ids)}
}

// describeTasks: "ps:0, worker:0 to worker:7".
func describeTasks(ids []string) string {
	var parts []string
	for i := 0; i < len(ids); {
		role, _, _ := strings.Cut(ids[i], ":")
		j := i
		for j+1 < len(ids) && strings.HasPrefix(ids[j+1], role+":") {
			j++
		}
		if j == i {
			parts = append(parts, ids[i])
		} else {
			parts = append(parts, ids[i]+" to "+ids[j])
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
}

// taskIDs are the tasks the job asks for, before any host is asked.
func (j Job) taskIDs() []string {
	if j.checkCounts() != nil {
		return nil // refused before anything asks (checkCounts)
	}
	r := schedule.Request{PS: j.PS, Workers: j.Workers, Chief: j.Chief, Evaluator: j.Evaluator}
	return r.TaskIDs()
}

// checkCounts is schedule's bound on the job's counts, checked before
// anything is made per task (the tasks' ids for --capture-from).
func (j Job) checkCounts() error {
	r := schedule.Request{PS: j.PS, Workers: j.Workers, Chief: j.Chief, Evaluator: j.Evaluator,
		GPUsPerWorker: j.GPUsPerWorker, GPUsPerPS: j.GPUsPerPS, RanksPerHost: j.RanksPerHost}
	return r.ValidateCounts()
}

func planTaskIDs(p *schedule.Plan) []string {
	ids := []string{}
	for _, t := range p.Tasks {
		ids = append(ids, t.ID)
	}
	return ids
}

// CompleteTasks lists the tasks the job asks for, for --capture-from.
func CompleteTasks(j Job) []Candidate {
	var cands []Candidate
	for _, id := range j.taskIDs() {
		cands = append(cands, Candidate{Word: id})
	}
	return cands
}
