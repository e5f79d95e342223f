package placement

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	internalcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/caldera-sched/caldera/pkg/cache/cachetest"
	"github.com/caldera-sched/caldera/pkg/gang"
	"github.com/caldera-sched/caldera/pkg/gangbook"
	policy "github.com/caldera-sched/caldera/pkg/placement"
)

const (
	rackKey = "topology.caldera.dev/rack"
	zoneKey = "topology.kubernetes.io/zone"
)

// snapshotHandle is the part of fwk.Handle that PreScore uses.
type snapshotHandle struct {
	fwk.Handle
	snap *internalcache.Snapshot
}

func (h snapshotHandle) SnapshotSharedLister() fwk.SharedLister { return h.snap }

func mkNode(i int) *v1.Node {
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("n", i), Labels: map[string]string{
			rackKey: fmt.Sprint("rack-", i/10), zoneKey: fmt.Sprint("zone-", i/100),
		}},
		Status: v1.NodeStatus{Allocatable: v1.ResourceList{
			v1.ResourceCPU: resource.MustParse("64"), v1.ResourceMemory: resource.MustParse("256Gi"), v1.ResourcePods: resource.MustParse("110"),
		}},
	}
}

func mkPG(ns, name string, minMember int32) *v1alpha1.PodGroup {
	return &v1alpha1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("pg-" + ns + "-" + name)},
		Spec:       v1alpha1.PodGroupSpec{MinMember: minMember},
	}
}

// mkMember is a 1-cpu pod of group (none when empty), bound to node (none
// when empty).
func mkMember(ns, name, group, node string) *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(ns + "-" + name)},
		Spec: v1.PodSpec{NodeName: node, Containers: []v1.Container{{
			Name:      "c",
			Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}},
		}}},
		Status: v1.PodStatus{Phase: v1.PodPending},
	}
	if node != "" {
		p.Status.Phase = v1.PodRunning
	}
	if group != "" {
		p.Labels = map[string]string{gangbook.PodGroupLabel: group}
	}
	return p
}

// assumed is the scheduler's copy of pod once it is reserved on node.
func assumed(pod *v1.Pod, node string) *v1.Pod {
	p := pod.DeepCopy()
	p.Spec.NodeName = node
	return p
}

// TestPreScoreCountsPlacedSiblings: a node's siblings are the gang's members
// the scheduler's snapshot has there: bound, or assumed (reserved, waiting in
// Permit); not finished ones, not other gangs', not those on nodes the
// snapshot does not list.
func TestPreScoreCountsPlacedSiblings(t *testing.T) {
	pgs := []*v1alpha1.PodGroup{mkPG("ns", "g", 8), mkPG("ns", "other", 1), mkPG("ns2", "g", 1)}
	pods := []*v1.Pod{
		mkMember("ns", "bound-1", "g", "n1"),
		mkMember("ns", "bound-2", "g", "n1"),
		mkMember("ns", "reserved", "g", ""),
		mkMember("ns", "waiting", "g", ""),
		mkMember("ns", "pending", "g", ""),
		mkMember("ns", "me", "g", ""),
		mkMember("ns", "unlisted-node", "g", "n9"),
		mkMember("ns", "other-gang", "other", "n1"),
		mkMember("ns2", "other-namespace", "g", "n1"),
		mkMember("ns", "plain", "", "n2"),
	}
	done := mkMember("ns", "done", "g", "n1")
	done.Status.Phase = v1.PodSucceeded
	c, _ := cachetest.New(t, pgs, append(pods, done))
	reserved, waiting := assumed(pods[2], "n2"), assumed(pods[3], "n3")
	c.Reserve(reserved)
	c.Reserve(waiting)
	if r := c.Permit(klog.Background(), waiting, time.Now(), 0, "CalderaGang"); r.Allow {
		t.Fatal("Permit allowed a gang with 4 of 8 members placed")
	}

	// The scheduler's snapshot: nodes n0-n3, its bound pods (finished ones
	// are deleted from its cache) and its assumed pods; n9 is not listed
	// (its Node is gone, or not synced yet).
	var nodes []*v1.Node
	for i := range 4 {
		nodes = append(nodes, mkNode(i))
	}
	onNodes := []*v1.Pod{pods[0], pods[1], reserved, waiting, pods[7], pods[8], pods[9]}
	// Both ways of counting must agree: from the cache's members (a profile
	// whose CalderaGang reports reservations) and from the snapshot's pods.
	for _, profile := range []string{"batch", "untracked"} {
		t.Run(profile, func(t *testing.T) {
			pl := &Placement{handle: snapshotHandle{snap: internalcache.NewSnapshot(onNodes, nodes)}, cache: c, reservations: tracked("batch"),
				profile: profile, keys: []string{rackKey, zoneKey}, w: policy.Weights{Packing: 0.5}}
			got, remaining := preScore(t, pl, pods[5])
			if want := map[string]int{"n1": 2, "n2": 1, "n3": 1}; fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("siblings per node = %v, want %v", got, want)
			}
			if remaining != 4 {
				t.Errorf("remaining = %d, want 4 (minMember 8, 4 placed on listed nodes)", remaining)
			}
		})
	}

	// A member that loses its reservation no longer counts.
	c.Unreserve(klog.Background(), waiting, time.Now(), gang.Backoff{}, 0)
	onNodes = []*v1.Pod{pods[0], pods[1], reserved, pods[7], pods[8], pods[9]}
	for _, profile := range []string{"batch", "untracked"} {
		t.Run(profile+"/after-unreserve", func(t *testing.T) {
			pl := &Placement{handle: snapshotHandle{snap: internalcache.NewSnapshot(onNodes, nodes)}, cache: c, reservations: tracked("batch"),
				profile: profile, keys: []string{rackKey, zoneKey}, w: policy.Weights{Packing: 0.5}}
			if got, _ := preScore(t, pl, pods[5]); fmt.Sprint(got) != fmt.Sprint(map[string]int{"n1": 2, "n2": 1}) {
				t.Errorf("siblings per node = %v, want map[n1:2 n2:1]", got)
			}
		})
	}
}

