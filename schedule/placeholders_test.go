package schedule

import (
	"strings"
	"testing"
)

func TestExpand(t *testing.T) {
	vals := map[string]string{"job_name": "worker", "task_index": "3", "port": "2222", "gpus": ""}
	tests := []struct{ in, want, err string }{
		{"--job_name={job_name}", "--job_name=worker", ""},
		{"{job_name}{task_index}", "worker3", ""},
		{"--gpus={gpus}", "--gpus=", ""},
		{"${HOME}/x", "${HOME}/x", ""},
		{"${job_name}", "${job_name}", ""},
		{"{{job_name}}", "{job_name}", ""},
		{"{{{job_name}}}", "{worker}", ""},
		{`{"a":{"b":1}}`, `{"a":{"b":1}}`, ""},
		{`{"port":{port}}`, `{"port":2222}`, ""},
		{"awk '{print $1}'", "awk '{print $1}'", ""},
		{"a{b,c}", "a{b,c}", ""},
		{"{}", "{}", ""},
		{"{job_name", "", `placeholder {job_name is not closed in "{job_name"`},
		{"--task_index={task_index", "", `placeholder {task_index is not closed in "--task_index={task_index"`},
		{"{rank)", "", `placeholder {rank is not closed in "{rank)"`},
		{"{{job_name", "{job_name", ""},
		{"{rank2}", "{rank2}", ""},
		{"{ranks", "{ranks", ""},
		{"{foo", "{foo", ""},
		{"{a,b", "{a,b", ""},
		{"}", "}", ""},
		{"}}", "}}", ""},
		{"{", "{", ""},
		{"{Job_Name}", "{Job_Name}", ""},
		{"{jobname}", "", "unknown placeholder {jobname} in command"},
		{"x{nope}y", "", "unknown placeholder {nope} in command"},
	}
	for _, tt := range tests {
		got, err := expand(tt.in, func(n string) string { return vals[n] })
		if tt.err != "" {
			if err == nil || err.Error() != tt.err {
				t.Errorf("expand(%q) err = %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("expand(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestUnknownPlaceholderHint(t *testing.T) {
	_, err := expand("{task_idx}", nil)
	h := err.(*UsageError).Hint()
	if !strings.HasPrefix(h, "did you mean {task_index}? known placeholders: {job_name} {task_index} {ps_hosts}") ||
		!strings.HasSuffix(h, "write {{task_idx}} for a literal {task_idx}") {
		t.Errorf("hint %q", h)
	}
	// far from every name: no guess
	_, err = expand("{zzzzzz}", nil)
	if h := err.(*UsageError).Hint(); strings.Contains(h, "did you mean") {
		t.Errorf("hint %q", h)
	}
	if len(PlaceholderNames()) != 16 {
		t.Errorf("PlaceholderNames() = %v", PlaceholderNames())
	}
}
