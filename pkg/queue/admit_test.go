package queue

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/caldera-sched/caldera/pkg/resources"
)

var t0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// grp is a ready group of one member asking for req, created i seconds after t0.
func grp(key, queue string, i int, req resources.List) Group {
	return Group{Key: k(key), Queue: queue, Created: t0.Add(time.Duration(i) * time.Second), Request: req, Members: 1, MinMember: 1}
}

// world is the input of one admission pass.
type world struct {
	specs  []Spec
	total  resources.List
	used   resources.List
	usage  map[string]Usage // allocated and inflight; pending comes from the Pending
	groups []Group
	opts   Options
	plans  int // Cluster.PlansWaiting
}

// pass divides the cluster with the Pending's current pending requests and
// runs one admission pass at now.
func (w world) pass(p *Pending, now time.Time) (*Result, *Shares) {
	usage := map[string]Usage{}
	for q, u := range w.usage {
		usage[q] = u
	}
	for _, q := range p.Queues() {
		u := usage[q]
		u.Pending = p.PendingRequest(q)
		usage[q] = u
	}
	s := Divide(BuildTree(w.specs), w.total, usage)
	return p.Admit(s, Cluster{Allocatable: w.total, Used: w.used, PlansWaiting: w.plans}, w.opts, now), s
}

func (w world) run() (*Pending, *Result, *Shares) {
	p := NewPending()
	for _, g := range w.groups {
		p.Set(g)
	}
	res, s := w.pass(p, t0)
	return p, res, s
}

func admittedKeys(res *Result) []string {
	out := []string{}
	for _, o := range res.Admitted {
		out = append(out, short(o.Group.Key))
	}
	return out
}

func countByQueue(res *Result) map[string]int {
	out := map[string]int{}
	for _, o := range res.Admitted {
		out[o.Group.Queue]++
	}
	return out
}

// many returns n groups of req in queue, keyed queue/0, queue/1, ...
func many(queue string, n int, req resources.List) []Group {
	out := make([]Group, n)
	for i := range out {
		out[i] = grp(queue+"/"+itoa(i), queue, i, req)
	}
	return out
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}

