package random_test

import (
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/caldera-sched/caldera/pkg/runlimit"
)

// TestGenerateIsPure holds the replay promise: a seed's scenario depends on
// the seed alone, and stays within the bounds.
func TestGenerateIsPure(t *testing.T) {
	gangs, annotated, groups, bounded := 0, 0, 0, 0
	for seed := uint64(1); seed <= 200; seed++ {
		a, b := Generate(seed), Generate(seed)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("seed %d: two scenarios differ", seed)
		}
		if n := len(a.Nodes); n < 4 || n > 12 {
			t.Errorf("seed %d: %d nodes", seed, n)
		}
		if n := len(a.Queues); n < 2 || n > 5 {
			t.Errorf("seed %d: %d queues", seed, n)
		}
		kills := 0
		for _, act := range a.Actions {
			if act.Kind == actKill {
				kills++
			}
		}
		if kills != 1 {
			t.Errorf("seed %d: %d kills", seed, kills)
		}
		for _, q := range a.Queues {
			if q.Capability > 0 && q.Guarantee > q.Capability {
				t.Errorf("seed %d: queue %s guarantee above capability", seed, q.Name)
			}
		}
		for _, g := range a.Groups {
			if !g.Singleton {
				gangs++
			}
			if g.Annotated {
				annotated++
				if g.Singleton {
					t.Errorf("seed %d: singleton %s asks for a gang by annotation", seed, g)
				}
			}
			if g.Members < 1 || g.Members > 16 || g.MinMember < 1 || g.MinMember > g.Members || g.CPU < 1 || g.CPU > 8 {
				t.Errorf("seed %d: group %s out of bounds", seed, g)
			}
			groups++
			if g.Limit == 0 {
				if g.LimitVia != limitNone || g.Run != 0 {
					t.Errorf("seed %d: unbounded group %s declares a limit", seed, g)
				}
				continue
			}
			bounded++
			// A limit is a promise: the runner ends each member before it.
			if g.Limit < minLimit || g.Limit > maxLimit || g.Run <= 0 || g.Run > time.Duration(g.Limit)*time.Second*85/100 {
				t.Errorf("seed %d: group %s: limit or run time out of bounds", seed, g)
			}
			if (g.Singleton || g.Annotated) && g.LimitVia == limitGroupAnnot || g.Singleton && g.LimitVia == limitPartial {
				t.Errorf("seed %d: group %s cannot declare its limit that way", seed, g)
			}
		}
	}
	// About a quarter of the gangs ask for their PodGroup by annotation.
	if f := float64(annotated) / float64(gangs); f < 0.2 || f > 0.3 {
		t.Errorf("%d of %d gangs annotated (%.2f), want about a quarter", annotated, gangs, f)
	}
	// About three groups in four declare a limit.
	if f := float64(bounded) / float64(groups); f < 0.65 || f > 0.85 {
		t.Errorf("%d of %d groups bounded (%.2f), want about 0.75", bounded, groups, f)
	}
}

// TestDeclaredLimits: the pods (and PodGroup) the harness writes declare
// to the scheduler's own reading (pkg/runlimit) exactly the limit the
// scenario says, per member and for the gang, whichever way they declare
// it.
func TestDeclaredLimits(t *testing.T) {
	r := &run{ns: "ns"}
	owner := &metav1.OwnerReference{APIVersion: "v1", Kind: ownerKind, Name: "g", UID: "u", Controller: ptr.To(true)}
	for _, via := range []limitSource{limitNone, limitGroupAnnot, limitPodAnnot, limitDeadline, limitDeadlineLoose, limitPartial} {
		for _, annotated := range []bool{false, true} {
			g := groupSpec{Name: "g", Queue: "q", Members: 3, MinMember: 2, CPU: 1, Annotated: annotated, LimitVia: via}
			if via != limitNone {
				g.Limit, g.Run = 17, 5*time.Second
			}
			var group map[string]string
			if via == limitGroupAnnot {
				group = map[string]string{runlimit.Annotation: "17"}
			}
			var lims []runlimit.Limit
			for i, p := range r.pods(g, owner) {
				l, err := runlimit.Of(p, group)
				if err != nil {
					t.Fatalf("%s: %v", via, err)
				}
				want := int64(g.memberLimit(i))
				if got := l.Hold(); want == 0 && l.Bounded() || want > 0 && got != want {
					t.Errorf("%s member %d: the scheduler reads %v, want %ds", via, i, l, want)
				}
				lims = append(lims, l)
			}
			gang := runlimit.Gang(lims)
			if want := int64(g.gangLimit()); want == 0 && gang.Bounded() || want > 0 && gang.Hold() != want {
				t.Errorf("%s: gang limit %v, want %ds", via, gang, want)
			}
		}
	}
}
