package random_test

import (
	"reflect"
	"testing"
)

// TestGenerateIsPure holds the replay promise: a seed's scenario depends on
// the seed alone, and stays within the bounds.
func TestGenerateIsPure(t *testing.T) {
	gangs, annotated := 0, 0
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
		}
	}
	// About a quarter of the gangs ask for their PodGroup by annotation.
	if f := float64(annotated) / float64(gangs); f < 0.2 || f > 0.3 {
		t.Errorf("%d of %d gangs annotated (%.2f), want about a quarter", annotated, gangs, f)
	}
}
