package queue

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/caldera-sched/caldera/pkg/resources"
)

// bytesIn hands out fuzz bytes; once they run out it yields zeros.
type bytesIn struct{ b []byte }

func (in *bytesIn) byte() byte {
	if len(in.b) == 0 {
		return 0
	}
	c := in.b[0]
	in.b = in.b[1:]
	return c
}

// amount decodes a non-negative amount spread over many magnitudes.
func (in *bytesIn) amount() int64 {
	v := uint64(in.byte()) | uint64(in.byte())<<8
	shift := in.byte() % 64
	if shift > 0 && v > math.MaxInt64>>shift {
		return math.MaxInt64
	}
	return int64(v << shift)
}

// small decodes an amount in 0..255 x unit.
func (in *bytesIn) small(unit int64) int64 { return int64(in.byte()) * unit }

var fuzzRes = []string{resources.CPU, "nvidia.com/gpu"}

// decodeQueues builds up to 8 queues, a cluster total and usage from data.
func decodeQueues(in *bytesIn) ([]Spec, resources.List, map[string]Usage) {
	n := 1 + int(in.byte())%8
	total := resources.List{resources.CPU: in.small(500), "nvidia.com/gpu": int64(in.byte() % 32)}
	specs := make([]Spec, n)
	usage := map[string]Usage{}
	list := func(flags byte, unit int64) resources.List {
		l := resources.List{}
		for j, r := range fuzzRes {
			if flags&(1<<j) != 0 {
				u := unit
				if r != resources.CPU {
					u = 1
				}
				l[r] = in.small(u)
			}
		}
		return l
	}
	for i := range specs {
		s := Spec{Name: name(i), Weight: int32(in.byte()%8) + 1}
		s.Reclaimable = s.Weight%2 == 1 // read only when Options.Reclaim is on
		switch p := int(in.byte()) % (n + 4); {
		case p < 3:
		case p == 3:
			s.Parent = "ghost"
		default:
			s.Parent = name(p - 4) // may be itself or form a cycle
		}
		flags := in.byte()
		if flags&1 != 0 {
			s.Capability = list(flags>>1, 1000)
		}
		if flags&8 != 0 {
			s.Guarantee = list(flags>>4, 100)
		}
		if flags&64 != 0 {
			s.State = StateClosed
		}
		if flags&128 != 0 {
			s.Weight = int32(in.byte()) * 300
		}
		specs[i] = s
		u := in.byte()
		usage[s.Name] = Usage{Allocated: list(u, 250), Inflight: list(u>>2, 250), Pending: list(u>>4, 500)}
	}
	return specs, total, usage
}

// guaranteesFit reports whether the guarantees nest: top-level ones fit in the
// total, and every parent's children's fit in the parent's.
func guaranteesFit(tr *Tree, total resources.List) bool {
	geff := func(i int, r string) int64 {
		g := nn(tr.specs[i].Guarantee[r])
		if c, ok := tr.specs[i].Capability[r]; ok {
			g = min(g, nn(c))
		}
		return g
	}
	for _, r := range fuzzRes {
		var sum int64
		for _, i := range tr.top {
			sum += geff(i, r)
		}
		if sum > total[r] {
			return false
		}
		for _, p := range tr.order {
			var sum int64
			for _, c := range tr.children[p] {
				sum += geff(c, r)
			}
			if sum > geff(p, r) {
				return false
			}
		}
	}
	return true
}

func checkShares(t *testing.T, tr *Tree, total resources.List, s *Shares) {
	t.Helper()
	fit := guaranteesFit(tr, total)
	at := func(v []int64, i int, r string) int64 { return v[i*s.r+s.index[r]] }
	for _, r := range fuzzRes {
		if _, ok := s.index[r]; !ok {
			continue
		}
		var top int64
		for _, i := range tr.top {
			top += at(s.deserved, i, r)
		}
		if top > nn(total[r]) {
			t.Fatalf("%s: top-level deserved add up to %d > total %d", r, top, total[r])
		}
		for i, spec := range tr.specs {
			d := at(s.deserved, i, r)
			if tr.problems[i] != nil {
				if d != 0 {
					t.Fatalf("broken queue %s deserves %s %d", spec.Name, r, d)
				}
				continue
			}
			if d > at(s.demand, i, r) {
				t.Fatalf("%s: %s deserves %d > demand %d", spec.Name, r, d, at(s.demand, i, r))
			}
			if d > at(s.realCap, i, r) {
				t.Fatalf("%s: %s deserves %d > real capability %d", spec.Name, r, d, at(s.realCap, i, r))
			}
			for a := i; a >= 0; a = tr.parent[a] {
				if c, ok := tr.specs[a].Capability[r]; ok && d > nn(c) {
					t.Fatalf("%s: %s deserves %d > capability %d of %s", spec.Name, r, d, c, tr.specs[a].Name)
				}
			}
			if kids := tr.children[i]; len(kids) > 0 {
				sum := at(s.selfDeserved, i, r)
				for _, c := range kids {
					sum += at(s.deserved, c, r)
				}
				if sum > d {
					t.Fatalf("%s: children and own groups deserve %d > %s's %d", r, sum, spec.Name, d)
				}
			}
			if fit {
				g := nn(spec.Guarantee[r])
				if c, ok := spec.Capability[r]; ok {
					g = min(g, nn(c))
				}
				if want := min(g, at(s.demand, i, r)); d < want {
					t.Fatalf("%s: %s deserves %d < min(guarantee, demand) %d", spec.Name, r, d, want)
				}
			}
		}
	}
}

