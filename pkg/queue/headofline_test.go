package queue

import (
	"reflect"
	"testing"
	"time"
)

// The pass within one queue: the starvation guard, lookahead past refused
// groups, parked groups, and queues that appear or hold groups themselves.

func TestAdmitStarvationGuard(t *testing.T) {
	// q may hold 4 cpu and holds 3: the 2-cpu head cannot fit, 1-cpu groups can.
	w := world{
		specs: []Spec{{Name: "q", Capability: cores(4)}},
		total: cores(16),
		usage: map[string]Usage{"q": {Allocated: cores(3)}},
	}
	p := NewPending()
	p.Set(grp("ns/big", "q", 0, cores(2)))
	p.Set(grp("ns/s1", "q", 1, cores(1)))

	res, _ := w.pass(p, t0)
	if got := admittedKeys(res); !reflect.DeepEqual(got, []string{"ns/s1"}) {
		t.Fatalf("first pass admitted %v, want the small group past the head", got)
	}
	// s1 is now inflight.
	w.usage = map[string]Usage{"q": {Allocated: cores(3), Inflight: cores(1)}}
	w.specs[0].Capability = cores(5)
	p.Set(grp("ns/s2", "q", 2, cores(1)))
	res, _ = w.pass(p, t0.Add(200*time.Second))
	if got := admittedKeys(res); !reflect.DeepEqual(got, []string{"ns/s2"}) {
		t.Fatalf("pass at 200s admitted %v, want s2 (guard not yet due)", got)
	}

	w.usage = map[string]Usage{"q": {Allocated: cores(3), Inflight: cores(2)}}
	w.specs[0].Capability = cores(6)
	p.Set(grp("ns/s3", "q", 3, cores(1)))
	res, _ = w.pass(p, t0.Add(300*time.Second))
	if got := admittedKeys(res); len(got) != 0 {
		t.Fatalf("pass at 300s admitted %v, want nothing: the head reserved the queue", got)
	}
	d, _ := p.Decision(k("ns/s3"))
	if d.Check != CheckReserved || d.Message() != "queue q is reserved for pg:ns/big, at its head since 2030-01-01T00:00:00Z" {
		t.Errorf("Decision(s3) = %v %q", d.Check, d.Message())
	}
	if d, _ := p.Decision(k("ns/big")); d.Message() != "queue q: cpu request 2 exceeds remaining capability 1" {
		t.Errorf("Decision(big) = %q", d.Message())
	}
	if q := res.Queues[0]; q.Stop.Check != CheckReserved || q.Refused != 1 || q.Waiting != 1 {
		t.Errorf("queue outcome %+v", q)
	}

	// Once the head fits, it is admitted first and the reservation ends.
	w.specs[0].Capability = cores(8)
	res, _ = w.pass(p, t0.Add(400*time.Second))
	if got := admittedKeys(res); !reflect.DeepEqual(got, []string{"ns/big", "ns/s3"}) {
		t.Fatalf("admitted %v, want big then s3", got)
	}

	t.Run("a new head starts a new clock", func(t *testing.T) {
		w := world{specs: []Spec{{Name: "q", Capability: cores(1)}}, total: cores(16)}
		p := NewPending()
		p.Set(grp("ns/a", "q", 0, cores(2)))
		w.pass(p, t0) // a is parked: it can never fit
		p.Set(grp("ns/b", "q", 1, cores(1)))
		w.usage = map[string]Usage{"q": {Allocated: cores(1)}}
		w.pass(p, t0.Add(time.Hour)) // b becomes the head now
		res, _ := w.pass(p, t0.Add(time.Hour+299*time.Second))
		if res.Queues[0].Stop.Check == CheckReserved {
			t.Error("reserved 299s after b reached the head")
		}
		res, _ = w.pass(p, t0.Add(time.Hour+300*time.Second))
		if res.Queues[0].Stop.Check != CheckReserved || res.Queues[0].Stop.Behind != k("ns/b") {
			t.Errorf("queue outcome %+v, want reserved for b", res.Queues[0].Stop)
		}
	})

	t.Run("a negative threshold disables the guard", func(t *testing.T) {
		w := world{
			specs: []Spec{{Name: "q", Capability: cores(4)}},
			total: cores(16),
			usage: map[string]Usage{"q": {Allocated: cores(3)}},
			opts:  Options{StarvationThreshold: -1},
		}
		p := NewPending()
		p.Set(grp("ns/big", "q", 0, cores(2)))
		w.pass(p, t0)
		p.Set(grp("ns/s", "q", 1, cores(1)))
		if res, _ := w.pass(p, t0.Add(24*time.Hour)); len(res.Admitted) != 1 {
			t.Errorf("admitted %v, want the small group", admittedKeys(res))
		}
	})

	t.Run("a group refused by its namespace quota is not a head", func(t *testing.T) {
		w := world{
			specs: []Spec{{Name: "q"}},
			total: cores(16),
			opts: Options{StarvationThreshold: time.Second, Quota: func(g Group) (bool, string) {
				return g.Key != k("ns/over-quota"), "quota"
			}},
		}
		p := NewPending()
		p.Set(grp("ns/over-quota", "q", 0, cores(1)))
		w.pass(p, t0)
		p.Set(grp("ns/ok", "q", 1, cores(1)))
		if res, _ := w.pass(p, t0.Add(time.Hour)); len(res.Admitted) != 1 {
			t.Errorf("admitted %v, want ok", admittedKeys(res))
		}
	})
}

