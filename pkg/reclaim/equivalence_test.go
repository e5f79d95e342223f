package reclaim_test

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	. "github.com/caldera-sched/caldera/pkg/reclaim"
	"github.com/caldera-sched/caldera/pkg/resources"
)

// equivalenceInputs is how many random worlds TestDecideEquivalence
// decides; seed i builds world i, so a failure names a reproducible seed.
const equivalenceInputs = 600

var eqT0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// TestDecideEquivalence: Decide returns exactly what the exhaustive search
// it replaced returns (referenceDecide, the copy in reference_test.go):
// the same plan (mode, victims in order, node, placement), ok and reason,
// on random worlds of every shape the Input allows. Each world is built
// twice from its seed, so that neither side sees what the other may have
// written into its Input.
func TestDecideEquivalence(t *testing.T) {
	var plans = map[Mode]int{}
	wholeGang := 0
	for seed := range uint64(equivalenceInputs) {
		want, wantOK, wantWhy := referenceDecide(randomInput(seed))
		in := randomInput(seed)
		got, gotOK, gotWhy := Decide(in)
		if gotOK != wantOK || gotWhy != wantWhy || !reflect.DeepEqual(got, want) {
			t.Fatalf("seed %d (%d nodes, %d pods, %d members): Decide = %+v, %v, %q; reference = %+v, %v, %q",
				seed, len(in.Nodes), len(in.Pods), len(in.Preemptor.Members), got, gotOK, gotWhy, want, wantOK, wantWhy)
		}
		plans[got.Mode]++
		if gotOK && takesWholeGang(in, got) {
			wholeGang++
		}
	}
	// A few of BenchmarkDecide's worlds at a size where the bound skips
	// almost every node.
	for seed := range uint64(3) {
		r := rand.New(rand.NewPCG(seed, 0x1a26e))
		want, wantOK, wantWhy := referenceDecide(uniformInput(r, 1000))
		r = rand.New(rand.NewPCG(seed, 0x1a26e))
		got, gotOK, gotWhy := Decide(uniformInput(r, 1000))
		if gotOK != wantOK || gotWhy != wantWhy || !reflect.DeepEqual(got, want) {
			t.Fatalf("1000 nodes, seed %d: Decide = %+v, %v, %q; reference = %+v, %v, %q", seed, got, gotOK, gotWhy, want, wantOK, wantWhy)
		}
	}
	// The worlds must exercise the search, not only its early exits: a
	// generator that stopped producing plans would pass vacuously.
	t.Logf("%d worlds: %d reclaim plans, %d preempt plans (%d taking a whole gang), %d without a plan",
		equivalenceInputs, plans[Reclaim], plans[Preempt], wholeGang, plans[None])
	for _, m := range []Mode{Reclaim, Preempt, None} {
		if plans[m] < equivalenceInputs/10 {
			t.Errorf("only %d of %d worlds ended with mode %v; the generator no longer covers it", plans[m], equivalenceInputs, m)
		}
	}
	if wholeGang < equivalenceInputs/100 {
		t.Errorf("only %d plans took a whole gang; the generator no longer covers them", wholeGang)
	}
}

// takesWholeGang: the plan evicts every running member of some gang with
// minMember above one.
func takesWholeGang(in Input, p Plan) bool {
	lost, running := map[string]int{}, map[string]int{}
	for _, v := range p.Victims {
		if g := in.Pods[v].Group; g != "" && in.Groups[g].MinMember > 1 {
			lost[g]++
		}
	}
	for _, pod := range in.Pods {
		running[pod.Group]++
	}
	for g, n := range lost {
		if n == running[g] {
			return true
		}
	}
	return false
}