func FuzzDivide(f *testing.F) {
	f.Add([]byte{1, 32, 0, 0, 0, 0, 0x33, 2, 0, 0, 0x33}, uint8(1), uint8(2))
	f.Add([]byte{3, 32, 4, 0, 0, 0x09, 0x0f, 40, 0x30, 1, 4, 0, 20, 0x33, 2, 6, 0x0b, 10, 20, 0x3f}, uint8(2), uint8(5))
	f.Add([]byte{2, 100, 0, 0, 5, 0, 0xff, 0, 6, 0, 0xff}, uint8(0), uint8(1))
	f.Add([]byte{5, 10, 3, 2, 9, 0x19, 0x0f, 8, 0xff, 3, 3, 0x48, 0x30, 0x70, 0, 4, 0xff, 1, 0, 0x80, 9, 0x33, 1, 5, 0, 0x33, 7, 3, 0x8a, 1, 2, 200, 0xff}, uint8(3), uint8(7))
	f.Fuzz(func(t *testing.T, data []byte, pick, bump uint8) {
		specs, total, usage := decodeQueues(&bytesIn{data})
		tr := BuildTree(specs)
		s := Divide(tr, total, usage)
		checkShares(t, tr, total, s)

		// Raising one queue's weight never lowers its deserved share.
		k := int(pick) % len(specs)
		more := slices.Clone(specs)
		more[k].Weight = min(more[k].EffectiveWeight()+1+int32(bump), MaxWeight)
		s2 := Divide(BuildTree(more), total, usage)
		before, _ := s.Get(specs[k].Name)
		after, _ := s2.Get(specs[k].Name)
		for r, v := range before.Deserved {
			if after.Deserved[r] < v {
				t.Fatalf("weight %d -> %d of %s lowered its %s share %d -> %d", specs[k].EffectiveWeight(), more[k].Weight, specs[k].Name, r, v, after.Deserved[r])
			}
		}
	})
}

func FuzzBuildTree(f *testing.F) {
	f.Add([]byte{0, 0, 0})
	f.Add([]byte{1, 0})
	f.Add([]byte{2, 3, 4, 1})
	f.Add([]byte{255, 1, 2, 3, 0, 7, 7})
	f.Fuzz(func(t *testing.T, parents []byte) {
		if len(parents) > 64 {
			parents = parents[:64]
		}
		n := len(parents)
		specs := make([]Spec, n)
		for i, p := range parents {
			specs[i] = Spec{Name: name(i)}
			switch {
			case p == 255:
				specs[i].Parent = "ghost"
			case int(p) < n:
				specs[i].Parent = name(int(p))
			}
		}
		tr := BuildTree(specs)
		for i := range n {
			// Reference: walk up at most n steps.
			cur, seen, ok := i, map[int]bool{}, false
			onCycle := false
			for steps := 0; steps <= n; steps++ {
				p := parents[cur]
				if p == 255 {
					break
				}
				if int(p) >= n {
					ok = true
					break
				}
				if seen[cur] {
					break
				}
				seen[cur] = true
				cur = int(p)
				if cur == i {
					onCycle = true
					break
				}
			}
			prob := tr.Problem(name(i))
			if ok != (prob == nil) {
				t.Fatalf("queue %s: reaches the root %v, problem %v", name(i), ok, prob)
			}
			if onCycle != (prob != nil && prob.Kind == ProblemCycle) {
				t.Fatalf("queue %s: on a cycle %v, problem %v", name(i), onCycle, prob)
			}
			if ok {
				anc := tr.Ancestors(name(i))
				if len(anc) > n {
					t.Fatalf("queue %s: %d ancestors", name(i), len(anc))
				}
				if len(anc) > 0 && !tr.specs[tr.index[anc[len(anc)-1]]].TopLevel() {
					t.Fatalf("queue %s: ancestors %v do not end at the root", name(i), anc)
				}
				parent := ""
				if len(anc) > 0 {
					parent = anc[0]
				}
				if !slices.Contains(tr.Children(parent), name(i)) {
					t.Fatalf("queue %s is not among its parent %q's children", name(i), parent)
				}
			}
		}
		if len(tr.order) != n-len(tr.Problems()) {
			t.Fatalf("%d healthy queues ordered, want %d", len(tr.order), n-len(tr.Problems()))
		}
	})
}