func TestAdmitLookahead(t *testing.T) {
	// The queue's capability is used up: every group is refused.
	w := world{
		specs:  []Spec{{Name: "q", Capability: cores(2)}},
		total:  cores(16),
		usage:  map[string]Usage{"q": {Allocated: cores(2)}},
		groups: many("q", 40, cores(1)),
		opts:   Options{Lookahead: 3},
	}
	p, res, _ := w.run()
	if len(res.Refused) != 4 {
		t.Fatalf("refused %d groups, want 4 (the head and 3 looked past)", len(res.Refused))
	}
	if q := res.Queues[0]; q.Stop.Check != CheckWaiting || q.Refused != 4 || q.Waiting != 36 {
		t.Errorf("queue outcome %+v", q)
	}
	d, _ := p.Decision(k("q/30"))
	if d.Check != CheckWaiting || d.Message() != "queue q: waiting behind pg:q/0" {
		t.Errorf("Decision(q/30) = %q", d.Message())
	}
	if d, _ := p.Decision(k("q/3")); d.Check != CheckCapability {
		t.Errorf("Decision(q/3) = %q, want its own refusal", d.Message())
	}

	t.Run("negative lookahead is strict head-of-line", func(t *testing.T) {
		w := w
		w.opts = Options{Lookahead: -1}
		_, res, _ := w.run()
		if len(res.Refused) != 1 || res.Queues[0].Waiting != 39 {
			t.Errorf("refused %d, queue outcome %+v", len(res.Refused), res.Queues[0])
		}
	})

	t.Run("the default looks past 16", func(t *testing.T) {
		w := w
		w.opts = Options{}
		_, res, _ := w.run()
		if len(res.Refused) != DefaultLookahead+1 {
			t.Errorf("refused %d", len(res.Refused))
		}
	})

	t.Run("refusals without a head", func(t *testing.T) {
		w := world{
			specs:  []Spec{{Name: "q"}},
			total:  cores(16),
			groups: many("q", 5, cores(1)),
			opts:   Options{Lookahead: 1, Quota: func(Group) (bool, string) { return false, "" }},
		}
		p, _, _ := w.run()
		d, _ := p.Decision(k("q/4"))
		if d.Message() != "queue q: waiting behind 2 groups that could not be admitted" {
			t.Errorf("Decision(q/4) = %q", d.Message())
		}
		if d, _ := p.Decision(k("q/0")); d.Message() != "resource quota exceeded" {
			t.Errorf("Decision(q/0) = %q", d.Message())
		}
	})
}

