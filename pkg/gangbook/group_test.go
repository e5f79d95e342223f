package gangbook

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/caldera-sched/caldera/pkg/gang"
	"github.com/caldera-sched/caldera/pkg/resources"
)

// Count keeps a group's counts, what its waiting members ask for and its
// per-task placements, and says when the waiting demand changed; taking a
// member out undoes adding it.
func TestCount(t *testing.T) {
	cpu := func(m int64) resources.List { return resources.List{resources.CPU: m} }
	cases := []struct {
		name        string
		member      Member
		wantChanged bool
		wantPending resources.List
		wantPlaced  int
		wantTask    int
	}{
		{"a waiting member asks", Member{State: gang.Member{Phase: gang.PodPending}, Request: cpu(500)}, true, cpu(500), 0, 0},
		{"a reserved member holds, asks nothing", Member{State: gang.Member{Phase: gang.PodPending, Reserved: true}, Request: cpu(500)}, false, nil, 1, 0},
		{"a bound worker counts for its task", Member{State: gang.Member{Phase: gang.PodRunning, Assigned: true}, Request: cpu(500), Task: "worker"}, false, nil, 1, 1},
		{"a succeeded worker still counts for its task", Member{State: gang.Member{Phase: gang.PodSucceeded, Assigned: true}, Task: "worker"}, false, nil, 0, 1},
		{"an unreachable member asks nothing", Member{State: gang.Member{Phase: gang.PodPending, Unreachable: true}, Request: cpu(500)}, false, nil, 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := &Group{Spec: gang.Spec{MinMember: 1, MinTaskMember: map[string]int32{"worker": 1}}}
			m := tc.member
			if changed := g.Count(&m, +1); changed != tc.wantChanged {
				t.Errorf("Count(+1) changed = %v, want %v", changed, tc.wantChanged)
			}
			if !g.PendingReq.Equal(tc.wantPending) || g.Counts.Placed != tc.wantPlaced || g.taskPlaced["worker"] != tc.wantTask {
				t.Errorf("after Count(+1): pending %v placed %d worker %d, want %v %d %d",
					g.PendingReq, g.Counts.Placed, g.taskPlaced["worker"], tc.wantPending, tc.wantPlaced, tc.wantTask)
			}
			if changed := g.Count(&m, -1); changed != tc.wantChanged {
				t.Errorf("Count(-1) changed = %v, want %v", changed, tc.wantChanged)
			}
			if !g.PendingReq.IsZero() || g.Counts != (gang.Counts{}) || g.taskPlaced["worker"] != 0 {
				t.Errorf("after Count(-1): pending %v counts %+v worker %d, want all zero", g.PendingReq, g.Counts, g.taskPlaced["worker"])
			}
		})
	}
}

// The barrier opens once the minimum and every task's minimum are placed.
func TestBarrierOpen(t *testing.T) {
	placed := func(task string) *Member {
		return &Member{State: gang.Member{Phase: gang.PodPending, Reserved: true}, Task: task}
	}
	g := &Group{Spec: gang.Spec{MinMember: 2, MinTaskMember: map[string]int32{"master": 1}}}
	if ok, why := g.BarrierOpen(); ok || why != "waiting for the gang: 0/2 members placed" {
		t.Errorf("empty: BarrierOpen = %v %q", ok, why)
	}
	g.Count(placed("worker"), +1)
	g.Count(placed("worker"), +1)
	if ok, why := g.BarrierOpen(); ok || why != "waiting for the gang: task master has 0/1 members placed" {
		t.Errorf("two workers: BarrierOpen = %v %q, want the master awaited", ok, why)
	}
	g.Count(placed("master"), +1)
	if ok, why := g.BarrierOpen(); !ok {
		t.Errorf("with the master: BarrierOpen = %v %q, want open", ok, why)
	}
}

// A group's priority is its members' highest; removing the last member at
// it finds the next highest among those left.
func TestPriority(t *testing.T) {
	five := int32(5)
	g := &Group{Members: map[types.UID]*Member{"a": {Pod: &v1.Pod{Spec: v1.PodSpec{Priority: &five}}}}}
	g.AddPriority(5)
	g.AddPriority(9)
	g.AddPriority(9)
	g.RemovePriority(9)
	if g.Priority != 9 {
		t.Fatalf("one member at 9 left: priority %d", g.Priority)
	}
	g.RemovePriority(9)
	if g.Priority != 5 {
		t.Errorf("the members at 9 gone: priority %d, want 5, rescanned from the members left", g.Priority)
	}
}
