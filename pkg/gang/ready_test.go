package gang

import (
	"testing"
)

// TestReadyCounts: succeeded members make up minMember only for the last
// members of a gang (fewer than minMember left unfinished); failed ones
// never count.
func TestReadyCounts(t *testing.T) {
	tests := []struct {
		name                              string
		active, placed, succeeded, failed int
		want                              bool
	}{
		{name: "minimum placed", active: 4, placed: 3, want: true},
		{name: "tail of an elastic gang whose minimum succeeded", active: 1, placed: 1, succeeded: 3, want: true},
		{name: "tail member placed before its siblings", active: 2, placed: 1, succeeded: 3, want: true},
		{name: "enough left unfinished: succeeded hold no node", active: 3, placed: 2, succeeded: 1, want: false},
		{name: "short", active: 1, placed: 1, succeeded: 1, want: false},
		{name: "failed members do not count", active: 1, placed: 1, failed: 3, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Counts{Active: tt.active, Placed: tt.placed, Succeeded: tt.succeeded, Failed: tt.failed}
			if got := ReadyCounts(Spec{MinMember: 3}, c); got != tt.want {
				t.Errorf("ReadyCounts = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestTasksReady(t *testing.T) {
	for _, tc := range []struct {
		name   string
		spec   Spec
		placed map[string]int
		ok     bool
		short  string
	}{
		{"no tasks", Spec{MinMember: 4}, nil, true, ""},
		{"workers without their master", Spec{MinMember: 4, MinTaskMember: map[string]int32{"master": 1, "worker": 3}},
			map[string]int{"worker": 4}, false, "master"},
		{"master and three workers", Spec{MinMember: 4, MinTaskMember: map[string]int32{"master": 1, "worker": 3}},
			map[string]int{"master": 1, "worker": 3}, true, ""},
		{"the first short task by name", Spec{MinMember: 3, MinTaskMember: map[string]int32{"ps": 1, "b": 1, "worker": 1}},
			map[string]int{}, false, "b"},
		{"a task of minimum 0 holds nothing", Spec{MinMember: 1, MinTaskMember: map[string]int32{"master": 1, "worker": 0}},
			map[string]int{"master": 1}, true, ""},
		// Volcano skips the check when minAvailable is below the tasks'
		// sum: the job may start without every task whole.
		{"elastic: minMember below the tasks' sum", Spec{MinMember: 2, MinTaskMember: map[string]int32{"master": 1, "worker": 3}},
			map[string]int{"worker": 2}, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok, short := TasksReady(tc.spec, tc.placed)
			if ok != tc.ok || short != tc.short {
				t.Errorf("TasksReady = %v, %q; want %v, %q", ok, short, tc.ok, tc.short)
			}
		})
	}
}
