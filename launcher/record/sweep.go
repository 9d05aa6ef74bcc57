package record

// Sweep is a sweep's record: sweep.json in <log root>/<Name>/, written by
// `tfhive sweep` before its first trial starts and read by `runs --sweep`,
// `report`, `wait`, `attach` and a resumed sweep. Each trial is a run of its
// own, in <log root>/<trial ID>/ like any other run (summary.json, run.json),
// so everything that reads a run reads a trial.
type Sweep struct {
	Name string `json:"name"`
	// Command is the task's command line as given, with its {NAME}
	// placeholders; a trial's own command is in its run's record.
	Command []string     `json:"command"`
	Params  []SweepParam `json:"params"`
	// Random and Seed: --random N --seed S picked the trials; 0 without.
	Random int   `json:"random,omitempty"`
	Seed   int64 `json:"seed,omitempty"`
	// Trials in order: trial i is Name-NNN with NNN = i+1, zero-padded to 3.
	Trials []SweepTrial `json:"trials"`
}

// SweepParam is one --param NAME=V1,V2,… in the order given.
type SweepParam struct {
	Name   string   `json:"name"`
	Values []string `json:"values"`
}

// SweepTrial is one combination of the parameters.
type SweepTrial struct {
	// ID is the trial's run id, also its run directory's name.
	ID     string            `json:"id"`
	Params map[string]string `json:"params"`
}
