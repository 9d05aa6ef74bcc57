package job

import (
	"context"

	"github.com/tfhive/tfhive/launcher/doctor"
	"github.com/tfhive/tfhive/probe/inventory"
	"github.com/tfhive/tfhive/schedule"
)

// checkHosts is --check: the plan's hosts are checked before any claim
// is taken, each once however often the run plans again, where the tasks
// will be (in the --sync tree, when there is one), and the plan refused
// when they differ, naming host and item.
func (r *run) checkHosts(ctx context.Context, inv inventory.Inventory, plan *schedule.Plan) error {
	if r.check == nil {
		return nil
	}
	r.check.Code = codeDirs(plan.Code)
	var todo []inventory.HostInventory
	for _, name := range plan.Hosts() {
		if _, ok := r.checked[name]; ok {
			continue
		}
		for _, h := range inv.Hosts {
			if h.Name == name {
				todo = append(todo, h)
			}
		}
	}
	for _, d := range doctor.Check(ctx, todo, r.spec.Fleet.Executors(), *r.check) {
		r.checked[d.Host] = d
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	var hosts []doctor.Host
	for _, name := range plan.Hosts() {
		hosts = append(hosts, r.checked[name])
	}
	if rep := doctor.Compare(hosts, r.check.Modules); rep.Differs {
		return &CheckError{Problems: rep.Problems()}
	}
	return nil
}

// codeDirs is where a plan's tree is, for the doctor's check.
func codeDirs(code *schedule.PlanCode) *doctor.Code {
	if code == nil {
		return nil
	}
	dc := &doctor.Code{Hash: code.Hash, Dirs: map[string]string{}}
	for _, h := range code.Hosts {
		dc.Dirs[h.Host] = h.Dir
	}
	return dc
}
