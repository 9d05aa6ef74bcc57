package sweep

import (
	"reflect"
	"testing"
)

func TestQueueBoundsAndOrder(t *testing.T) {
	q := NewQueue([]int{0, 1, 2, 3, 4, 5}, 4, 0)
	var started []int
	for {
		i, ok := q.Next()
		if !ok {
			break
		}
		started = append(started, i)
	}
	if !reflect.DeepEqual(started, []int{0, 1, 2, 3}) {
		t.Fatalf("started %v, want the first 4", started)
	}
	q.Done(false) // a failure leaves the others going
	if i, ok := q.Next(); !ok || i != 4 {
		t.Fatalf("after an end: %d %v, want 4", i, ok)
	}
	if _, ok := q.Next(); ok {
		t.Fatal("a fifth trial at once")
	}
	for range 4 {
		q.Done(true)
	}
	if i, ok := q.Next(); !ok || i != 5 {
		t.Fatalf("last: %d %v", i, ok)
	}
	if q.Finished() {
		t.Fatal("finished with one running")
	}
	q.Done(true)
	if !q.Finished() || q.Stopped() {
		t.Fatal("not finished")
	}
}

func TestQueueMaxFailuresAndStop(t *testing.T) {
	q := NewQueue([]int{0, 1, 2, 3}, 1, 2)
	for range 2 {
		if _, ok := q.Next(); !ok {
			t.Fatal("no trial")
		}
		q.Done(false)
	}
	if _, ok := q.Next(); ok || !q.Stopped() || !q.Finished() {
		t.Fatal("went on after 2 failures with --max-failures 2")
	}
	if u := q.Unstarted(); !reflect.DeepEqual(u, []int{2, 3}) {
		t.Errorf("unstarted %v", u)
	}
	s := NewQueue([]int{0, 1}, 2, 0)
	s.Next()
	s.Stop()
	if _, ok := s.Next(); ok || s.Finished() {
		t.Fatal("stopped: started another, or finished with one running")
	}
	s.Done(false)
	if !s.Finished() {
		t.Fatal("not finished")
	}
}

func TestParallelAndTodo(t *testing.T) {
	for _, c := range []struct{ max, fleet, trial, n, want int }{
		{0, 4, 1, 6, 4}, {0, 4, 2, 6, 2}, {0, 1, 2, 6, 1}, {3, 64, 1, 6, 3}, {10, 4, 1, 6, 6}, {0, 0, 0, 5, 5},
	} {
		if got := Parallel(c.max, c.fleet, c.trial, c.n); got != c.want {
			t.Errorf("Parallel(%d,%d,%d,%d) = %d, want %d", c.max, c.fleet, c.trial, c.n, got, c.want)
		}
	}
	got := Todo([]string{"s-001", "s-002", "s-003"}, map[string]string{"s-001": "succeeded", "s-002": "failed"})
	if !reflect.DeepEqual(got, []int{1, 2}) {
		t.Errorf("Todo = %v", got)
	}
}

// Trials adopted by a resumed sweep count against --max-parallel: the
// queue starts only what fits beside them, and is finished once they
// end too.
func TestQueueAdopted(t *testing.T) {
	q := NewQueue([]int{2, 3}, 2, 0)
	q.Adopt()
	if i, ok := q.Next(); !ok || i != 2 {
		t.Fatalf("first: %d %v, want 2", i, ok)
	}
	if _, ok := q.Next(); ok {
		t.Fatal("a third trial beside the adopted one and trial 2")
	}
	q.Done(true) // the adopted one
	if i, ok := q.Next(); !ok || i != 3 {
		t.Fatalf("after the adopted one's end: %d %v, want 3", i, ok)
	}
	q.Done(true)
	q.Done(true)
	if !q.Finished() {
		t.Fatal("not finished")
	}
	only := NewQueue(nil, 1, 0)
	only.Adopt()
	if only.Finished() {
		t.Fatal("finished while an adopted trial runs")
	}
	only.Done(false)
	if !only.Finished() {
		t.Fatal("not finished after the adopted trial's end")
	}
}