func TestAdmitRules(t *testing.T) {
	gpu := func(n int64) resources.List { return resources.List{resources.CPU: 1000, "nvidia.com/gpu": n} }
	tests := []struct {
		name     string
		w        world
		admitted []string          // in admission order
		messages map[string]string // Decision(key).Message() of groups left pending
		checks   map[string]Check
		waived   string // the group admitted by the head exception, if any
	}{
		{
			name: "(3) capability of 4 admits one 3-cpu group and holds the second",
			w: world{
				specs:  []Spec{{Name: "team-a", Capability: cores(4)}},
				total:  cores(16),
				groups: []Group{grp("ns/one", "team-a", 0, cores(3)), grp("ns/two", "team-a", 1, cores(3))},
			},
			admitted: []string{"ns/one"},
			messages: map[string]string{"ns/two": "queue team-a: cpu request 3 exceeds remaining capability 1"},
			checks:   map[string]Check{"ns/two": CheckCapability},
		},
		{
			name: "(4) a gang short of members claims no share of idle room",
			w: world{
				specs: []Spec{{Name: "a", Weight: 4}, {Name: "b", Weight: 1}},
				total: cores(16),
				usage: map[string]Usage{"b": {Allocated: cores(10)}},
				used:  cores(10),
				groups: []Group{
					// Counted, its 16 cpu would leave b a share of 16/5 and
					// keep ns/s out of the 6 idle cores for good.
					{Key: k("ns/short"), Queue: "a", Created: t0, Request: cores(16), Members: 1, MinMember: 2},
					grp("ns/s", "b", 1, cores(3)),
				},
			},
			admitted: []string{"ns/s"},
			messages: map[string]string{"ns/short": "waiting for members: 1/2"},
		},
		{
			name: "(3) allocated and earlier inflight count against the capability",
			w: world{
				specs:  []Spec{{Name: "q", Capability: cores(4)}},
				total:  cores(16),
				usage:  map[string]Usage{"q": {Allocated: cores(2), Inflight: cores(1)}},
				groups: []Group{grp("ns/a", "q", 0, cores(2)), grp("ns/b", "q", 1, cores(1))},
			},
			admitted: []string{"ns/b"},
			messages: map[string]string{"ns/a": "queue q: cpu request 2 exceeds remaining capability 1"},
		},
		{
			name: "(3) a parent's capability caps its children",
			w: world{
				specs: []Spec{
					{Name: "org", Capability: cores(4)},
					{Name: "a", Parent: "org"}, {Name: "b", Parent: "org"},
				},
				total:  cores(16),
				groups: []Group{grp("ns/a", "a", 0, cores(3)), grp("ns/b", "b", 1, cores(3))},
			},
			// a deserves 2 of org's 4: its 3-cpu group passes by the head exception.
			admitted: []string{"ns/a"},
			waived:   "ns/a",
			messages: map[string]string{"ns/b": "queue org: cpu request 3 exceeds remaining capability 1"},
		},
		{
			name: "(3) a sibling's guarantee is reserved even while it is idle",
			w: world{
				specs:  []Spec{{Name: "a"}, {Name: "b", Guarantee: cores(12)}},
				total:  cores(16),
				groups: many("a", 6, cores(1)),
			},
			admitted: []string{"a/0", "a/1", "a/2", "a/3"},
			messages: map[string]string{"a/4": "queue a: cpu request 1 exceeds remaining capability 0"},
		},
		{
			name: "(4) weights 1 and 3 competing for 16 cpu of 1-cpu groups end at 4 and 12",
			w: world{
				specs:  []Spec{{Name: "light", Weight: 1}, {Name: "heavy", Weight: 3}},
				total:  cores(16),
				groups: append(many("light", 16, cores(1)), many("heavy", 16, cores(1))...),
			},
			messages: map[string]string{
				"light/4":  "queue light: cpu request 1 exceeds remaining deserved share 0",
				"heavy/12": "queue heavy: cpu request 1 exceeds remaining deserved share 0",
			},
			checks: map[string]Check{"light/4": CheckFairness, "heavy/12": CheckFairness},
		},
		{
			name: "(4) a queue without competitors may use everything up to its capability",
			w: world{
				specs:  []Spec{{Name: "solo", Capability: cores(10)}, {Name: "idle", Weight: 100}},
				total:  cores(16),
				groups: many("solo", 12, cores(1)),
			},
			messages: map[string]string{"solo/10": "queue solo: cpu request 1 exceeds remaining capability 0"},
		},
		{
			name: "(4) a parent's deserved share binds its children",
			w: world{
				specs: []Spec{
					{Name: "org"}, {Name: "other"},
					{Name: "a", Parent: "org"}, {Name: "b", Parent: "org"},
				},
				total:  cores(16),
				usage:  map[string]Usage{"b": {Allocated: cores(6)}},
				groups: append(many("a", 4, cores(1)), many("other", 10, cores(1))...),
			},
			// org deserves 8 of which b holds 6: a gets 2, although its own share
			// (split with b's 6 + 0 pending) would allow more.
			messages: map[string]string{"a/2": "queue org: cpu request 1 exceeds remaining deserved share 0"},
		},
		{
			name: "(5) overcommit 1.0: only idle resources admit",
			w: world{
				specs:  []Spec{{Name: "q"}},
				total:  cores(4),
				used:   cores(2),
				groups: many("q", 6, cores(1)),
				opts:   Options{OvercommitFactor: 1.0},
			},
			admitted: []string{"q/0", "q/1"},
			messages: map[string]string{"q/2": "cluster: cpu request 1 exceeds idle 0"},
			checks:   map[string]Check{"q/2": CheckCluster},
		},
		{
			name: "(5) overcommit 1.5 admits more",
			w: world{
				specs:  []Spec{{Name: "q"}},
				total:  cores(4),
				used:   cores(2),
				groups: many("q", 6, cores(1)),
				opts:   Options{OvercommitFactor: 1.5},
			},
			admitted: []string{"q/0", "q/1", "q/2", "q/3"},
			messages: map[string]string{"q/4": "queue q: cpu request 1 exceeds remaining capability 0"},
		},
		{
			name: "(5) every queue's inflight counts, even a deleted queue's",
			w: world{
				specs:  []Spec{{Name: "q"}},
				total:  cores(4),
				usage:  map[string]Usage{"deleted": {Inflight: cores(3)}},
				groups: many("q", 2, cores(1)),
				opts:   Options{OvercommitFactor: 1.0},
			},
			admitted: []string{"q/0"},
			messages: map[string]string{"q/1": "cluster: cpu request 1 exceeds idle 0"},
		},
		{
			name: "(5) only the resources the group requests are compared",
			w: world{
				specs: []Spec{{Name: "q"}},
				total: resources.List{resources.CPU: 8000, "nvidia.com/gpu": 2},
				used:  resources.List{"nvidia.com/gpu": 2},
				groups: []Group{
					grp("ns/gpu", "q", 0, gpu(1)),
					grp("ns/cpu", "q", 1, cores(1)),
				},
			},
			admitted: []string{"ns/cpu"},
			messages: map[string]string{"ns/gpu": "cluster: nvidia.com/gpu request 1 exceeds idle 0"},
		},
		{
			name: "(1) a group without enough members is not considered",
			w: world{
				specs:  []Spec{{Name: "q"}},
				total:  cores(8),
				groups: []Group{{Key: k("ns/gang"), Queue: "q", Request: cores(1), Members: 2, MinMember: 3}, grp("ns/ok", "q", 1, cores(1))},
			},
			admitted: []string{"ns/ok"},
			messages: map[string]string{"ns/gang": "waiting for members: 2/3"},
			checks:   map[string]Check{"ns/gang": CheckMembers},
		},
		{
			name: "(2) a closed queue admits nothing",
			w: world{
				specs:  []Spec{{Name: "shut", State: StateClosed}, {Name: "open"}},
				total:  cores(8),
				usage:  map[string]Usage{"shut": {Allocated: cores(2)}},
				groups: []Group{grp("ns/a", "shut", 0, cores(1)), grp("ns/b", "open", 1, cores(1))},
			},
			admitted: []string{"ns/b"},
			messages: map[string]string{"ns/a": "queue shut is closed"},
			checks:   map[string]Check{"ns/a": CheckQueueClosed},
		},
		{
			name: "(2) a missing queue",
			w: world{
				specs:  []Spec{{Name: "q"}},
				total:  cores(8),
				groups: []Group{grp("ns/a", "ghost", 0, cores(1))},
			},
			messages: map[string]string{"ns/a": "queue ghost not found"},
			checks:   map[string]Check{"ns/a": CheckQueueMissing},
		},
		{
			name: "(2) a queue with a tree problem",
			w: world{
				specs:  []Spec{{Name: "lost", Parent: "nowhere"}, {Name: "c1", Parent: "c2"}, {Name: "c2", Parent: "c1"}},
				total:  cores(8),
				groups: []Group{grp("ns/a", "lost", 0, cores(1)), grp("ns/b", "c1", 0, cores(1))},
			},
			messages: map[string]string{
				"ns/a": `queue lost: parent queue "nowhere" not found`,
				"ns/b": "queue c1: parent cycle: c1 -> c2 -> c1",
			},
			checks: map[string]Check{"ns/a": CheckQueueBroken, "ns/b": CheckQueueBroken},
		},
		{
			name: "(6) the quota callback refuses a namespace",
			w: world{
				specs:  []Spec{{Name: "q"}},
				total:  cores(8),
				groups: []Group{grp("full/a", "q", 0, cores(1)), grp("ok/b", "q", 1, cores(1))},
				opts: Options{Quota: func(g Group) (bool, string) {
					if strings.HasPrefix(short(g.Key), "full/") {
						return false, "namespace full: exceeded quota: cpu"
					}
					return true, ""
				}},
			},
			admitted: []string{"ok/b"},
			messages: map[string]string{"full/a": "namespace full: exceeded quota: cpu"},
			checks:   map[string]Check{"full/a": CheckQuota},
		},
		{
			name: "head exception: a group larger than its deserved share is admitted at the head",
			w: world{
				specs: []Spec{{Name: "a", Weight: 1}, {Name: "b", Weight: 3}},
				total: cores(20),
				groups: []Group{
					grp("ns/big", "a", 0, cores(10)), grp("ns/small", "a", 1, cores(1)),
					grp("ns/b", "b", 2, cores(8)), grp("ns/b2", "b", 3, cores(8)),
				},
			},
			// a deserves 5 and b 15: big exceeds a's share alone and is at the
			// head; small is then over a's share.
			admitted: []string{"ns/big", "ns/b"},
			waived:   "ns/big",
			messages: map[string]string{
				"ns/small": "queue a: cpu request 1 exceeds remaining deserved share 0",
				"ns/b2":    "queue b: cpu request 8 exceeds remaining deserved share 7",
			},
		},
		{
			name: "head exception: not for a group behind a refused head",
			w: world{
				specs: []Spec{{Name: "a"}, {Name: "b"}},
				total: resources.List{resources.CPU: 16000, "nvidia.com/gpu": 1},
				used:  resources.List{"nvidia.com/gpu": 1},
				groups: []Group{
					grp("ns/head", "a", 0, gpu(1)),
					grp("ns/big", "a", 1, cores(10)),
					grp("ns/b", "b", 2, cores(8)),
				},
			},
			admitted: []string{"ns/b"},
			messages: map[string]string{
				"ns/head": "cluster: nvidia.com/gpu request 1 exceeds idle 0",
				"ns/big":  "queue a: cpu request 10 exceeds remaining deserved share 8",
			},
		},
		{
			name: "head exception: the other checks still hold",
			w: world{
				specs:  []Spec{{Name: "a", Capability: cores(9)}, {Name: "b"}},
				total:  cores(16),
				usage:  map[string]Usage{"a": {Allocated: cores(1)}},
				groups: []Group{grp("ns/big", "a", 0, cores(9)), grp("ns/b", "b", 1, cores(8))},
			},
			admitted: []string{"ns/b"},
			messages: map[string]string{"ns/big": "queue a: cpu request 9 exceeds remaining capability 8"},
		},
		{
			name: "a request that can never fit the queue is reported as such and does not block",
			w: world{
				specs:  []Spec{{Name: "q", Capability: cores(8)}},
				total:  cores(16),
				groups: []Group{grp("ns/huge", "q", 0, cores(20)), grp("ns/ok", "q", 1, cores(1))},
			},
			admitted: []string{"ns/ok"},
			messages: map[string]string{"ns/huge": "queue q: cpu request 20 exceeds capability 8"},
		},
		{
			name: "a request that can never fit an ancestor",
			w: world{
				specs:  []Spec{{Name: "org", Capability: cores(4)}, {Name: "a", Parent: "org", Capability: cores(6)}},
				total:  cores(16),
				groups: []Group{grp("ns/huge", "a", 0, cores(5))},
			},
			messages: map[string]string{"ns/huge": "queue org: cpu request 5 exceeds capability 4"},
		},
		{
			name: "the second resource of a request is the one that does not fit",
			w: world{
				specs:  []Spec{{Name: "q", Capability: resources.List{"memory": 100}}},
				total:  resources.List{resources.CPU: 16000, "memory": 1000},
				usage:  map[string]Usage{"q": {Allocated: resources.List{"memory": 90}}},
				groups: []Group{grp("ns/g", "q", 0, resources.List{resources.CPU: 1000, "memory": 20})},
			},
			messages: map[string]string{"ns/g": "queue q: memory request 20 exceeds remaining capability 10"},
		},
		{
			name: "a request that can never fit the cluster",
			w: world{
				specs:  []Spec{{Name: "q"}},
				total:  resources.List{resources.CPU: 16000, "nvidia.com/gpu": 4},
				groups: []Group{grp("ns/huge", "q", 0, gpu(8)), grp("ns/none", "q", 1, resources.List{"example.com/fpga": 1})},
				opts:   Options{OvercommitFactor: 1.5},
			},
			messages: map[string]string{
				"ns/huge": "queue q: nvidia.com/gpu request 8 exceeds capability 4",
				"ns/none": "cluster: example.com/fpga request 1 exceeds total allocatable 0 (with overcommit)",
			},
		},
		{
			name: "an empty request is always admitted into an open queue",
			w: world{
				specs:  []Spec{{Name: "q", Capability: cores(0)}},
				total:  nil,
				groups: []Group{grp("ns/nothing", "q", 0, nil), grp("ns/zero", "q", 1, resources.List{"cpu": 0, "memory": -1})},
			},
			admitted: []string{"ns/nothing", "ns/zero"},
		},
		{
			name: "within a queue: priority, then creation time, then key",
			w: world{
				specs: []Spec{{Name: "q"}},
				total: cores(16),
				groups: []Group{
					grp("ns/c-old", "q", 0, cores(1)),
					{Key: k("ns/urgent"), Queue: "q", Priority: 10, Created: t0.Add(time.Hour), Request: cores(1), Members: 1, MinMember: 1},
					grp("ns/b-same", "q", 5, cores(1)),
					grp("ns/a-same", "q", 5, cores(1)),
				},
			},
			admitted: []string{"ns/urgent", "ns/c-old", "ns/a-same", "ns/b-same"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, res, _ := tt.w.run()
			if tt.admitted != nil {
				if got := admittedKeys(res); !reflect.DeepEqual(got, tt.admitted) {
					t.Errorf("admitted %v, want %v", got, tt.admitted)
				}
			}
			for _, o := range res.Admitted {
				if !o.Decision.Admitted || o.Decision.Check != CheckNone {
					t.Errorf("admitted %s with decision %+v", o.Group.Key, o.Decision)
				}
				if _, ok := p.Decision(o.Group.Key); ok {
					t.Errorf("admitted group %s is still pending", o.Group.Key)
				}
				if o.Decision.HeadException != (short(o.Group.Key) == tt.waived) {
					t.Errorf("admitted %s with HeadException %v", o.Group.Key, o.Decision.HeadException)
				}
			}
			for key, want := range tt.messages {
				d, ok := p.Decision(k(key))
				if !ok {
					t.Errorf("group %s is not pending", key)
					continue
				}
				if d.Admitted || d.Message() != want {
					t.Errorf("Decision(%s).Message() = %q, want %q", key, d.Message(), want)
				}
			}
			for key, want := range tt.checks {
				if d, _ := p.Decision(k(key)); d.Check != want {
					t.Errorf("Decision(%s).Check = %v, want %v", key, d.Check, want)
				}
			}
			if p.Len()+len(res.Admitted) != len(tt.w.groups) {
				t.Errorf("%d pending + %d admitted, want %d groups", p.Len(), len(res.Admitted), len(tt.w.groups))
			}
		})
	}
}

