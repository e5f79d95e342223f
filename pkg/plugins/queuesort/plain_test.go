package queuesort

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	upstream "k8s.io/kubernetes/pkg/scheduler/framework/plugins/queuesort"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/pkg/cache"
	"github.com/caldera-sched/caldera/pkg/cache/cachetest"
	"github.com/caldera-sched/caldera/pkg/dialect/annotation"
	"github.com/caldera-sched/caldera/pkg/gangbook"
)

// defaultProfile is the plain profile of these tests.
const defaultProfile = "default-scheduler"

// queuedAt is queued with the time the pod entered the scheduling queue.
func queuedAt(tb testing.TB, pod *v1.Pod, ts time.Time) *framework.QueuedPodInfo {
	tb.Helper()
	qi := queued(tb, pod)
	qi.Timestamp = ts
	return qi
}

// plainPod is a pod of the default-scheduler profile; prio nil leaves
// spec.priority unset.
func plainPod(name string, prio *int32, created time.Time, labels map[string]string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("ns-" + name), CreationTimestamp: metav1.NewTime(created), Labels: labels},
		Spec:       v1.PodSpec{SchedulerName: defaultProfile, Priority: prio, Containers: []v1.Container{{Name: "c"}}},
		Status:     v1.PodStatus{Phase: v1.PodPending},
	}
}

// TestLessPlainIsPrioritySort: two pods of a plain profile compare exactly
// as upstream's PrioritySort compares them, whatever their labels and
// creation times, ties included.
func TestLessPlainIsPrioritySort(t *testing.T) {
	pgs, members := cachetest.Gangs("ns", 2, 2)
	c, f := cachetest.New(t, pgs, members)
	f.Provider().NoteProfile(defaultProfile, false)
	q := &QueueSort{cache: c}
	ref := &upstream.PrioritySort{}

	rng := rand.New(rand.NewPCG(20, 20))
	prios := []*int32{nil, ptr(0), ptr(1), ptr(7), ptr(-3)}
	var entries []fwk.QueuedEntityInfo
	for i := range 200 {
		var labels map[string]string
		switch rng.IntN(4) {
		case 1:
			labels = map[string]string{gangbook.PodGroupLabel: "g0"} // a group the cache holds
		case 2:
			labels = map[string]string{gangbook.PodGroupLabel: "unseen", qapi.QueueLabel: "team"}
		case 3:
			labels = map[string]string{qapi.QueueLabel: "team"}
		}
		// Few distinct times, so that equal priority and time occur and
		// creation times disagree with queue-entry times.
		created := t0.Add(time.Duration(rng.IntN(50)) * time.Second)
		entered := t0.Add(time.Duration(rng.IntN(8)) * time.Second)
		p := plainPod(fmt.Sprint("p", i), prios[rng.IntN(len(prios))], created, labels)
		entries = append(entries, queuedAt(t, p, entered))
	}
	ties := 0
	for _, a := range entries {
		for _, b := range entries {
			got, want := q.Less(a, b), ref.Less(a, b)
			if got != want {
				t.Fatalf("Less(%s, %s) = %v, PrioritySort.Less = %v", name(a), name(b), got, want)
			}
			if a != b && !got && !q.Less(b, a) {
				ties++
			}
		}
	}
	if ties == 0 {
		t.Error("no two distinct pods tied: the test does not check ties")
	}
}

// TestLessMixed: a plain (default-scheduler) pod goes before every
// Caldera pod below system priority, whatever its queue's priority and
// share; its own priority and queue-entry time matter only against other
// plain pods.
func TestLessMixed(t *testing.T) {
	hiPrio := plainPod("plain-hi", ptr(1000), t0, nil)
	old := plainPod("plain-old", ptr(0), t0.Add(-time.Hour), nil)
	f := fakeSource{
		"ns/plain-hi":  {Plain: true, Priority: 1000},
		"ns/plain-old": {Plain: true, Priority: 0},
		"ns/urgent":    {QueuePriority: 5, QueueShare: 0.9, Priority: 0, Created: t0, Namespace: "ns", Name: "urgent"},
		"ns/low":       {QueuePriority: -1, QueueShare: 0, Priority: 100, Created: t0, Namespace: "ns", Name: "low"},
		"ns/above":     {QueuePriority: 0, QueueShare: 0.5, Priority: 100, Created: t0, Namespace: "ns", Name: "above"},
		"ns/empty":     {QueuePriority: 0, QueueShare: 0, Priority: 100, Created: t0.Add(-time.Hour), Namespace: "ns", Name: "empty"},
	}
	q := &QueueSort{cache: f}
	pods := map[string]*framework.QueuedPodInfo{
		"plain-hi":  queuedAt(t, hiPrio, t0.Add(time.Minute)),
		"plain-old": queuedAt(t, old, t0),
	}
	for _, n := range []string{"urgent", "low", "above", "empty"} {
		pods[n] = queuedAt(t, pod("ns", n, "", 0, t0), t0)
	}
	for _, tc := range []struct {
		a, b string
		want bool
		why  string
	}{
		{"plain-hi", "plain-old", true, "plain: priority first"},
		{"plain-old", "plain-hi", false, "plain: priority first"},
		{"plain-hi", "urgent", true, "plain pods are never ordered behind batch pods, whatever the queue's priority"},
		{"urgent", "plain-hi", false, "plain pods are never ordered behind batch pods, whatever the queue's priority"},
		{"plain-old", "low", true, "plain pods before batch pods"},
		{"low", "plain-hi", false, "plain pods before batch pods"},
		{"plain-old", "above", true, "plain pods before batch pods"},
		{"above", "plain-old", false, "plain pods before batch pods"},
		{"plain-hi", "empty", true, "plain pods before batch pods"},
		{"plain-old", "empty", true, "plain pods before batch pods, whatever the ages"},
		{"empty", "plain-old", false, "plain pods before batch pods, whatever the ages"},
		{"empty", "above", true, "Caldera's order between Caldera's pods"},
	} {
		if got := q.Less(pods[tc.a], pods[tc.b]); got != tc.want {
			t.Errorf("Less(%s, %s) = %v, want %v (%s)", tc.a, tc.b, got, tc.want, tc.why)
		}
	}
}

