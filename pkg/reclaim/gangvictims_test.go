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

// TestDecideEquivalenceGangVictims holds Decide to the exhaustive search
// (referenceDecide) on W7-like worlds: full nodes whose victims are mostly
// gangs that can only go whole, of varied sizes, spread over consecutive
// nodes, mixed with gangs that have spare members and single pods, so that
// a node freed by one whole gang competes with nodes freed by a few single
// pods or by other gangs. randomInput has few such worlds, and none where
// the pods a whole gang costs decide between nodes; the search's bound on
// whole gangs (unitOf) is checked here.
func TestDecideEquivalenceGangVictims(t *testing.T) {
	const worlds = 400
	wholeGang, plans := 0, 0
	for seed := range uint64(worlds) {
		want, wantOK, wantWhy := referenceDecide(gangVictimsWorld(seed))
		in := gangVictimsWorld(seed)
		got, gotOK, gotWhy := Decide(in)
		if gotOK != wantOK || gotWhy != wantWhy || !reflect.DeepEqual(got, want) {
			t.Fatalf("seed %d (%d nodes, %d pods, %d members): Decide = %+v, %v, %q; reference = %+v, %v, %q",
				seed, len(in.Nodes), len(in.Pods), len(in.Preemptor.Members), got, gotOK, gotWhy, want, wantOK, wantWhy)
		}
		if gotOK {
			plans++
			if takesWholeGang(in, got) {
				wholeGang++
			}
		}
	}
	t.Logf("%d worlds: %d plans, %d taking a whole gang", worlds, plans, wholeGang)
	if plans < worlds/2 || wholeGang < worlds/4 || plans-wholeGang < worlds/20 {
		t.Errorf("%d plans, %d taking a whole gang, of %d worlds: the generator no longer covers them", plans, wholeGang, worlds)
	}
}

// gangVictimsWorld builds world seed: nodes of 4000 cpu with little or no
// free room, filled node by node with gangs laid over consecutive nodes
// (most with minMember at their size, some with spare members; not Whole,
// which the reference predates)
// and single pods; one queue; a preemptor of higher priority than most.
func gangVictimsWorld(seed uint64) Input {
	r := rand.New(rand.NewPCG(seed, 0x6a9c))
	chance := func(p float64) bool { return r.Float64() < p }
	pick := func(vals ...int64) int64 { return vals[r.IntN(len(vals))] }
	nNodes := 4 + r.IntN(40)
	distinctStarts := 1 + r.IntN(6)
	in := Input{
		Queues:  map[string]Queue{"q": {Reclaimable: true}},
		Groups:  map[string]Group{},
		Options: Options{Reclaim: chance(0.5), Preempt: true, Now: eqT0.Add(time.Hour)},
	}
	for n := range nNodes {
		in.Nodes = append(in.Nodes, Node{Name: fmt.Sprintf("n%d", n), Free: resources.List{resources.CPU: pick(0, 0, 0, 0, 500, 1000)}, Eligible: chance(0.9)})
	}
	id := 0
	add := func(group string, prio int32, node int, req int64) {
		in.Pods = append(in.Pods, Pod{ID: fmt.Sprintf("q/p%d", id), Node: fmt.Sprintf("n%d", node), Group: group, Queue: "q",
			Priority: prio, Started: eqT0.Add(time.Duration(r.IntN(distinctStarts)) * time.Minute), Request: resources.List{resources.CPU: req}})
		id++
	}
	// Fill the nodes in order, 4000 cpu each less their free room.
	node, left := 0, int64(4000)-in.Nodes[0].Free[resources.CPU]
	for g := 0; node < nNodes; g++ {
		key := fmt.Sprintf("q/g%d", g)
		prio := int32(r.IntN(3))
		size := 1 + r.IntN(8)
		switch k := r.IntN(10); {
		case k < 6:
			in.Groups[key] = Group{MinMember: int32(size)}
		case k < 8:
			in.Groups[key] = Group{MinMember: int32(max(size-1-r.IntN(2), 2))}
		default:
			key, size = "", 1 // a single pod
		}
		perNode := 1 + r.IntN(3)
		req := pick(500, 1000, 1000, 2000)
		for m := 0; m < size && node < nNodes; m++ {
			if m > 0 && m%perNode == 0 || left < req {
				if node++; node == nNodes {
					break
				}
				left = 4000 - in.Nodes[node].Free[resources.CPU]
			}
			if left < req {
				req = left
			}
			add(key, prio, node, req)
			left -= req
		}
		if key != "" {
			size = 0
			for _, p := range in.Pods {
				if p.Group == key {
					size++
				}
			}
			gr := in.Groups[key]
			gr.MinMember = min(gr.MinMember, int32(size))
			in.Groups[key] = gr
		}
	}
	in.Preemptor = Preemptor{Group: "q/pre", Queue: "q", Priority: int32(1 + r.IntN(3))}
	for range 1 + r.IntN(8) {
		in.Preemptor.Members = append(in.Preemptor.Members, resources.List{resources.CPU: pick(500, 1000, 2000, 3000)})
	}
	return in
}
