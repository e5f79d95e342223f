package reclaim

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

// TestOffsetAtPlannedNode: the Evaluator's dry run starts at the planned
// node and stops at one candidate while a plan is in flight; with no
// plan, or a count of potential nodes that is not the plan's, it tries
// every node from the first, as before.
func TestOffsetAtPlannedNode(t *testing.T) {
	pl := &Reclaim{plans: map[types.UID]*plan{}}
	for _, tc := range []struct {
		name          string
		plans         map[types.UID]*plan
		n             int32
		offset, count int32
	}{
		{"no plan", nil, 10, 0, 10},
		{"the plan's node", map[types.UID]*plan{"a": {at: 7, potential: 10}}, 10, 7, 1},
		{"another count of nodes", map[types.UID]*plan{"a": {at: 7, potential: 10}}, 9, 0, 9},
		{"two plans", map[types.UID]*plan{"a": {at: 7, potential: 10}, "b": {at: 2, potential: 10}}, 10, 0, 10},
	} {
		pl.plans = tc.plans
		if offset, count := pl.GetOffsetAndNumCandidates(tc.n); offset != tc.offset || count != tc.count {
			t.Errorf("%s: GetOffsetAndNumCandidates(%d) = %d, %d; want %d, %d", tc.name, tc.n, offset, count, tc.offset, tc.count)
		}
	}
}