// TestLessStrictWeakOrder checks every pair and triple of a mix of plain
// and Caldera pods: irreflexive, asymmetric, transitive, and ties (neither
// before the other) transitive, which sort.Sort and the scheduler's heap
// need.
func TestLessStrictWeakOrder(t *testing.T) {
	f := fakeSource{}
	var entries []fwk.QueuedEntityInfo
	rng := rand.New(rand.NewPCG(36, 36))
	for i := range 36 {
		n := fmt.Sprint("p", i)
		ts := t0.Add(time.Duration(rng.IntN(3)) * time.Second)
		if i%3 == 0 {
			prio := int32(rng.IntN(3))
			f["ns/"+n] = cache.SortInfo{Plain: true, Priority: prio}
			entries = append(entries, queuedAt(t, plainPod(n, &prio, t0, nil), ts))
			continue
		}
		f["ns/"+n] = cache.SortInfo{
			QueuePriority: int32(rng.IntN(2)), QueueShare: float64(rng.IntN(2)) / 2,
			Priority: int32(rng.IntN(2)), Created: t0,
			Namespace: "ns", Name: fmt.Sprint("g", rng.IntN(3)),
		}
		entries = append(entries, queuedAt(t, pod("ns", n, "", 0, t0), ts))
	}
	q := &QueueSort{cache: f}
	wantStrictWeakOrder(t, q, entries)
}

// TestLessPlainDoesNotAllocate: Less over plain pods, and plain against
// Caldera's, allocates nothing, as over Caldera's pods.
func TestLessPlainDoesNotAllocate(t *testing.T) {
	pgs, pods := cachetest.Gangs("ns", 2, 3)
	c, f := cachetest.New(t, pgs, pods)
	f.Provider().NoteProfile(defaultProfile, false)
	q := &QueueSort{cache: c}
	member := queued(t, pods[0])
	a := queuedAt(t, plainPod("a", ptr(1), t0, nil), t0)
	b := queuedAt(t, plainPod("b", nil, t0, map[string]string{gangbook.PodGroupLabel: "g1"}), t0.Add(time.Second))
	// A plain pod that asks for a gang by annotation, as a Job's would:
	// naming its implicit PodGroup allocates, and a plain pod never needs it.
	asks := plainPod("c", nil, t0, nil)
	asks.Annotations = map[string]string{qapi.GangMinMemberAnnotation: "2"}
	asks.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "j", UID: "j-uid", Controller: ptrTo(true)}}
	if _, ok := annotation.GroupOf(asks); !ok {
		t.Fatal("the annotated pod asks for no gang: the test checks nothing")
	}
	c2 := queuedAt(t, asks, t0)
	if n := testing.AllocsPerRun(100, func() {
		q.Less(a, b)
		q.Less(b, member)
		q.Less(member, a)
		q.Less(c2, a)
	}); n != 0 {
		t.Errorf("Less allocates %v times per 4 calls, want 0", n)
	}
}

// fakeSource answers SortInfo from a table keyed by namespace/name.
type fakeSource map[string]cache.SortInfo

func (f fakeSource) SortInfo(p *v1.Pod) cache.SortInfo { return f[p.Namespace+"/"+p.Name] }

func name(e fwk.QueuedEntityInfo) string {
	p := e.(*framework.QueuedPodInfo).Pod
	return p.Namespace + "/" + p.Name
}

func ptr(i int32) *int32 { return &i }

// wantStrictWeakOrder checks q.Less over every pair and triple of entries:
// irreflexive, asymmetric, transitive, and ties (neither before the other)
// transitive, which sort.Sort and the scheduler's heap need.
func wantStrictWeakOrder(t *testing.T, q *QueueSort, entries []fwk.QueuedEntityInfo) {
	t.Helper()
	less := func(i, j int) bool { return q.Less(entries[i], entries[j]) }
	tie := func(i, j int) bool { return !less(i, j) && !less(j, i) }
	for i := range entries {
		if less(i, i) {
			t.Fatalf("Less(%s, itself)", name(entries[i]))
		}
		for j := range entries {
			if less(i, j) && less(j, i) {
				t.Fatalf("Less(%s, %s) both ways", name(entries[i]), name(entries[j]))
			}
			for k := range entries {
				if less(i, j) && less(j, k) && !less(i, k) {
					t.Fatalf("not transitive: %s < %s < %s", name(entries[i]), name(entries[j]), name(entries[k]))
				}
				if tie(i, j) && tie(j, k) && !tie(i, k) {
					t.Fatalf("ties not transitive: %s ~ %s ~ %s", name(entries[i]), name(entries[j]), name(entries[k]))
				}
			}
		}
	}
}

func ptrTo[T any](v T) *T { return &v }
