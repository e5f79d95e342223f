package trace

import (
	"reflect"
	"testing"
	"time"
)

// The generator's promises, on several seeds and sizes: the shape the
// benchmark relies on holds for every seed, not just the one it publishes.
func TestGenerateShape(t *testing.T) {
	small := DefaultParams(7)
	small.Nodes = 20
	small.ArrivalPhase = 2 * time.Minute
	small.Horizon = 5 * time.Minute
	for _, tc := range []struct {
		name   string
		params Params
	}{
		{"default seed 1", DefaultParams(1)},
		{"default seed 2", DefaultParams(2)},
		{"default seed 42", DefaultParams(42)},
		{"default seed 1000", DefaultParams(1000)},
		{"small cluster", small},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.params
			tr := Generate(p)
			s := tr.Stats()
			if s.OfferedLoad < 1.5 {
				t.Errorf("offered load %.2f, want > 1.5x capacity during arrivals", s.OfferedLoad)
			}
			if s.SmallJobFraction < 0.5 {
				t.Errorf("%.2f of jobs have at most 4 pods, want most", s.SmallJobFraction)
			}
			if s.LargeGangWorkFraction < 0.5 {
				t.Errorf("%.2f of CPU time in gangs of 16+, want most", s.LargeGangWorkFraction)
			}
			if s.MaxRun > p.RunMax {
				t.Errorf("longest run %v exceeds RunMax %v", s.MaxRun, p.RunMax)
			}
			queues := map[string]bool{}
			for _, q := range p.Queues {
				queues[q.Name] = true
			}
			seen := map[string]bool{}
			for i, j := range tr.Jobs {
				if j.ID != i {
					t.Fatalf("job %d has ID %d", i, j.ID)
				}
				if i > 0 && j.Arrival < tr.Jobs[i-1].Arrival {
					t.Fatalf("job %d arrives before job %d", i, i-1)
				}
				if j.Arrival < 0 || j.Arrival >= p.ArrivalPhase {
					t.Errorf("job %d arrives at %v, outside the arrival phase", i, j.Arrival)
				}
				if j.Size < 1 || j.Size > 64 {
					t.Errorf("job %d has %d pods", i, j.Size)
				}
				if j.MemberCPU < 1000 {
					t.Errorf("job %d's pods request %d millicores", i, j.MemberCPU)
				}
				if j.Run < p.RunMin || j.Run > p.RunMax {
					t.Errorf("job %d runs %v", i, j.Run)
				}
				if int64(j.Size)*j.MemberCPU > p.CapacityCPU()/2 {
					t.Errorf("job %d needs %d millicores, more than half the cluster", i, int64(j.Size)*j.MemberCPU)
				}
				if !queues[j.Queue] {
					t.Errorf("job %d in unknown queue %q", i, j.Queue)
				}
				seen[j.Queue] = true
			}
			if len(seen) != len(queues) {
				t.Errorf("jobs in %d of %d queues", len(seen), len(queues))
			}
		})
	}
}

// The same seed gives the same trace; another seed another one.
func TestGenerateSeeded(t *testing.T) {
	a, b := Generate(DefaultParams(3)), Generate(DefaultParams(3))
	if !reflect.DeepEqual(a, b) {
		t.Fatal("two traces of seed 3 differ")
	}
	if c := Generate(DefaultParams(4)); reflect.DeepEqual(a.Jobs, c.Jobs) {
		t.Fatal("seeds 3 and 4 give the same jobs")
	}
}

// Arrivals are bursty: many jobs share a few seconds with others, and
// the gaps between bursts are much longer than a burst.
func TestGenerateBursty(t *testing.T) {
	p := DefaultParams(5)
	tr := Generate(p)
	close := 0
	for i := 1; i < len(tr.Jobs); i++ {
		if tr.Jobs[i].Arrival-tr.Jobs[i-1].Arrival <= p.BurstSpread {
			close++
		}
	}
	// With arrivals spread evenly the mean gap would be ArrivalPhase/jobs.
	even := p.ArrivalPhase / time.Duration(len(tr.Jobs))
	if frac := float64(close) / float64(len(tr.Jobs)-1); frac < 0.6 || even > p.BurstSpread {
		t.Logf("even gap %v", even)
		t.Errorf("%.2f of arrivals within %v of the previous one, want most", frac, p.BurstSpread)
	}
}

func TestSizeClassOf(t *testing.T) {
	for n, want := range map[int]string{1: "1", 2: "2-4", 4: "2-4", 8: "8-16", 16: "8-16", 32: "32-64", 64: "32-64"} {
		if got := SizeClassOf(n); got != want {
			t.Errorf("SizeClassOf(%d) = %q, want %q", n, got, want)
		}
	}
}

// Guarantees scale with the cluster, in whole cores.
func TestGuaranteeCPU(t *testing.T) {
	p := DefaultParams(1)
	q := Queue{GuaranteeShare: 0.2}
	for nodes, want := range map[int]int64{40: 64000, 10: 16000, 3: 4000} {
		p.Nodes = nodes
		if got := p.GuaranteeCPU(q); got != want {
			t.Errorf("%d nodes: guarantee %d, want %d", nodes, got, want)
		}
	}
}
