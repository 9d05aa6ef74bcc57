package commands

import (
	"testing"
	"time"
)

func TestStopSignal(t *testing.T) {
	for in, want := range map[string]string{"": "TERM", "SIGTERM": "TERM", "int": "INT", "SIGUSR1": "USR1"} {
		if got, err := stopSignal(in); err != nil || got != want {
			t.Errorf("stopSignal(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"SIGKILL", "STOP", "9", "SIGFOO"} {
		if _, err := stopSignal(bad); err == nil {
			t.Errorf("stopSignal(%q): no error", bad)
		}
	}
}

// --wait requeues a preempted run unless --requeue=false; --requeue-on
// implies --requeue and refuses --requeue=false; --grace is bounded.
func TestRequeuePolicy(t *testing.T) {
	for _, c := range []struct {
		o       RunOptions
		requeue bool
		err     bool
	}{
		{RunOptions{}, false, false},
		{RunOptions{Wait: time.Minute}, true, false},
		{RunOptions{Wait: time.Minute, RequeueSet: true}, false, false},
		{RunOptions{Requeue: true, RequeueSet: true}, true, false},
		{RunOptions{RequeueOn: "85"}, true, false},
		{RunOptions{RequeueOn: "85", RequeueSet: true}, false, true},
		{RunOptions{RequeueOn: "200"}, false, true},
		{RunOptions{Grace: MaxGrace + time.Second}, false, true},
	} {
		rq, err := c.o.requeuePolicy()
		if (err != nil) != c.err || err == nil && rq.Preempted != c.requeue {
			t.Errorf("%+v: %+v, %v", c.o, rq, err)
		}
	}
}
