package commands

import "github.com/tfhive/tfhive/launcher/record"

// A run's options as its record keeps them (record.ReproRequest) and
// back: field for field, so that a rerun runs with what the run ran with,
// and an option renamed here changes no record. An option added to
// RunOptions is added to both (TestRunOptionsThroughTheRecord fails
// until it is).

// reproRequest is o as its record keeps it.
func reproRequest(o RunOptions) record.ReproRequest {
	h, j := o.Hosts, o.Job
	return record.ReproRequest{
		Hosts: record.ReproHosts{
			Hosts: h.Hosts, File: h.File, Hostfile: h.Hostfile, SSHConfig: h.SSHConfig,
			AcceptNewHostKeys: h.AcceptNewHostKeys, Quiet: h.Quiet,
			ConnectTimeout: h.ConnectTimeout, CommandTimeout: h.CommandTimeout, Parallel: h.Parallel,
			Local: h.Local,
		},
		Job: record.ReproJob{
			MaxUtilPct: j.MaxUtilPct, MaxMemMiB: j.MaxMemMiB, Exclude: j.Exclude,
			Framework: j.Framework, PS: j.PS, Workers: j.Workers, Chief: j.Chief, Evaluator: j.Evaluator,
			GPUsPerWorker: j.GPUsPerWorker, GPUsPerPS: j.GPUsPerPS, Strategy: j.Strategy,
			RanksPerHost: j.RanksPerHost, PortRange: j.PortRange, TFFlags: j.TFFlags, NIC: j.NIC,
			Priority: j.Priority, Name: j.Name, Command: j.Command, Sync: j.Sync, SyncExclude: j.SyncExclude,
		},
		Env: o.Env, Workdir: o.Workdir, Setup: o.Setup, LogDir: o.LogDir,
		Grace: o.Grace, Timeout: o.Timeout, Wait: o.Wait, Reconnect: o.Reconnect, Unattended: o.Unattended,
		Detach: o.Detach, Quiet: o.Quiet, JSON: o.JSON, Check: o.Check, Imports: o.Imports,
		Capture: o.Capture, CaptureFrom: o.CaptureFrom, Sample: o.Sample, IdleStop: o.IdleStop,
		Restarts: o.Restarts, RestartOn: o.RestartOn, RestartBackoff: o.RestartBackoff,
		StopSignal: o.StopSignal, Requeue: o.Requeue, RequeueSet: o.RequeueSet, RequeueOn: o.RequeueOn,
		HangAfter: o.HangAfter, OnHang: o.OnHang, HangNative: o.HangNative,
	}
}

// runOptionsOf is the run a record's request asks for.
func runOptionsOf(r record.ReproRequest) RunOptions {
	h, j := r.Hosts, r.Job
	return RunOptions{
		Hosts: HostOptions{
			Hosts: h.Hosts, File: h.File, Hostfile: h.Hostfile, SSHConfig: h.SSHConfig,
			AcceptNewHostKeys: h.AcceptNewHostKeys, Quiet: h.Quiet,
			ConnectTimeout: h.ConnectTimeout, CommandTimeout: h.CommandTimeout, Parallel: h.Parallel,
			Local: h.Local,
		},
		Job: Job{
			Availability: Availability{MaxUtilPct: j.MaxUtilPct, MaxMemMiB: j.MaxMemMiB, Exclude: j.Exclude},
			Framework:    j.Framework, PS: j.PS, Workers: j.Workers, Chief: j.Chief, Evaluator: j.Evaluator,
			GPUsPerWorker: j.GPUsPerWorker, GPUsPerPS: j.GPUsPerPS, Strategy: j.Strategy,
			RanksPerHost: j.RanksPerHost, PortRange: j.PortRange, TFFlags: j.TFFlags, NIC: j.NIC,
			Priority: j.Priority, Name: j.Name, Command: j.Command, Sync: j.Sync, SyncExclude: j.SyncExclude,
		},
		Env: r.Env, Workdir: r.Workdir, Setup: r.Setup, LogDir: r.LogDir,
		Grace: r.Grace, Timeout: r.Timeout, Wait: r.Wait, Reconnect: r.Reconnect, Unattended: r.Unattended,
		Detach: r.Detach, Quiet: r.Quiet, JSON: r.JSON, Check: r.Check, Imports: r.Imports,
		Capture: r.Capture, CaptureFrom: r.CaptureFrom, Sample: r.Sample, IdleStop: r.IdleStop,
		Restarts: r.Restarts, RestartOn: r.RestartOn, RestartBackoff: r.RestartBackoff,
		StopSignal: r.StopSignal, Requeue: r.Requeue, RequeueSet: r.RequeueSet, RequeueOn: r.RequeueOn,
		HangAfter: r.HangAfter, OnHang: r.OnHang, HangNative: r.HangNative,
	}
}