func TestAdmitWeightedEndState(t *testing.T) {
	w := world{
		specs:  []Spec{{Name: "light", Weight: 1}, {Name: "heavy", Weight: 3}},
		total:  cores(16),
		groups: append(many("light", 16, cores(1)), many("heavy", 16, cores(1))...),
	}
	_, res, s := w.run()
	if got, want := countByQueue(res), map[string]int{"light": 4, "heavy": 12}; !reflect.DeepEqual(got, want) {
		t.Fatalf("admitted per queue %v, want %v", got, want)
	}
	// Admit recorded the admissions as inflight in the shares.
	if q, _ := s.Get("heavy"); !q.Inflight.Equal(cores(12)) {
		t.Errorf("heavy inflight after the pass = %v, want 12 cpu", q.Inflight)
	}
	if got := s.inflightAll[s.index[resources.CPU]]; got != 16000 {
		t.Errorf("cluster inflight = %d, want 16000", got)
	}
}

func TestAdmitRoundRobin(t *testing.T) {
	// 4 of 10 cpus are used outside any queue, so the cluster check (6 idle)
	// binds before either queue reaches its deserved 5: the queues take turns.
	w := world{
		specs:  []Spec{{Name: "a"}, {Name: "b"}},
		total:  cores(10),
		used:   cores(4),
		groups: append(many("a", 10, cores(1)), many("b", 10, cores(1))...),
		opts:   Options{OvercommitFactor: 1},
	}
	_, res, _ := w.run()
	if got, want := admittedKeys(res), []string{"a/0", "b/0", "a/1", "b/1", "a/2", "b/2"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("admission order %v, want %v", got, want)
	}

	t.Run("a higher-priority queue goes first", func(t *testing.T) {
		w := w
		w.specs = []Spec{{Name: "a"}, {Name: "b", Priority: 1}}
		_, res, _ := w.run()
		if got, want := countByQueue(res), map[string]int{"b": 5, "a": 1}; !reflect.DeepEqual(got, want) {
			t.Fatalf("admitted per queue %v, want %v", got, want)
		}
		if res.Admitted[0].Group.Queue != "b" {
			t.Errorf("first admission in %s, want b", res.Admitted[0].Group.Queue)
		}
	})

	t.Run("the queue with the lower share goes first", func(t *testing.T) {
		w := w
		w.usage = map[string]Usage{"a": {Allocated: cores(2)}}
		w.used = cores(4) // a's 2 included
		_, res, _ := w.run()
		// a deserves 5 and holds 2: b goes first until it catches up.
		if got, want := admittedKeys(res)[:3], []string{"b/0", "b/1", "a/0"}; !reflect.DeepEqual(got, want) {
			t.Fatalf("admission order %v, want it to start with %v", admittedKeys(res), want)
		}
	})

	t.Run("a large group makes its queue wait for the others", func(t *testing.T) {
		w := world{
			specs:  []Spec{{Name: "a"}, {Name: "b"}},
			total:  cores(16),
			groups: append([]Group{grp("a/big", "a", -1, cores(4))}, append(many("a", 4, cores(1)), many("b", 8, cores(1))...)...),
		}
		_, res, _ := w.run()
		got := admittedKeys(res)
		if got[0] != "a/big" || got[1] != "b/0" || got[2] != "b/1" || got[3] != "b/2" || got[4] != "b/3" {
			t.Errorf("admission order %v: b should take four turns after a's 4-cpu group", got)
		}
	})
}

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