func TestAdmitParking(t *testing.T) {
	w := world{
		specs:  []Spec{{Name: "q", Capability: cores(8)}},
		total:  cores(16),
		groups: []Group{grp("ns/huge", "q", 0, cores(12))},
	}
	p, res, _ := w.run()
	if len(res.Refused) != 1 || !res.Refused[0].Decision.Permanent {
		t.Fatalf("refused %+v, want huge refused for good", res.Refused)
	}
	// Parked: the next passes do not examine it, and report the same reason.
	res, _ = w.pass(p, t0.Add(time.Minute))
	if len(res.Refused) != 0 || len(res.Admitted) != 0 {
		t.Fatalf("second pass examined %d groups", len(res.Refused)+len(res.Admitted))
	}
	if d, _ := p.Decision(k("ns/huge")); d.Message() != "queue q: cpu request 12 exceeds capability 8" {
		t.Errorf("Decision = %q", d.Message())
	}
	// A smaller capability keeps it parked; a larger one retries it.
	w.specs[0].Capability = cores(6)
	if res, _ = w.pass(p, t0.Add(2*time.Minute)); len(res.Refused) != 0 {
		t.Fatal("a lower capability retried the parked group")
	}
	w.specs[0].Capability = cores(12)
	res, _ = w.pass(p, t0.Add(3*time.Minute))
	if got := admittedKeys(res); !reflect.DeepEqual(got, []string{"ns/huge"}) {
		t.Fatalf("admitted %v after the capability rose", got)
	}

	t.Run("an update retries a parked group", func(t *testing.T) {
		w := world{specs: []Spec{{Name: "q", Capability: cores(8)}}, total: cores(16)}
		p := NewPending()
		p.Set(grp("ns/g", "q", 0, cores(12)))
		w.pass(p, t0)
		p.Set(grp("ns/g", "q", 0, cores(6)))
		if res, _ := w.pass(p, t0); len(res.Admitted) != 1 {
			t.Error("the smaller group was not admitted")
		}
	})

	t.Run("deleting a parked group", func(t *testing.T) {
		w := world{specs: []Spec{{Name: "q", Capability: cores(8)}}, total: cores(16)}
		p := NewPending()
		p.Set(grp("ns/a", "q", 0, cores(12)))
		p.Set(grp("ns/b", "q", 0, cores(12)))
		w.pass(p, t0)
		if !p.Delete(k("ns/a")) || p.Len() != 1 || p.QueueLen("q") != 1 {
			t.Fatal("Delete of a parked group")
		}
		if d, ok := p.Decision(k("ns/b")); !ok || !d.Permanent {
			t.Errorf("Decision(b) = %+v %v", d, ok)
		}
	})
}

func TestAdmitMissingQueueCreatedLater(t *testing.T) {
	w := world{total: cores(8), groups: []Group{grp("ns/a", "later", 0, cores(1))}}
	p, res, _ := w.run()
	if len(res.Admitted) != 0 || res.Queues[0].Stop.Check != CheckQueueMissing || res.Queues[0].Waiting != 1 {
		t.Fatalf("result %+v", res)
	}
	w.specs = []Spec{{Name: "later"}}
	if res, _ := w.pass(p, t0); len(res.Admitted) != 1 {
		t.Fatal("not admitted once the queue exists")
	}
}

func TestAdmitParentWithOwnGroups(t *testing.T) {
	// org's own groups compete with child a (weight 3) as a child of weight 1
	// for org's 16 of 32 cpus.
	w := world{
		specs:  []Spec{{Name: "org"}, {Name: "a", Parent: "org", Weight: 3}, {Name: "other"}},
		total:  cores(32),
		groups: append(append(many("org", 16, cores(1)), many("a", 12, cores(1))...), many("other", 20, cores(1))...),
	}
	p, res, _ := w.run()
	if got, want := countByQueue(res), map[string]int{"org": 4, "a": 12, "other": 16}; !reflect.DeepEqual(got, want) {
		t.Fatalf("admitted per queue %v, want %v", got, want)
	}
	if d, _ := p.Decision(k("org/4")); d.Message() != "queue org: cpu request 1 exceeds remaining deserved share 0" {
		t.Errorf("Decision(org/4) = %q", d.Message())
	}
}

func TestAdmitNilShares(t *testing.T) {
	p := NewPending()
	p.Set(grp("ns/a", "q", 0, cores(1)))
	res := p.Admit(nil, Cluster{Allocatable: cores(4)}, Options{}, t0)
	if len(res.Queues) != 1 || res.Queues[0].Stop.Check != CheckQueueMissing {
		t.Errorf("result %+v", res)
	}
}