func FuzzAdmit(f *testing.F) {
	f.Add([]byte{2, 32, 4, 0, 0, 0, 0x33, 1, 0, 0, 0x10}, []byte{0, 4, 0, 1, 0, 1, 1, 8, 0, 0, 0, 0}, uint8(0), uint8(0))
	f.Add([]byte{3, 20, 2, 0, 0, 0x03, 8, 0x30, 1, 4, 0, 0x09, 4, 8, 0x30, 2, 3, 0x41, 0x30}, []byte{0, 8, 1, 0, 1, 1, 2, 1, 0, 0, 2, 30, 0, 2, 3, 0, 1, 5, 0, 0}, uint8(50), uint8(3))
	f.Add([]byte{1, 10, 0, 0, 0}, []byte{0, 3, 0, 0, 0, 0, 3, 0, 0, 0, 0, 3, 0, 0, 0, 0, 3, 0, 0, 0}, uint8(0), uint8(255))
	f.Fuzz(func(t *testing.T, qdata, gdata []byte, over, knobs uint8) {
		specs, total, usage := decodeQueues(&bytesIn{qdata})
		for name, u := range usage {
			u.Pending = nil // comes from the Pending
			usage[name] = u
		}
		tr := BuildTree(specs)
		in := &bytesIn{gdata}
		used := resources.List{resources.CPU: in.small(250), "nvidia.com/gpu": int64(in.byte() % 8)}
		p := NewPending()
		count := 0
		for i := 0; len(in.b) > 0 && i < 60; i++ {
			q := int(in.byte()) % (len(specs) + 1)
			qname := "missing"
			if q < len(specs) {
				qname = specs[q].Name
			}
			req := resources.List{resources.CPU: in.small(250)}
			if b := in.byte(); b%4 == 0 {
				req["nvidia.com/gpu"] = int64(b / 4 % 5)
			}
			flags := in.byte()
			p.Set(Group{
				Key:       k(itoa(i)),
				Queue:     qname,
				Priority:  int32(flags % 3),
				Created:   t0.Add(time.Duration(in.byte()) * time.Second),
				Request:   req,
				Members:   int32(flags>>2) % 3,
				MinMember: 1,
			})
			count++
		}
		opts := Options{
			OvercommitFactor:    1 + float64(over%4)/4,
			Lookahead:           int(knobs%6) - 1,
			StarvationThreshold: time.Duration(knobs>>3) * 30 * time.Second,
		}
		if over >= 128 {
			opts.OvercommitFactor = 1
		}
		if over&64 != 0 {
			opts.Reclaim, opts.Lend = true, true
		}
		admitted := 0
		for pass := range 3 {
			u := map[string]Usage{}
			for name, x := range usage {
				u[name] = x
			}
			for _, q := range p.Queues() {
				x := u[q]
				x.Pending = p.PendingRequest(q)
				u[q] = x
			}
			s := Divide(tr, total, u)
			res := p.Admit(s, Cluster{Allocatable: total, Used: used}, opts, t0.Add(time.Duration(pass)*200*time.Second))
			checkAdmitted(t, tr, total, used, opts, s, res)
			admitted += len(res.Admitted)
			// The caller records admissions as inflight.
			for _, o := range res.Admitted {
				x := usage[o.Group.Queue]
				x.Inflight = x.Inflight.Clone().Add(o.Group.Request)
				usage[o.Group.Queue] = x
			}
			if p.Len()+admitted != count {
				t.Fatalf("%d pending + %d admitted != %d groups", p.Len(), admitted, count)
			}
		}
	})
}

// fuzzLent counts loans the fuzzer made (TestFuzzAdmitLends).
var fuzzLent int