func TestOptions(t *testing.T) {
	for _, f := range []float64{0, 1, 1.2, 3} {
		if err := (Options{OvercommitFactor: f}).Validate(); err != nil {
			t.Errorf("Validate(%v) = %v", f, err)
		}
	}
	for _, f := range []float64{0.5, -1, nan(), inf()} {
		if err := (Options{OvercommitFactor: f}).Validate(); err == nil {
			t.Errorf("Validate(%v) = nil", f)
		}
		if got := (Options{OvercommitFactor: f}).withDefaults().OvercommitFactor; got != 1 {
			t.Errorf("withDefaults(%v) factor = %v", f, got)
		}
	}
	o := Options{}.withDefaults()
	if o.OvercommitFactor != 1 || o.StarvationThreshold != DefaultStarvationThreshold || o.Lookahead != DefaultLookahead {
		t.Errorf("defaults %+v", o)
	}
}

func TestScale(t *testing.T) {
	tests := []struct {
		v    int64
		f    float64
		want int64
	}{
		{4000, 1, 4000}, {4000, 1.5, 6000}, {3, 1.2, 3}, {10, 1.25, 12}, {0, 2, 0}, {-5, 2, -5},
		{1 << 62, 4, 1<<63 - 1}, {1<<63 - 1, 1.0000001, 1<<63 - 1},
	}
	for _, tt := range tests {
		if got := scale(tt.v, tt.f); got != tt.want {
			t.Errorf("scale(%d, %v) = %d, want %d", tt.v, tt.f, got, tt.want)
		}
	}
}

