package admission

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/caldera-sched/caldera/pkg/gang"
	"github.com/caldera-sched/caldera/pkg/gangbook"
)

func TestDecideAgain(t *testing.T) {
	finishing := map[types.UID]time.Time{"m0": time.Unix(100, 0)}
	for _, tc := range []struct {
		name      string
		started   bool
		min       int32 // the group's minMember now; admitted at 2
		bound     int
		finishing map[types.UID]time.Time
		want      bool
	}{
		{name: "not started, spec as admitted", min: 2, want: false},
		{name: "not started, minMember raised", min: 3, want: true},
		{name: "not started, minMember lowered", min: 1, want: false},
		{name: "started, members bound", started: true, min: 2, bound: 1, want: false},
		{name: "started, raised while running", started: true, min: 3, bound: 2, want: false},
		{name: "started, nothing bound", started: true, min: 2, want: true},
		{name: "started, nothing bound, a member may be finishing", started: true, min: 2, finishing: finishing, want: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := &gangbook.Group{Spec: gang.Spec{MinMember: tc.min}, Counts: gang.Counts{Bound: tc.bound}, Finishing: tc.finishing}
			u := &Unit{Admitted: true, Started: tc.started, admittedMin: 2}
			if got := u.decideAgain(g); got != tc.want {
				t.Errorf("decideAgain = %v, want %v", got, tc.want)
			}
		})
	}
}