// randomInput builds world seed. Each world draws its own shape first:
// cluster size (1 to 200 nodes), how full and how eligible the nodes are,
// whether memory and a gpu count, how many gangs (with spare members, or
// minMember at or above their size) and singletons run, the spread of
// priorities and start times (few distinct values, so that ties between
// pods and between nodes are common), disruptive pods and disruption
// budgets, queues above or below their deserved share and guarantee,
// deficits, the preemptor's gang and members, and the options. Rare
// malformed parts (a pod on an unknown node or without a queue, a
// duplicated node name, an out-of-range budget index) are included.
func randomInput(seed uint64) Input {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	chance := func(p float64) bool { return r.Float64() < p }
	pick := func(vals ...int64) int64 { return vals[r.IntN(len(vals))] }
	if chance(0.15) {
		return uniformInput(r, 5+r.IntN(150))
	}

	var nNodes int
	switch r.IntN(4) {
	case 0:
		nNodes = 1 + r.IntN(4)
	case 1, 2:
		nNodes = 5 + r.IntN(30)
	default:
		nNodes = 40 + r.IntN(161)
	}
	memory := chance(0.4)
	gpu := chance(0.1)
	eligible := 0.5 + r.Float64()/2
	distinctStarts := 1 + r.IntN(40)
	prios := 1 + r.IntN(4)
	disruptive := []float64{0, 0, 0.1, 0.4}[r.IntN(4)]

	request := func() resources.List {
		l := resources.List{resources.CPU: pick(250, 500, 1000, 1000, 2000)}
		if memory {
			l["memory"] = pick(0, 1, 2, 4)
		}
		if gpu && chance(0.3) {
			l["nvidia.com/gpu"] = pick(1, 2)
		}
		return l
	}

	in := Input{Queues: map[string]Queue{}, Groups: map[string]Group{}}
	for i := range nNodes {
		name := fmt.Sprintf("n%d", i)
		if i > 0 && chance(0.02) {
			name = fmt.Sprintf("n%d", r.IntN(i)) // a duplicate: the first wins
		}
		free := resources.List{resources.CPU: pick(0, 0, 0, 0, 0, 0, 0, 250, 500, 1000)}
		if memory {
			free["memory"] = pick(0, 0, 1, 4)
		}
		if gpu {
			free["nvidia.com/gpu"] = pick(0, 0, 1)
		}
		in.Nodes = append(in.Nodes, Node{Name: name, Free: free, Eligible: chance(eligible)})
	}
	nodeName := func() string {
		if chance(0.02) {
			return "gone" // a pod on a node the input does not list
		}
		return fmt.Sprintf("n%d", r.IntN(nNodes))
	}

	queues := []string{"a", "b", "c", "d"}
	nBudgets := r.IntN(4)
	for range nBudgets {
		in.Budgets = append(in.Budgets, int32(r.IntN(3)))
	}
	id := 0
	addPod := func(queue, group string, prio int32, node string) {
		p := Pod{
			ID: fmt.Sprintf("%s/p%d", queue, id), Node: node, Group: group, Queue: queue, Priority: prio,
			Started: eqT0.Add(time.Duration(r.IntN(distinctStarts)) * time.Minute), Request: request(),
			Disruptive: chance(disruptive),
		}
		id++
		for b := range nBudgets {
			if chance(0.15) {
				p.Budgets = append(p.Budgets, b)
			}
		}
		if chance(0.01) {
			p.Budgets = append(p.Budgets, []int{-1, nBudgets}[r.IntN(2)]) // out of range: ignored
		}
		in.Pods = append(in.Pods, p)
	}
	podQueue := func() string {
		if chance(0.02) {
			return "" // outside Caldera's queues: never a victim
		}
		return queues[r.IntN(len(queues))]
	}

	// Gangs: some with spare members (minMember below their size), some
	// that can only go whole, on one node or spread over several.
	for g := range r.IntN(nNodes/2 + 3) {
		q := podQueue()
		key := fmt.Sprintf("%s/g%d", q, g)
		size := 2 + r.IntN(9)
		in.Groups[key] = Group{MinMember: int32([]int{0, 1, 2, size / 2, size - 2, size - 1, size, size, size, size + 1}[r.IntN(10)])}
		prio := int32(r.IntN(prios))
		spread := 1 + r.IntN(3)
		home := nodeName()
		for m := range size {
			node := home
			if m%spread != 0 {
				node = nodeName()
			}
			addPod(q, key, prio, node)
		}
	}
	for range r.IntN(4*nNodes + 4) {
		addPod(podQueue(), "", int32(r.IntN(prios)), nodeName())
	}

	pq := queues[r.IntN(3)]
	in.Preemptor = Preemptor{Queue: pq, Priority: int32(1 + r.IntN(prios)), Group: pq + "/pre"}
	if chance(0.15) {
		in.Preemptor.Priority = 0 // nothing to preempt below it
	}
	if chance(0.2) {
		in.Preemptor.Group = fmt.Sprintf("%s/g%d", pq, r.IntN(nNodes/2+3)) // its own running gang
	}
	for m := range []int{1, 1, 2, 3, 4, 8, 10}[r.IntN(7)] {
		in.Preemptor.Members = append(in.Preemptor.Members, request())
		if chance(0.5) {
			in.Preemptor.MemberIDs = append(in.Preemptor.MemberIDs, fmt.Sprintf("%s/m%d", pq, m))
		}
	}
	need := resources.List{}
	for _, m := range in.Preemptor.Members {
		need.Add(m)
	}

	// Queues: what their pods hold, a deserved share above or below it,
	// sometimes a guarantee; the preemptor's queue usually within its share.
	held := map[string]resources.List{}
	for _, p := range in.Pods {
		held[p.Queue] = held[p.Queue].Add(p.Request)
	}
	scale := func(l resources.List, f float64) resources.List {
		out := resources.List{}
		for k, v := range l {
			out[k] = int64(float64(v) * f)
		}
		return out
	}
	for _, q := range queues {
		if q != pq && chance(0.05) {
			continue // a queue the input does not describe
		}
		alloc := held[q].Clone()
		qs := Queue{Allocated: alloc, Reclaimable: chance(0.8)}
		qs.Deserved = scale(alloc, []float64{0.25, 0.5, 0.75, 1, 1.5}[r.IntN(5)])
		if q == pq && chance(0.7) {
			qs.Deserved = alloc.Clone().Add(need).Add(scale(need, r.Float64()))
		}
		if chance(0.3) {
			qs.Guarantee = scale(alloc, r.Float64())
		}
		in.Queues[q] = qs
	}

	if chance(0.2) {
		for range 1 + r.IntN(2) {
			d := Deficit{Queues: map[string]bool{"parent": true}, Over: resources.List{resources.CPU: pick(500, 1000, 2000, 4000)}}
			for _, q := range queues {
				if chance(0.5) {
					d.Queues[q] = true
				}
			}
			if memory && chance(0.3) {
				d.Over["memory"] = pick(1, 4)
			}
			in.Deficits = append(in.Deficits, d)
		}
	}

	in.Options = Options{
		Reclaim: chance(0.7), Preempt: chance(0.85),
		MinRuntime: time.Duration(pick(0, 0, 5, 20)) * time.Minute,
		Now:        eqT0.Add(time.Duration(distinctStarts+r.IntN(10)) * time.Minute),
	}
	return in
}