func TestDecisionMessages(t *testing.T) {
	tests := []struct {
		d    Decision
		want string
	}{
		{Decision{Admitted: true, Queue: "q"}, "admitted to queue q"},
		{Decision{Admitted: true, HeadException: true, Queue: "q"}, "admitted to queue q at its head, although the request exceeds the deserved share"},
		{Decision{Queue: "q"}, "waiting for admission to queue q"},
		{Decision{Check: CheckCapability, Queue: "q", Resource: "cpu", Request: 1500, Available: 250}, "queue q: cpu request 1500m exceeds remaining capability 250m"},
		{Decision{Check: CheckCapability, Queue: "q", Resource: "memory", Request: 10, Available: 8, Permanent: true}, "queue q: memory request 10 exceeds capability 8"},
		{Decision{Check: CheckFairness, Queue: "q", Resource: "cpu", Request: 3000, Available: 1000}, "queue q: cpu request 3 exceeds remaining deserved share 1"},
		{Decision{Check: CheckCluster, Resource: "cpu", Request: 3000, Available: 0}, "cluster: cpu request 3 exceeds idle 0"},
		{Decision{Check: CheckCluster, Resource: "cpu", Request: 3000, Available: 2000, Permanent: true}, "cluster: cpu request 3 exceeds total allocatable 2 (with overcommit)"},
		{Decision{Check: CheckQuota, Detail: "exceeded quota"}, "exceeded quota"},
		{Decision{Check: CheckQuota}, "resource quota exceeded"},
		{Decision{Check: CheckMembers, Members: 1, MinMember: 4}, "waiting for members: 1/4"},
		{Decision{Check: CheckQueueMissing, Queue: "x"}, "queue x not found"},
		{Decision{Check: CheckQueueClosed, Queue: "x"}, "queue x is closed"},
		{Decision{Check: CheckQueueBroken, Queue: "x", Detail: "parent cycle: x -> x"}, "queue x: parent cycle: x -> x"},
		{Decision{Check: CheckReserved, Queue: "q", Behind: k("ns/a"), Since: t0}, "queue q is reserved for pg:ns/a, at its head since 2030-01-01T00:00:00Z"},
		{Decision{Check: CheckWaiting, Queue: "q", Behind: k("ns/a")}, "queue q: waiting behind pg:ns/a"},
		{Decision{Check: Check(200)}, "Check(200)"},
	}
	for _, tt := range tests {
		if got := tt.d.Message(); got != tt.want {
			t.Errorf("%+v.Message() = %q, want %q", tt.d, got, tt.want)
		}
	}
	for c := CheckNone; c <= CheckWaiting; c++ {
		if s := c.String(); s == "" || strings.HasPrefix(s, "Check(") {
			t.Errorf("Check %d has no name", c)
		}
	}
}

