package record

import (
	"encoding/json"
	"fmt"
	"time"
)

// ReproFormatGoNames is the first format of repro.json: its request was
// launcher/commands' options struct as encoding/json wrote it, under the
// Go names its fields had then (reproRequestGoNames keeps them).
const ReproFormatGoNames = 1

// ReproFormatError: a record of a format this tfhive does not read.
type ReproFormatError struct{ Format int }

func (e *ReproFormatError) Error() string {
	return fmt.Sprintf("a record of format %d; this tfhive reads formats %d and %d", e.Format, ReproFormatGoNames, ReproFormat)
}

// ReadRepro reads a repro.json of any format this tfhive reads, as the
// current one: a *ReproFormatError for another format, a JSON error for
// a document that is not a record.
func ReadRepro(data []byte) (*Repro, error) {
	// A record as this tfhive writes it is decoded once (every run's
	// report reads one as the run ends). Whatever else, or a decoding
	// that fails, is read as before: its format first, then as that
	// format says (what it returns then is what the one decoding could
	// not tell apart).
	if r := (&Repro{}); json.Unmarshal(data, r) == nil && r.Format == ReproFormat {
		return r, nil
	}
	var head struct {
		Format int `json:"format"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, err
	}
	switch head.Format {
	case ReproFormat:
		r := &Repro{}
		if err := json.Unmarshal(data, r); err != nil {
			return nil, err
		}
		return r, nil
	case ReproFormatGoNames:
		var old struct {
			Repro
			Request reproRequestGoNames `json:"request"`
		}
		if err := json.Unmarshal(data, &old); err != nil {
			return nil, err
		}
		r := old.Repro
		r.Request = old.Request.request()
		return &r, nil
	}
	return nil, &ReproFormatError{Format: head.Format}
}

// reproRequestGoNames is ReproRequest in format 1: the names are those
// launcher/commands' RunOptions, HostOptions and Job had when it was
// written, frozen here (Availability's fields were Job's own in JSON).
type reproRequestGoNames struct {
	Hosts struct {
		Hosts             []string      `json:"Hosts"`
		File              string        `json:"File"`
		Hostfile          string        `json:"Hostfile"`
		SSHConfig         string        `json:"SSHConfig"`
		AcceptNewHostKeys bool          `json:"AcceptNewHostKeys"`
		Quiet             bool          `json:"Quiet"`
		ConnectTimeout    time.Duration `json:"ConnectTimeout"`
		CommandTimeout    time.Duration `json:"CommandTimeout"`
		Parallel          int           `json:"Parallel"`
		Local             bool          `json:"Local"`
	} `json:"Hosts"`
	Job struct {
		MaxUtilPct    int      `json:"MaxUtilPct"`
		MaxMemMiB     int      `json:"MaxMemMiB"`
		Exclude       []string `json:"Exclude"`
		Framework     string   `json:"Framework"`
		PS            int      `json:"PS"`
		Workers       int      `json:"Workers"`
		Chief         bool     `json:"Chief"`
		Evaluator     bool     `json:"Evaluator"`
		GPUsPerWorker int      `json:"GPUsPerWorker"`
		GPUsPerPS     int      `json:"GPUsPerPS"`
		Strategy      string   `json:"Strategy"`
		RanksPerHost  int      `json:"RanksPerHost"`
		PortRange     string   `json:"PortRange"`
		TFFlags       bool     `json:"TFFlags"`
		NIC           string   `json:"NIC"`
		Priority      string   `json:"Priority"`
		Name          string   `json:"Name"`
		Command       []string `json:"Command"`
		Sync          string   `json:"Sync"`
		SyncExclude   []string `json:"SyncExclude"`
	} `json:"Job"`
	Env            []string      `json:"Env"`
	Workdir        string        `json:"Workdir"`
	Setup          string        `json:"Setup"`
	LogDir         string        `json:"LogDir"`
	Grace          time.Duration `json:"Grace"`
	Timeout        time.Duration `json:"Timeout"`
	Wait           time.Duration `json:"Wait"`
	Reconnect      time.Duration `json:"Reconnect"`
	Unattended     time.Duration `json:"Unattended"`
	Detach         bool          `json:"Detach"`
	Quiet          bool          `json:"Quiet"`
	JSON           bool          `json:"JSON"`
	Check          bool          `json:"Check"`
	Imports        []string      `json:"Imports"`
	Capture        []string      `json:"Capture"`
	CaptureFrom    string        `json:"CaptureFrom"`
	Sample         time.Duration `json:"Sample"`
	Restarts       int           `json:"Restarts"`
	RestartOn      string        `json:"RestartOn"`
	RestartBackoff time.Duration `json:"RestartBackoff"`
}

// request is the request in today's terms: field for field, the same
// names in Go (the conversions say so) under other JSON names.
func (o reproRequestGoNames) request() ReproRequest {
	return ReproRequest{
		Hosts: ReproHosts(o.Hosts), Job: ReproJob(o.Job),
		Env: o.Env, Workdir: o.Workdir, Setup: o.Setup, LogDir: o.LogDir,
		Grace: o.Grace, Timeout: o.Timeout, Wait: o.Wait, Reconnect: o.Reconnect, Unattended: o.Unattended,
		Detach: o.Detach, Quiet: o.Quiet, JSON: o.JSON, Check: o.Check, Imports: o.Imports,
		Capture: o.Capture, CaptureFrom: o.CaptureFrom, Sample: o.Sample,
		Restarts: o.Restarts, RestartOn: o.RestartOn, RestartBackoff: o.RestartBackoff,
	}
}
