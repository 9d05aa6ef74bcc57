package claim

import "testing"

func TestHolderLabel(t *testing.T) {
	for _, tc := range []struct {
		args string
		ok   bool
	}{
		{"flock -n -o -E 75 /proc/self/fd/4 bash --norc -c IFS= read x; eval y tfhive-sup /tmp r1 worker:0 gpu:0:GPU-a,port:2222", true},
		{"/usr/bin/flock -n /proc/self/fd/4 bash -c x tfhive-sup /tmp r.1_x-2 ps:3 port:2222", true},
		{"sleep 60 tfhive-sup /tmp r1 worker:0 port:2222", false},               // not a lock holder's command
		{"flock x tfhive-sup /tmp r1 worker:0 port:abc", false},                 // bad claim
		{"flock x tfhive-sup /tmp -r1 worker:0 port:1", false},                  // bad run id
		{"flock x tfhive-sup /tmp r1 worker0 port:1", false},                    // bad task
		{"flock x tfhive-sup /tmp r1 worker:0 gpu:0:GPU-a;rm", false},           // bad uuid
		{"flock x tfhive-sup /tmp r1 worker:0 gpu:0:GPU-a,port:1 extra", false}, // label not last
		{"flock x tfhive-sup /tmp r1 worker:0 gpu:0:GPU-a low", true},
		{"flock x tfhive-sup /tmp r1 worker:0 gpu:0:GPU-a high", true},
		{"flock x tfhive-sup /tmp r1 worker:0 gpu:0:GPU-a normal", false}, // normal is said by no word
		{"flock x tfhive-sup /tmp r1 worker:0 low", false},                // no claims
		{"flock -s -n x tfhive-sup /tmp r1 worker:1 task:0", true},        // a CPU torch rank's task claim
		{"flock x tfhive-sup /tmp r1 worker:1 task:1", false},             // the task claim is task:0 alone
	} {
		if _, _, _, _, ok := ParseHolder(tc.args); ok != tc.ok {
			t.Errorf("ParseHolder(%q) ok=%v, want %v", tc.args, ok, tc.ok)
		}
	}
	for args, want := range map[string]string{
		"flock x tfhive-sup /tmp r1 worker:0 gpu:0:GPU-a low":  "low",
		"flock x tfhive-sup /tmp r1 worker:0 gpu:0:GPU-a high": "high",
		"flock x tfhive-sup /tmp r1 worker:0 gpu:0:GPU-a":      "normal",
		"flock x tfhive-sup /tmp r1 worker:0 low":              "normal",
	} {
		if got := Priority(args); got != want {
			t.Errorf("Priority(%q) = %q, want %q", args, got, want)
		}
	}
}