// preScore runs PreScore for pod and returns the per-node sibling counts
// and the gang's remaining members from its state.
func preScore(t *testing.T, pl *Placement, pod *v1.Pod) (map[string]int, int) {
	t.Helper()
	cs := framework.NewCycleState()
	if st := pl.PreScore(context.Background(), cs, pod, nil); !st.IsSuccess() {
		t.Fatalf("PreScore = %v", st)
	}
	d, err := cs.Read(stateKey)
	if err != nil {
		t.Fatal(err)
	}
	s := d.(*state)
	return s.siblings, s.gang.Remaining
}

// BenchmarkPreScore runs PreScore for a member of a 20-pod gang, 10 of them
// bound, on a cluster of 1000 nodes and 20,000 bound pods (gangs of 20).
func BenchmarkPreScore(b *testing.B) {
	const (
		nodes   = 1000
		gangs   = 1000
		size    = 20
		placedN = 10
	)
	var pgs []*v1alpha1.PodGroup
	var pods, bound []*v1.Pod
	for g := range gangs {
		name := fmt.Sprint("g", g)
		pgs = append(pgs, mkPG("ns", name, size))
		for i := range size {
			node := fmt.Sprint("n", (g*size+i)%nodes)
			if g == 0 && i >= placedN {
				node = ""
			}
			p := mkMember("ns", fmt.Sprintf("%s-%d", name, i), name, node)
			pods = append(pods, p)
			if node != "" {
				bound = append(bound, p)
			}
		}
	}
	var ns []*v1.Node
	for i := range nodes {
		ns = append(ns, mkNode(i))
	}
	first := mkMember("ns", "first-0", "first", "")
	c, _ := cachetest.New(b, append(pgs, mkPG("ns", "first", size)), append(pods, first))
	snap := internalcache.NewSnapshot(bound, ns)
	ctx := context.Background()
	// scan: siblings counted over the snapshot's pods, as before the cache
	// knew where members are (and still when CalderaGang does not report
	// reservations); cache: from the gang's members in the cache, which
	// summarizes only the siblings' nodes; first-member: a gang with no
	// member placed yet, whose first member summarizes every node.
	for _, bc := range []struct {
		name, profile string
		pod           *v1.Pod
	}{{"scan", "untracked", pods[placedN]}, {"cache", "batch", pods[placedN]}, {"first-member", "batch", first}} {
		pod := bc.pod
		b.Run(bc.name, func(b *testing.B) {
			pl := &Placement{handle: snapshotHandle{snap: snap}, cache: c, reservations: tracked("batch"), profile: bc.profile,
				keys: []string{rackKey, zoneKey}, w: policy.Weights{Packing: 0.5}}
			b.ReportAllocs()
			for b.Loop() {
				if st := pl.PreScore(ctx, framework.NewCycleState(), pod, nil); !st.IsSuccess() {
					b.Fatalf("PreScore = %v", st)
				}
			}
		})
	}
	// Score of every node for the placed gang's member, per op.
	b.Run("score-all-nodes", func(b *testing.B) {
		pl := &Placement{handle: snapshotHandle{snap: snap}, cache: c, reservations: tracked("batch"), profile: "batch",
			keys: []string{rackKey, zoneKey}, w: policy.Weights{Packing: 0.5}}
		cs := framework.NewCycleState()
		if st := pl.PreScore(ctx, cs, pods[placedN], nil); !st.IsSuccess() {
			b.Fatalf("PreScore = %v", st)
		}
		infos, err := snap.NodeInfos().List()
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			for _, ni := range infos {
				if _, st := pl.Score(ctx, cs, pods[placedN], ni); !st.IsSuccess() {
					b.Fatalf("Score = %v", st)
				}
			}
		}
	})
}

