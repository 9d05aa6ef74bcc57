package record

import "testing"

// A failed run exits with its deciding task's code unless tfhive keeps
// that code for an outcome of its own: then 1.
func TestTaskExitCode(t *testing.T) {
	for task, want := range map[int]int{
		1: 1, 2: 1, 3: 1, 4: 1, 5: 1, 6: 1, 7: 1, 8: 8, 42: 42, 123: 123, 124: 1, 125: 125,
		126: 126, 127: 127, 129: 129, 130: 1, 137: 137, 139: 139, 141: 1, 143: 1, 255: 255,
	} {
		if got := TaskExitCode(task); got != want {
			t.Errorf("TaskExitCode(%d) = %d, want %d", task, got, want)
		}
	}
}
