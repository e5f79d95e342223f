package placement

import (
	"context"
	"fmt"
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

	"github.com/caldera-sched/caldera/pkg/cache"
	"github.com/caldera-sched/caldera/pkg/cache/cachetest"
	"github.com/caldera-sched/caldera/pkg/gang"
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
		p.Labels = map[string]string{cache.PodGroupLabel: group}
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
	c, _ := cachetest.NewWithServer(t, pgs, append(pods, done))
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
	c.TrackReservations("batch")
	// Both ways of counting must agree: from the cache's members (a profile
	// whose CalderaGang reports reservations) and from the snapshot's pods.
	for _, profile := range []string{"batch", "untracked"} {
		t.Run(profile, func(t *testing.T) {
			pl := &Placement{handle: snapshotHandle{snap: internalcache.NewSnapshot(onNodes, nodes)}, cache: c,
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
			pl := &Placement{handle: snapshotHandle{snap: internalcache.NewSnapshot(onNodes, nodes)}, cache: c,
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
	out := map[string]int{}
	for name, i := range s.index {
		if n := s.nodes[i].Siblings; n > 0 {
			out[name] = n
		}
	}
	return out, s.gang.Remaining
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
	c, _ := cachetest.NewWithServer(b, pgs, pods)
	c.TrackReservations("batch")
	snap := internalcache.NewSnapshot(bound, ns)
	pod := pods[placedN]
	ctx := context.Background()
	// scan: siblings counted over the snapshot's pods, as before the cache
	// knew where members are (and still when CalderaGang does not report
	// reservations); cache: from the gang's members in the cache.
	for _, bc := range []struct{ name, profile string }{{"scan", "untracked"}, {"cache", "batch"}} {
		b.Run(bc.name, func(b *testing.B) {
			pl := &Placement{handle: snapshotHandle{snap: snap}, cache: c, profile: bc.profile,
				keys: []string{rackKey, zoneKey}, w: policy.Weights{Packing: 0.5}}
			b.ReportAllocs()
			for b.Loop() {
				if st := pl.PreScore(ctx, framework.NewCycleState(), pod, nil); !st.IsSuccess() {
					b.Fatalf("PreScore = %v", st)
				}
			}
		})
	}
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
