package inventory

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// PolicyIdle is a policy file's idle rule (`idle: {below: 5%, warn: 30m,
// stop: 2h}`): a task's GPUs all at or under Below percent utilisation
// for Warn are warned about, for Stop the run is stopped (idle-stopped).
// A zero Warn or Stop does not warn, or does not stop. It applies to
// every user's runs on the host; a run's --idle-stop may be stricter.
type PolicyIdle struct {
	Below Percent  `json:"below_pct" yaml:"below"`
	Warn  Duration `json:"warn,omitzero" yaml:"warn"`
	Stop  Duration `json:"stop,omitzero" yaml:"stop"`
}

// Percent is a utilisation in percent, written "5%" or 5.
type Percent int

// Duration is a Go duration written as text ("30m", "2h").
type Duration time.Duration

// D is the duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// MarshalText writes the duration as Go does ("30m0s").
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalYAML reads "5%", "5" or "0.5%" (rounded down: a threshold
// never grows by reading); an error names the line, as the policy's
// others do.
func (p *Percent) UnmarshalYAML(n *yaml.Node) error {
	s := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(n.Value), "%"))
	f, err := strconv.ParseFloat(s, 64)
	if n.Kind != yaml.ScalarNode || err != nil || math.IsNaN(f) || f < 0 || f > 100 {
		return fmt.Errorf("line %d: idle: below %q: want a percentage from 0%% to 100%%", n.Line, n.Value)
	}
	*p = Percent(f)
	return nil
}

// MinIdle is the shortest idle warning or stop a rule may give, in the
// policy or --idle-stop: the hosts' idle watches count in tenths of a
// second and sample at most once every 100 ms, and a rule under a second
// would read 0, a rule that never acts, while tfhive said it would.
const MinIdle = time.Second

// UnmarshalYAML reads a Go duration ("30m", "2h") of MinIdle at least.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := time.ParseDuration(strings.TrimSpace(n.Value))
	if n.Kind != yaml.ScalarNode || err != nil || v <= 0 {
		return fmt.Errorf("line %d: %q: want a duration such as 30m or 2h", n.Line, n.Value)
	}
	if v < MinIdle {
		return fmt.Errorf("line %d: %q: want %s or more (an idle rule under a second never acts)", n.Line, n.Value, MinIdle)
	}
	*d = Duration(v)
	return nil
}
