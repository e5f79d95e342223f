package status

import (
	"testing"

	"github.com/caldera-sched/caldera/pkg/queue"
)

// Every check gives refusals an action of their own: client-go folds Events
// with one reason and action into a series that keeps its first note, so a
// unit refused first for one check and then for another must not share
// one.
func TestAdmissionActionPerCheck(t *testing.T) {
	seen := map[string]queue.Check{}
	for c := queue.CheckNone; c <= queue.CheckWaiting; c++ {
		a := AdmissionAction(false, c)
		if prev, dup := seen[a]; dup {
			t.Errorf("checks %v and %v share the action %q", prev, c, a)
		}
		seen[a] = c
		if len(a) > 128 {
			t.Errorf("action %q is longer than the Events API allows", a)
		}
	}
	if a := AdmissionAction(true, queue.CheckNone); a != "Admission" {
		t.Errorf("an admission's action is %q", a)
	}
}
