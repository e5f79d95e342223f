package random_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/caldera-sched/caldera/pkg/admission"
	"github.com/caldera-sched/caldera/pkg/cache"
)

// cacheView renders what the scheduler's cache holds for the queues of the
// pending groups in s: each queue's capability, deserved share, allocated
// and inflight, and the groups of those queues the cache has admitted. A
// liveness failure is a disagreement between the harness's model and the
// scheduler; the model's side is in the failure's state, and this is the
// scheduler's side at the same moment (the scheduler log at default
// verbosity does not show the numbers behind a refusal).
func (r *run) cacheView(ctx context.Context, t *testing.T, s *snapshot) string {
	d, err := dumpProcess(ctx, t, r.proc)
	if err != nil {
		return "  (no cache dump: " + err.Error() + ")"
	}
	return renderCacheView(d, s)
}

func renderCacheView(d *cache.CacheDump, s *snapshot) string {
	parent := map[string]string{}
	for _, q := range d.Queues {
		parent[q.Name] = q.Parent
	}
	// The pending groups' queues and their ancestors: the chain a refusal
	// ("exceeds remaining capability" of an ancestor) may come from.
	want := map[string]bool{}
	for _, g := range s.Groups {
		for q := g.Queue; q != "" && !want[q]; q = parent[q] {
			want[q] = true
		}
	}
	var b strings.Builder
	for _, q := range d.Queues {
		if !want[q.Name] {
			continue
		}
		fmt.Fprintf(&b, "  queue %s (parent %q): capability %v deserved %v allocated %v inflight %v share %.3f pending %d order %v\n",
			q.Name, q.Parent, q.Capability, q.Deserved, q.Allocated, q.Inflight, q.Share, q.Pending, q.Order)
	}
	groups := append([]cache.GroupDump(nil), d.Groups...)
	sort.Slice(groups, func(i, j int) bool { return groups[i].Key < groups[j].Key })
	for _, g := range groups {
		if !want[g.Queue] || (!g.Admitted && g.Counts["pending"] == 0) {
			continue
		}
		fmt.Fprintf(&b, "  group %s queue %s phase %s admitted %v minMember %d minRequest %v counts %v unschedulable %q\n",
			g.Key, g.Queue, g.Phase, g.Admitted, g.MinMember, g.MinRequest, g.Counts, g.Unschedulable)
	}
	fmt.Fprintf(&b, "  cluster: %d nodes, allocatable %v, used %v", d.Cluster.Nodes, d.Cluster.Allocatable, d.Cluster.Used)
	return b.String()
}

// admitted is a group's admission in queue q.
func admitted(q string, ok bool) admission.GroupAdmission {
	return admission.GroupAdmission{Queue: q, Admitted: ok}
}

// TestRenderCacheView: the view shows the pending group's queue chain and
// the admitted groups there, and nothing of unrelated queues.
func TestRenderCacheView(t *testing.T) {
	d := &cache.CacheDump{
		Queues: []admission.QueueDump{
			{Name: "root", Capability: map[string]int64{"cpu": 20000}},
			{Name: "team", Parent: "root", Allocated: map[string]int64{"cpu": 8000}, Inflight: map[string]int64{"cpu": 12000}},
			{Name: "other"},
		},
		Groups: []cache.GroupDump{
			{Key: "pg:ns/held", GroupAdmission: admitted("team", true), Phase: "Inqueue", Counts: map[string]int{"pending": 3}},
			{Key: "pg:ns/elsewhere", GroupAdmission: admitted("other", true)},
			{Key: "pod:ns/done", GroupAdmission: admitted("team", false), Counts: map[string]int{"bound": 1}},
		},
	}
	s := &snapshot{Groups: map[string]*groupState{"g": {Name: "g", Queue: "team"}}}
	got := renderCacheView(d, s)
	for _, want := range []string{"queue root ", "queue team ", "inflight cpu=12 ", "group pg:ns/held "} {
		if !strings.Contains(got, want) {
			t.Errorf("view lacks %q:\n%s", want, got)
		}
	}
	for _, not := range []string{"queue other", "elsewhere", "pod:ns/done"} {
		if strings.Contains(got, not) {
			t.Errorf("view shows %q:\n%s", not, got)
		}
	}
}
