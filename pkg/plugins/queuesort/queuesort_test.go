package queuesort

import (
	"fmt"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/caldera-sched/caldera/pkg/cache/cachetest"
	"github.com/caldera-sched/caldera/pkg/gangbook"
)

var t0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

func queued(tb testing.TB, pod *v1.Pod) *framework.QueuedPodInfo {
	tb.Helper()
	pi, err := framework.NewPodInfo(pod)
	if err != nil {
		tb.Fatal(err)
	}
	return &framework.QueuedPodInfo{PodInfo: pi, QueueingParams: framework.QueueingParams{Timestamp: t0}}
}

func pod(ns, name, group string, prio int32, created time.Time) *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(ns + "-" + name), CreationTimestamp: metav1.NewTime(created)},
		Spec:       v1.PodSpec{Priority: &prio, Containers: []v1.Container{{Name: "c"}}},
		Status:     v1.PodStatus{Phase: v1.PodPending},
	}
	if group != "" {
		p.Labels = map[string]string{gangbook.PodGroupLabel: group}
	}
	return p
}

func podGroup(ns, name string, minMember int32, created time.Time) *v1alpha1.PodGroup {
	return &v1alpha1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(ns + "-pg-" + name), CreationTimestamp: metav1.NewTime(created)},
		Spec:       v1alpha1.PodGroupSpec{MinMember: minMember},
	}
}

func TestLessOrdersByGroup(t *testing.T) {
	early := t0.Add(-time.Hour)
	// Member pods' own priority and creation time do not matter: their
	// group's do. Pods without a group are groups of their own.
	members := []*v1.Pod{
		pod("ns", "b-p1", "b", 0, early.Add(-time.Hour)),
		pod("ns", "b-p0", "b", 0, t0),
		pod("ns", "a-p1", "a", 0, t0),
		pod("ns", "a-p0", "a", 0, t0),
		pod("aa", "a-p0", "a", 0, t0),
		pod("ns", "old-p1", "old", 0, t0),
		pod("ns", "old-p0", "old", 0, t0),
		pod("ns", "hi-p1", "hi", 0, t0.Add(time.Hour)),
		pod("ns", "hi-p0", "hi", 10, t0.Add(time.Hour)),
	}
	pgs := []*v1alpha1.PodGroup{
		podGroup("ns", "b", 2, t0),
		podGroup("ns", "a", 2, t0),
		podGroup("aa", "a", 1, t0),
		podGroup("ns", "old", 2, early),
		podGroup("ns", "hi", 2, t0),
	}
	q := &QueueSort{cache: cachetest.NewForTest(t, pgs, members)}
	solos := []*v1.Pod{
		pod("ns", "solo-5", "", 5, t0),
		pod("ns", "solo-0", "", 0, t0.Add(-3*time.Hour)),
		pod("ns", "solo-late", "", 0, t0.Add(time.Hour)),
	}
	// A member whose group the cache has not seen sorts by its own
	// priority and age, under its group's key.
	unseen := pod("ns", "u-p0", "unseen", 0, early.Add(30*time.Minute))

	var entries []fwk.QueuedEntityInfo
	for _, p := range append(append(slices.Clone(members), solos...), unseen) {
		entries = append(entries, queued(t, p))
	}
	slices.SortStableFunc(entries, func(a, b fwk.QueuedEntityInfo) int {
		switch {
		case q.Less(a, b):
			return -1
		case q.Less(b, a):
			return 1
		}
		return 0
	})
	var got []string
	for _, e := range entries {
		p := e.(*framework.QueuedPodInfo).Pod
		got = append(got, p.Namespace+"/"+p.Name)
	}
	want := []string{
		"ns/hi-p0", "ns/hi-p1", // group priority 10
		"ns/solo-5",              // priority 5
		"ns/solo-0",              // priority 0, oldest
		"ns/old-p0", "ns/old-p1", // PodGroup created an hour ago
		"ns/u-p0",            // its own creation time
		"aa/a-p0",            // created at t0: by namespace,
		"ns/a-p0", "ns/a-p1", // then group name,
		"ns/b-p0", "ns/b-p1", // then pod name
		"ns/solo-late",
	}
	if !slices.Equal(got, want) {
		t.Errorf("queue order\n got %q\nwant %q", got, want)
	}
	for i, a := range entries {
		if q.Less(a, a) {
			t.Errorf("Less(%s, itself) = true", got[i])
		}
		for j, b := range entries[i+1:] {
			if q.Less(b, a) {
				t.Errorf("Less(%s, %s) = true, but it sorted after", got[i+1+j], got[i])
			}
		}
	}
}

// entity is a queue entry that is not a pod, such as upstream's pod groups.
type entity struct {
	fwk.QueuedEntityInfo
	prio int32
	ts   time.Time
}

func (e entity) GetPriority() int32      { return e.prio }
func (e entity) GetTimestamp() time.Time { return e.ts }

func TestLessOtherEntities(t *testing.T) {
	q := &QueueSort{cache: cachetest.NewForTest(t, nil, nil)}
	hi, lo := entity{prio: 2, ts: t0}, entity{prio: 1, ts: t0.Add(-time.Hour)}
	older := entity{prio: 2, ts: t0.Add(-time.Minute)}
	for _, tc := range []struct {
		name string
		a, b fwk.QueuedEntityInfo
		want bool
	}{
		{"higher priority first", hi, lo, true},
		{"lower priority after", lo, hi, false},
		{"older first", older, hi, true},
		{"newer after", hi, older, false},
		{"mixed with a pod", hi, queued(t, pod("ns", "p", "", 1, t0)), true},
	} {
		if got := q.Less(tc.a, tc.b); got != tc.want {
			t.Errorf("%s: Less = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestLessDoesNotAllocate(t *testing.T) {
	pgs, pods := cachetest.Gangs("ns", 2, 3)
	q := &QueueSort{cache: cachetest.NewForTest(t, pgs, pods)}
	a, b, c := queued(t, pods[0]), queued(t, pods[3]), queued(t, pods[1])
	solo := queued(t, pod("ns", "solo", "", 0, t0))
	if n := testing.AllocsPerRun(100, func() {
		q.Less(a, b)
		q.Less(a, c)
		q.Less(solo, a)
	}); n != 0 {
		t.Errorf("Less allocates %v times per 3 calls, want 0", n)
	}
}

// BenchmarkLess compares two queued members with the cache holding 1k and 100k
// member pods (groups of 10): Less must cost the same and allocate nothing.
func BenchmarkLess(b *testing.B) {
	for _, n := range []int{1_000, 100_000} {
		pgs, pods := cachetest.Gangs("ns", n/10, 10)
		q := &QueueSort{cache: cachetest.NewForTest(b, pgs, pods)}
		x := queued(b, pods[n/2])
		for _, tc := range []struct {
			name string
			y    *framework.QueuedPodInfo
		}{
			{"other-group", queued(b, pods[n/2+10])},
			{"same-group", queued(b, pods[n/2+1])},
		} {
			b.Run(fmt.Sprintf("pods=%d/%s", n, tc.name), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if !q.Less(x, tc.y) {
						b.Fatal("Less = false, want true")
					}
				}
			})
		}
	}
}