func nan() float64 { return math.NaN() }
func inf() float64 { return math.Inf(1) }

// With a reclaim action, a queue within its deserved share is admitted into
// a cluster that a reclaimable queue fills beyond its own share, up to what
// reclaim can take back; without it, only up to the overcommitted idle room.
func TestAdmitReclaimHeadroom(t *testing.T) {
	cpu := func(v int64) resources.List { return resources.List{resources.CPU: v} }
	for _, tc := range []struct {
		name        string
		reclaim     bool
		reclaimable bool
		guarantee   resources.List
		want        int
	}{
		{name: "no reclaim: idle room only", reclaim: false, reclaimable: true, want: 3},
		{name: "reclaim: up to the other queue's excess", reclaim: true, reclaimable: true, want: 8},
		{name: "reclaim: a non-reclaimable queue's excess does not count", reclaim: true, reclaimable: false, want: 3},
		{name: "reclaim: a guarantee caps the others (real capability 2)", reclaim: true, reclaimable: true, guarantee: cpu(14000), want: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := world{
				specs: []Spec{
					{Name: "a", Weight: 1, Reclaimable: tc.reclaimable, Guarantee: tc.guarantee},
					{Name: "b", Weight: 1, Reclaimable: true},
				},
				total:  cpu(16000),
				used:   cpu(16000),
				usage:  map[string]Usage{"a": {Allocated: cpu(16000)}},
				groups: many("b", 8, cpu(1000)),
				opts:   Options{OvercommitFactor: 1.2, Reclaim: tc.reclaim},
			}
			_, res, _ := w.run()
			if got := countByQueue(res)["b"]; got != tc.want {
				t.Fatalf("admitted %d of b's groups, want %d (refused: %+v)", got, tc.want, res.Refused)
			}
		})
	}
}

