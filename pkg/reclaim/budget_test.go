package reclaim

import (
	"slices"
	"testing"
	"time"
)

// A budget that allows one disruption protects every pod it covers but
// one: once one of its pods is a victim, the next would break it, so a pod
// it does not cover goes instead (the defect: only budgets at zero counted,
// and both covered pods, the most recently started, were taken).
func TestBudgetAllowingOneDisruption(t *testing.T) {
	pods := []Pod{
		{ID: "a/free-0", Node: "n0", Queue: "a", Started: t0, Request: cpu(1000)},
		{ID: "a/free-1", Node: "n0", Queue: "a", Started: t0.Add(time.Minute), Request: cpu(1000)},
		{ID: "a/pdb-0", Node: "n0", Queue: "a", Started: t0.Add(time.Hour), Request: cpu(1000), Budgets: []int{0}},
		{ID: "a/pdb-1", Node: "n0", Queue: "a", Started: t0.Add(2 * time.Hour), Request: cpu(1000), Budgets: []int{0}},
	}
	in := Input{
		Preemptor: Preemptor{Queue: "a", Priority: 10, Members: members(1, 2000)},
		Queues:    map[string]Queue{"a": {Allocated: cpu(4000), Deserved: cpu(4000)}},
		Pods:      pods, Nodes: nodesWith(0), Budgets: []int32{1},
		Options: Options{Preempt: true, Now: t0.Add(3 * time.Hour)},
	}
	plan, ok, why := Decide(in)
	if !ok {
		t.Fatalf("no plan: %s", why)
	}
	got := ids(in, plan)
	if want := []string{"a/free-1", "a/pdb-1"}; !slices.Equal(got, want) {
		t.Fatalf("victims %v, want %v (one pod of the budget, then the youngest uncovered one)", got, want)
	}

	// With no other pod to take, the plan breaks the budget rather than fail,
	// as the default preemption does; the violation is its last resort.
	in.Pods = pods[2:]
	plan, ok, why = Decide(in)
	if !ok {
		t.Fatalf("no plan with only covered pods: %s", why)
	}
	if got := ids(in, plan); len(got) != 2 {
		t.Fatalf("victims %v, want both covered pods", got)
	}
}

// Plan.Placement names a node for every member, the first one Plan.Node.
func TestPlacementPerMember(t *testing.T) {
	in := Input{
		Preemptor: Preemptor{Queue: "a", Priority: 10, Members: members(2, 4000)},
		Queues:    map[string]Queue{"a": {Allocated: cpu(8000), Deserved: cpu(8000)}},
		Pods:      fill("a", "", 0, 8, 1000, "n0", "n1"), Nodes: nodesWith(0, 0),
		Options: Options{Preempt: true, Now: t0.Add(time.Hour)},
	}
	plan, ok, why := Decide(in)
	if !ok {
		t.Fatalf("no plan: %s", why)
	}
	if len(plan.Placement) != 2 || plan.Placement[0] != plan.Node || plan.Placement[0] == plan.Placement[1] {
		t.Fatalf("placement %v (node %s), want one distinct node per member", plan.Placement, plan.Node)
	}
}

func TestPickSiblings(t *testing.T) {
	got := PickSiblings(members(1, 0)[:0], 3)
	if len(got) != 0 {
		t.Fatalf("no siblings gave %v", got)
	}
	sizes := members(4, 0)
	for i, v := range []int64{1000, 3000, 2000, 3000} {
		sizes[i] = cpu(v)
	}
	if got := PickSiblings(sizes, 2); !slices.Equal(got, []int{1, 3}) {
		t.Fatalf("PickSiblings = %v, want [1 3]", got)
	}
}
