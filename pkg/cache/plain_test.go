package cache

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/caldera-sched/caldera/pkg/gang"
	"github.com/caldera-sched/caldera/pkg/status"
)

func scheduledBy(name string) podOpt { return func(p *v1.Pod) { p.Spec.SchedulerName = name } }

// TestSortInfoPlainProfiles: a pod of a profile that built only the queue
// sort is plain whatever its labels, with its own priority and nothing
// else; a profile is Caldera's once any of its plugins but the queue sort
// was built, in whichever order; a pod of a profile never noted sorts as
// before.
func TestSortInfoPlainProfiles(t *testing.T) {
	c, _ := newTestCache(t)
	c.profiles.note("default-scheduler", false)
	c.profiles.note("default-scheduler", false) // one call per profile and plugin
	c.profiles.note("caldera-scheduler", false) // the queue sort first,
	c.profiles.note("caldera-scheduler", true)  // then CalderaEnqueue
	c.profiles.note("caldera-spread", true)     // CalderaBinder first,
	c.profiles.note("caldera-spread", false)    // then the queue sort

	member := mkPod("ns", "m", "g", priority(100), scheduledBy("caldera-scheduler"))
	addAll(c, member)
	plainMember := mkPod("ns", "d1", "g", priority(3), scheduledBy("default-scheduler"))
	plainSolo := mkPod("ns", "d2", "", scheduledBy("default-scheduler"))
	for _, tc := range []struct {
		pod  *v1.Pod
		want SortInfo
	}{
		{plainMember, SortInfo{Plain: true, Priority: 3}},
		{plainSolo, SortInfo{Plain: true, Priority: 0}},
		{member, SortInfo{Priority: 100, Created: t0, Namespace: "ns", Name: "g"}},
		{mkPod("ns", "s", "", priority(2), scheduledBy("caldera-spread")), SortInfo{Priority: 2, Created: t0, Namespace: "ns", Name: "s"}},
		{mkPod("ns", "o", "", priority(4), scheduledBy("not-noted")), SortInfo{Priority: 4, Created: t0, Namespace: "ns", Name: "o"}},
	} {
		if got := c.SortInfo(tc.pod); got != tc.want {
			t.Errorf("SortInfo(%s of %s) = %+v, want %+v", tc.pod.Name, tc.pod.Spec.SchedulerName, got, tc.want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { c.SortInfo(plainMember); c.SortInfo(member) }); n != 0 {
		t.Errorf("SortInfo allocates %v times per call pair, want 0", n)
	}
}

// A plain profile's queue sort may build the cache (kube-scheduler builds
// profiles in the configuration's order): Events about pods of no Caldera
// profile are still reported by a Caldera profile, never under the plain
// profile's name.
func TestEventsNotReportedByAPlainProfile(t *testing.T) {
	plain, batch := newFakeHandle(), newFakeHandle()
	plain.profile, batch.profile = "default-scheduler", "batch"
	c := newEmpty(t.Context(), plain)
	c.profiles.note("default-scheduler", false)
	c.profiles.addRecorder(batch)
	c.profiles.note("batch", true)

	notice := gang.Notice{Reason: "Unschedulable", Message: "m", Warning: true}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "other"}, Spec: v1.PodSpec{SchedulerName: "default-scheduler"}}
	status.New(c, status.Clients{}).WriteGroups(t.Context(), []status.Group{{Pods: []*v1.Pod{pod}, Notice: notice}})
	if got := plain.recorded(); len(got) != 0 {
		t.Errorf("the plain profile recorded %v, want nothing", got)
	}
	var names []string
	for _, e := range batch.recorded() {
		names = append(names, e.kind+" "+e.name)
	}
	if want := []string{"Pod ns/other"}; !slices.Equal(names, want) {
		t.Errorf("batch recorded %v, want %v", names, want)
	}
}

// Pods of a plain profile (the sole-scheduler config's default-scheduler)
// are used room for admission, in the cluster and on their node, and in no
// queue: a queue's allocated and its part of the node's room count
// Caldera's pods only.
func TestPlainPodsAreUsedRoomInNoQueue(t *testing.T) {
	c, _, _ := newAdmissionCache(t, singletons, mkQueue("default"))
	c.profiles.note("default-scheduler", false)
	c.ApplyNode(logger, mkNode("n1", "16"))
	ours := mkPod("ns", "s", "", boundTo("n1"), scheduledBy(testProfile))
	c.onAnyPod(ours, false)
	plain := mkPod("ns", "web", "", boundTo("n1"), cpu("5"), scheduledBy("default-scheduler"))
	c.onAnyPod(plain, false)

	wantUsage(t, c, "default", 1, 0)
	c.mu.RLock()
	clusterUsed := cpuOf(c.adm.Used)
	room := c.feasible.Rooms.Node("n1")
	nodeUsed, inQueues := cpuOf(room.Used), int64(0)
	for _, l := range room.ByQueue {
		inQueues += cpuOf(l)
	}
	c.mu.RUnlock()
	if clusterUsed != 6000 || nodeUsed != 6000 {
		t.Errorf("used cpu: cluster %dm, node n1 %dm; want 6000m each", clusterUsed, nodeUsed)
	}
	if inQueues != 1000 {
		t.Errorf("node n1 holds %dm cpu of queues, want 1000m (only Caldera's pod)", inQueues)
	}
	wantConsistent(t, c, "with a plain pod bound")
}

// A profile that builds CalderaGang beside the queue sort only (the
// sole-scheduler configuration's default-scheduler profile: a barrier for
// gangs whose pods name no scheduler) stays plain, so its pods are never
// ordered behind batch pods; a profile with any other Caldera plugin is
// Caldera's.
func TestGangBarrierLeavesAProfilePlain(t *testing.T) {
	plain, batch := newFakeHandle(), newFakeHandle()
	plain.profile, batch.profile = "default-scheduler", "batch"
	p := NewProvider(status.NewLeadership())
	for _, get := range []func(*fakeHandle) (*Cache, error){
		func(h *fakeHandle) (*Cache, error) { return p.GetForQueueSort(t.Context(), h) },
		func(h *fakeHandle) (*Cache, error) { return p.GetForGang(t.Context(), h) },
	} {
		for _, h := range []*fakeHandle{batch, plain} {
			if _, err := get(h); err != nil {
				t.Fatal(err)
			}
		}
	}
	c, err := p.Get(t.Context(), batch) // CalderaEnqueue, say
	if err != nil {
		t.Fatal(err)
	}
	if got := c.SortInfo(mkPod("ns", "d", "g", priority(3), scheduledBy("default-scheduler"))); !got.Plain {
		t.Errorf("a member in the profile with the barrier only sorts as %+v, want plain", got)
	}
	if got := c.SortInfo(mkPod("ns", "b", "", priority(3), scheduledBy("batch"))); got.Plain {
		t.Errorf("a pod of the batch profile sorts as plain: %+v", got)
	}
}