// With a preemption action, a queue at its share admits a group of higher
// priority than groups it holds, up to what those hold; equal priority is
// refused as before.
func TestAdmitPreemptibleHeadroom(t *testing.T) {
	cpu := func(v int64) resources.List { return resources.List{resources.CPU: v} }
	held := map[int32]int64{1: 2000, 5: 2000} // priority -> cpu held in queue q
	preemptible := func(queue string, prio int32) resources.List {
		out := resources.List{}
		for p, v := range held {
			if queue == "q" && p < prio {
				out[resources.CPU] += v
			}
		}
		return out
	}
	prio := func(g Group, p int32) Group { g.Priority = p; return g }
	for _, tc := range []struct {
		name   string
		groups []Group
		pre    bool
		want   []string
	}{
		{name: "no preemption: nothing", pre: false,
			groups: []Group{prio(grp("q/hi", "q", 0, cpu(1000)), 10)}, want: []string{}},
		{name: "equal priority: nothing", pre: true,
			groups: []Group{prio(grp("q/eq", "q", 0, cpu(1000)), 1)}, want: []string{}},
		{name: "above priority 1: up to 2 cpu", pre: true,
			groups: []Group{prio(grp("q/a", "q", 0, cpu(1000)), 3), prio(grp("q/b", "q", 1, cpu(1000)), 3), prio(grp("q/c", "q", 2, cpu(1000)), 3)},
			want:   []string{"q/a", "q/b"}},
		{name: "above both: up to 4 cpu", pre: true,
			groups: []Group{prio(grp("q/big", "q", 0, cpu(4000)), 10)}, want: []string{"q/big"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := world{
				specs:  []Spec{{Name: "q", Weight: 1}},
				total:  cpu(4000),
				used:   cpu(4000),
				usage:  map[string]Usage{"q": {Allocated: cpu(4000)}},
				groups: tc.groups,
			}
			if tc.pre {
				w.opts.Preemptible = preemptible
			}
			_, res, _ := w.run()
			if got := admittedKeys(res); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("admitted %v, want %v", got, tc.want)
			}
		})
	}
}

