package harness

import (
	"encoding/json"
	"sort"
	"testing"

	"github.com/caldera-sched/caldera/pkg/cache"
	"github.com/caldera-sched/caldera/pkg/resources"
)

// Aggregates are the history-independent parts of a cache dump: what a cache
// started from the same objects must hold too, however the running one got
// there, whatever order its informers delivered events in. Left out: when the dump was taken, the last pass's deserved
// shares, inflight reservations, admitted/pending (a fresh cache decides
// admission anew), first attempts, backoffs and the last unschedulable reason.
type Aggregates struct {
	Nodes       int
	Allocatable resources.List
	Used        resources.List
	Queues      []QueueAggregates
	Groups      []GroupAggregates
}

// QueueAggregates is one queue of Aggregates.
type QueueAggregates struct {
	Name, Parent, State   string
	Weight, Priority      int32
	Reclaimable           bool
	Capability, Guarantee resources.List
	Allocated             resources.List
}

// GroupAggregates is one group of Aggregates.
type GroupAggregates struct {
	Key, Queue, Phase string
	PodGroup          bool
	MinMember         int32
	Counts            map[string]int
	Enqueueable       bool
	MinRequest        resources.List
}

// AggregatesOf selects a dump's Aggregates, queues and groups sorted by name.
func AggregatesOf(d *cache.CacheDump) Aggregates {
	a := Aggregates{Nodes: d.Cluster.Nodes, Allocatable: nonZero(d.Cluster.Allocatable), Used: nonZero(d.Cluster.Used)}
	for _, q := range d.Queues {
		a.Queues = append(a.Queues, QueueAggregates{
			Name: q.Name, Parent: q.Parent, State: q.State, Weight: q.Weight, Priority: q.Priority,
			Reclaimable: q.Reclaimable, Capability: nonZero(q.Capability), Guarantee: nonZero(q.Guarantee),
			Allocated: nonZero(q.Allocated),
		})
	}
	for _, g := range d.Groups {
		a.Groups = append(a.Groups, GroupAggregates{
			Key: g.Key, Queue: g.Queue, Phase: g.Phase, PodGroup: g.PodGroup, MinMember: g.MinMember,
			Counts: g.Counts, Enqueueable: g.Enqueueable, MinRequest: nonZero(g.MinRequest),
		})
	}
	sort.Slice(a.Queues, func(i, j int) bool { return a.Queues[i].Name < a.Queues[j].Name })
	sort.Slice(a.Groups, func(i, j int) bool { return a.Groups[i].Key < a.Groups[j].Key })
	return a
}

// nonZero drops zero amounts: an incremental aggregate keeps a resource at 0
// after its last user left, a fresh one never had it.
func nonZero(l resources.List) resources.List {
	out := resources.List{}
	for k, v := range l {
		if v != 0 {
			out[k] = v
		}
	}
	return out
}

// DumpOf decodes the dump of an in-process scheduler's cache (what SIGUSR1
// writes for a scheduler process).
func DumpOf(t testing.TB, c *cache.Cache) *cache.CacheDump {
	t.Helper()
	data, err := c.Dump()
	if err != nil {
		t.Fatal(err)
	}
	d := &cache.CacheDump{}
	if err := json.Unmarshal(data, d); err != nil {
		t.Fatal(err)
	}
	return d
}