// uniformInput is BenchmarkDecide's world, small and with its symmetries
// varied: every node runs one gang of identical pods with spare members,
// the pods start all at once, in node order or in reverse, so that many
// nodes are equally cheap and the tie goes to the first.
func uniformInput(r *rand.Rand, nodes int) Input {
	size := 4 + r.IntN(5)
	in := Input{
		Preemptor: Preemptor{Group: "b/g", Queue: "b", Priority: int32(r.IntN(2))},
		Queues: map[string]Queue{
			"a": {Allocated: resources.List{resources.CPU: int64(nodes*size) * 1000}, Deserved: resources.List{resources.CPU: int64(nodes*size) * 500}, Reclaimable: true},
			"b": {Deserved: resources.List{resources.CPU: int64(nodes*size) * 500}, Reclaimable: true},
		},
		Groups:  map[string]Group{},
		Options: Options{Reclaim: true, Preempt: true, Now: eqT0.Add(time.Hour)},
	}
	for range 1 + r.IntN(8) {
		in.Preemptor.Members = append(in.Preemptor.Members, resources.List{resources.CPU: []int64{1000, 2000, 3000}[r.IntN(3)]})
	}
	order := r.IntN(3)
	for n := range nodes {
		node := fmt.Sprintf("n%d", n)
		in.Nodes = append(in.Nodes, Node{Name: node, Free: resources.List{resources.CPU: []int64{0, 0, 0, 500}[r.IntN(4)]}, Eligible: r.IntN(10) > 0})
		g := fmt.Sprintf("a/g%d", n)
		in.Groups[g] = Group{MinMember: int32(size - 1 - r.IntN(3))}
		for m := range size {
			var start time.Duration
			switch order {
			case 1:
				start = time.Duration(n*size+m) * time.Second
			case 2:
				start = time.Duration((nodes-n)*size+m) * time.Second
			}
			in.Pods = append(in.Pods, Pod{ID: fmt.Sprintf("%s-%d", g, m), Node: node, Group: g, Queue: "a",
				Started: eqT0.Add(start), Request: resources.List{resources.CPU: 1000}})
		}
	}
	return in
}