// A queue above its deserved share (not reclaimable, so nobody takes its
// excess) still runs its high-priority work: a group whose request what
// preemption frees in its queue covers takes the lower-priority pods'
// place, and the queue does not grow. Before, fairness refused it for good
// ("remaining deserved share 0"; the randomized harness, seed 4).
func TestAdmitPreemptorOfQueueAboveItsShare(t *testing.T) {
	cpu := func(v int64) resources.List { return resources.List{resources.CPU: v} }
	for _, tc := range []struct {
		name        string
		request     int64
		freeOnlyFor time.Duration
		want        []string
	}{
		{name: "covered by lower priorities: admitted", request: 7000, want: []string{"q/hi"}},
		{name: "more than lower priorities hold: refused", request: 30000, want: []string{}},
		// Its last plan found no victims: until FreeRoomUntil it counts
		// no eviction room, so it does not hold the queue's room for a
		// plan that cannot be made.
		{name: "free room only after a failed plan: refused", request: 7000, freeOnlyFor: time.Minute, want: []string{}},
		{name: "free room only no longer: admitted", request: 7000, freeOnlyFor: -time.Second, want: []string{"q/hi"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := grp("q/hi", "q", 0, cpu(tc.request))
			g.Priority = 1000
			if tc.freeOnlyFor != 0 {
				g.FreeRoomUntil = t0.Add(tc.freeOnlyFor)
			}
			w := world{
				specs: []Spec{{Name: "q", Weight: 1, Reclaimable: false}, {Name: "other", Weight: 8, Reclaimable: true}},
				total: cpu(64000),
				used:  cpu(64000),
				usage: map[string]Usage{
					"q":     {Allocated: cpu(35000)},
					"other": {Allocated: cpu(29000), Pending: cpu(60000)},
				},
				groups: []Group{g},
				opts: Options{OvercommitFactor: 1, Preemptible: func(queue string, prio int32) resources.List {
					if queue == "q" && prio > 0 {
						return cpu(29000)
					}
					return nil
				}},
			}
			_, res, _ := w.run()
			if got := admittedKeys(res); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("admitted %v, want %v (refused: %+v)", got, tc.want, res.Refused)
			}
			// The cluster is full: whatever is admitted depends on the
			// preemption plan, and says so.
			for _, o := range res.Admitted {
				if !o.Decision.OnPlan {
					t.Errorf("%s admitted into a full cluster without OnPlan", o.Group.Key)
				}
			}
		})
	}
}

// TestAdmitOnFreeRoomIsNotOnPlan: a group admitted on free room does not
// depend on any plan (Decision.OnPlan), even where preemption could free room.
func TestAdmitOnFreeRoomIsNotOnPlan(t *testing.T) {
	cpu := func(v int64) resources.List { return resources.List{resources.CPU: v} }
	g := grp("q/hi", "q", 0, cpu(2000))
	g.Priority = 1000
	w := world{
		specs:  []Spec{{Name: "q", Weight: 1}},
		total:  cpu(16000),
		used:   cpu(4000),
		usage:  map[string]Usage{"q": {Allocated: cpu(4000)}},
		groups: []Group{g},
		opts:   Options{OvercommitFactor: 1, Preemptible: func(string, int32) resources.List { return cpu(4000) }},
	}
	_, res, _ := w.run()
	if len(res.Admitted) != 1 || res.Admitted[0].Decision.OnPlan {
		t.Errorf("admitted %+v, want q/hi admitted on free room, not on a plan", res.Admitted)
	}
}