// Pods outside a gang keep opportunistic batching (signed, no fragment);
// gang members refuse to be signed, so they are scored every cycle.
func TestSignPod(t *testing.T) {
	pl := &Placement{}
	for _, tc := range []struct {
		name   string
		labels map[string]string
		signed bool
	}{
		{"plain pod", nil, true},
		{"empty pod-group label", map[string]string{v1alpha1.PodGroupLabel: ""}, true},
		{"gang member", map[string]string{v1alpha1.PodGroupLabel: "g"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Labels: tc.labels}}
			frags, st := pl.SignPod(context.Background(), pod)
			if len(frags) != 0 {
				t.Errorf("SignPod returned fragments %v, want none", frags)
			}
			if got := st.IsSuccess(); got != tc.signed {
				t.Errorf("signed = %v (status %v), want %v", got, st, tc.signed)
			}
			if !tc.signed && st.Code() != fwk.Unschedulable {
				t.Errorf("status %v, want Unschedulable (refuse to sign)", st)
			}
		})
	}
}

// TestScoreMatchesSummaryOfAllNodes: the plugin's score of every node is the
// policy's score from a summary of every node of the snapshot (free room
// after bound and assumed pods, siblings per node), both for a gang's first
// member (PreScore summarizes every node) and once siblings are placed
// (PreScore summarizes only their nodes).
func TestScoreMatchesSummaryOfAllNodes(t *testing.T) {
	var nodes []*v1.Node
	for i := range 30 {
		nodes = append(nodes, mkNode(i))
	}
	var pods []*v1.Pod
	for i := range 6 {
		pods = append(pods, mkMember("ns", fmt.Sprint("m", i), "g", ""))
	}
	filler := mkMember("ns", "filler", "", "n3") // room taken on one node
	filler.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = resource.MustParse("60")
	c, _ := cachetest.New(t, []*v1alpha1.PodGroup{mkPG("ns", "g", 6)}, append(pods, filler))
	keys := []string{rackKey, zoneKey}
	w := policy.Weights{Packing: 0.5}
	onNodes := []*v1.Pod{filler}
	for step, at := range []string{"", "n12", "n12", "n25"} {
		if at != "" { // one more member placed (reserved) before the next cycle
			p := assumed(pods[step-1], at)
			c.Reserve(p)
			onNodes = append(onNodes, p)
		}
		snap := internalcache.NewSnapshot(onNodes, nodes)
		pl := &Placement{handle: snapshotHandle{snap: snap}, cache: c, reservations: tracked("batch"), profile: "batch", keys: keys, w: w}
		pod := pods[len(pods)-1]
		cs := framework.NewCycleState()
		if st := pl.PreScore(context.Background(), cs, pod, nil); !st.IsSuccess() {
			t.Fatalf("step %d: PreScore = %v", step, st)
		}
		infos, err := snap.NodeInfos().List()
		if err != nil {
			t.Fatal(err)
		}
		var all []policy.Node
		for _, ni := range infos {
			var buf nodeBuf
			n := buf.node(ni, keys, []string{"cpu"})
			n = policy.Node{Domains: slices.Clone(n.Domains), Allocatable: slices.Clone(n.Allocatable), Free: slices.Clone(n.Free)}
			for _, pi := range ni.GetPods() {
				if pi.GetPod().Labels[gangbook.PodGroupLabel] == "g" {
					n.Siblings++
				}
			}
			all = append(all, n)
		}
		want := policy.NewScorer(policy.Gang{Request: []int64{1000}, Remaining: 6 - step}, all, len(keys), w)
		for i, ni := range infos {
			got, st := pl.Score(context.Background(), cs, pod, ni)
			if !st.IsSuccess() {
				t.Fatalf("Score = %v", st)
			}
			if w := want.Score(all[i]); got != w {
				t.Errorf("step %d, node %s: score %d, want %d (summary of every node)", step, ni.Node().Name, got, w)
			}
		}
	}
}

// tracked is a Provider whose one profile named by it reports
// reservations (its CalderaGang was built).
type tracked string

func (t tracked) TracksReservations(profile string) bool { return profile == string(t) }
