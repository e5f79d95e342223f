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
			name: "capability: capability of 4 admits one 3-cpu group and holds the second",
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
			name: "fair share: a gang short of members claims no share of idle room",
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
			name: "capability: allocated and earlier inflight count against the capability",
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
			name: "capability: a parent's capability caps its children",
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
			name: "capability: a sibling's guarantee is reserved even while it is idle",
			w: world{
				specs:  []Spec{{Name: "a"}, {Name: "b", Guarantee: cores(12)}},
				total:  cores(16),
				groups: many("a", 6, cores(1)),
			},
			admitted: []string{"a/0", "a/1", "a/2", "a/3"},
			messages: map[string]string{"a/4": "queue a: cpu request 1 exceeds remaining capability 0"},
		},
		{
			name: "fair share: weights 1 and 3 competing for 16 cpu of 1-cpu groups end at 4 and 12",
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
			name: "fair share: a queue without competitors may use everything up to its capability",
			w: world{
				specs:  []Spec{{Name: "solo", Capability: cores(10)}, {Name: "idle", Weight: 100}},
				total:  cores(16),
				groups: many("solo", 12, cores(1)),
			},
			messages: map[string]string{"solo/10": "queue solo: cpu request 1 exceeds remaining capability 0"},
		},
		{
			name: "fair share: a parent's deserved share binds its children",
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
			name: "cluster: overcommit 1.0: only idle resources admit",
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
			name: "cluster: overcommit 1.5 admits more",
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
			name: "cluster: every queue's inflight counts, even a deleted queue's",
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
			name: "cluster: only the resources the group requests are compared",
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
			name: "members: a group without enough members is not considered",
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
			name: "queue: a closed queue admits nothing",
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
			name: "queue: a missing queue",
			w: world{
				specs:  []Spec{{Name: "q"}},
				total:  cores(8),
				groups: []Group{grp("ns/a", "ghost", 0, cores(1))},
			},
			messages: map[string]string{"ns/a": "queue ghost not found"},
			checks:   map[string]Check{"ns/a": CheckQueueMissing},
		},
		{
			name: "queue: a queue with a tree problem",
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
			name: "quota: the quota callback refuses a namespace",
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

func nan() float64 { return math.NaN() }
func inf() float64 { return math.Inf(1) }

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
