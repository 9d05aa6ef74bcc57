package record

// UsageRow is one row of `tfhive usage`: a user's or a host's GPU-hours
// held and idle over the window, and the runs they came from
// (launcher/usage sums the hosts' ledgers).
type UsageRow struct {
	Key       string  `json:"key"`
	GPUHours  float64 `json:"gpu_hours"`
	IdleHours float64 `json:"idle_gpu_hours"`
	Runs      int     `json:"runs"`
}