// checkAdmitted verifies a pass's invariants on the Shares it updated.
func checkAdmitted(t *testing.T, tr *Tree, total, used resources.List, o Options, s *Shares, res *Result) {
	t.Helper()
	requested := map[int]map[string]bool{} // per queue node: resources requested by admitted groups below it
	clusterReq := map[string]bool{}
	waived := map[int]bool{} // queue nodes below which the head exception admitted a group
	for _, out := range res.Admitted {
		if out.Decision.Lent {
			fuzzLent++
			// A loan goes above the deserved share by design; it is made
			// only to a reclaimable queue, and never to a queue with a
			// group within its share refused for room.
			if spec, _ := tr.Spec(out.Group.Queue); !spec.Reclaimable || !o.Lend {
				t.Fatalf("lent %s to queue %q (reclaimable %v, Lend %v)", out.Group.Key, out.Group.Queue, spec.Reclaimable, o.Lend)
			}
			for _, r := range res.Refused {
				if c := r.Decision.Check; (c == CheckCluster || c == CheckPlacement) && !r.Decision.Permanent && r.Group.Queue == out.Group.Queue {
					t.Fatalf("lent %s while %s waits for room: %s", out.Group.Key, r.Group.Key, r.Decision.Message())
				}
			}
		}
		if out.Decision.HeadException || out.Decision.Lent {
			for l := tr.index[out.Group.Queue]; l >= 0; l = tr.parent[l] {
				waived[l] = true
			}
		}
	}
	for _, out := range res.Admitted {
		g := out.Group
		if !g.Ready() {
			t.Fatalf("admitted %s without its members", g.Key)
		}
		spec, ok := tr.Spec(g.Queue)
		if !ok || !tr.Healthy(g.Queue) || !spec.Open() {
			t.Fatalf("admitted %s into queue %q (exists %v, healthy %v, open %v)", g.Key, g.Queue, ok, tr.Healthy(g.Queue), spec.Open())
		}
		for l := tr.index[g.Queue]; l >= 0; l = tr.parent[l] {
			if requested[l] == nil {
				requested[l] = map[string]bool{}
			}
			for r, v := range g.Request {
				if v > 0 {
					requested[l][r] = true
					clusterReq[r] = true
				}
			}
		}
	}
	if o.Reclaim {
		// Reclaim admits on room its plans will free (the capability,
		// fair-share and cluster checks count it), so the sums below hold
		// only after the victims leave. Loans come last in a pass and only on
		// idle room: after the last one, the cluster's used + inflight fits
		// allocatable x overcommit on every resource a loan asked for.
		for _, out := range res.Admitted {
			if !out.Decision.Lent {
				continue
			}
			for r, v := range out.Group.Request {
				if v <= 0 {
					continue
				}
				if got, lim := satAdd(nn(used[r]), s.inflightAll[s.index[r]]), scale(nn(total[r]), o.withDefaults().OvercommitFactor); got > lim {
					t.Fatalf("lent %s: cluster %s used + inflight %d > %d", out.Group.Key, r, got, lim)
				}
			}
		}
		requested = nil
	}
	for l, rs := range requested {
		for r := range rs {
			j := s.index[r]
			got := satAdd(s.alloc[l*s.r+j], s.inflight[l*s.r+j])
			if lim := s.realCap[l*s.r+j]; got > lim {
				t.Fatalf("queue %s: %s allocated + inflight %d > real capability %d", tr.specs[l].Name, r, got, lim)
			}
			if lim := s.deserved[l*s.r+j]; !waived[l] && got > lim {
				t.Fatalf("queue %s: %s allocated + inflight %d > deserved %d without the head exception", tr.specs[l].Name, r, got, lim)
			}
		}
	}
	if o.OvercommitFactor == 1 && !o.Reclaim {
		for r := range clusterReq {
			if got := satAdd(nn(used[r]), s.inflightAll[s.index[r]]); got > nn(total[r]) {
				t.Fatalf("cluster: %s used + inflight %d > allocatable %d", r, got, total[r])
			}
		}
	}
	for _, out := range res.Refused {
		if out.Decision.Admitted || out.Decision.Check == CheckNone || out.Decision.Message() == "" {
			t.Fatalf("refused %s with decision %+v", out.Group.Key, out.Decision)
		}
	}
	adm, ref := 0, 0
	for _, q := range res.Queues {
		adm += q.Admitted
		ref += q.Refused
	}
	if adm != len(res.Admitted) || ref != len(res.Refused) {
		t.Fatalf("queue outcomes count %d admitted, %d refused; result lists %d, %d", adm, ref, len(res.Admitted), len(res.Refused))
	}
}
