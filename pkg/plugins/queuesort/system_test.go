package queuesort

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/caldera-sched/caldera/pkg/cache"
	"github.com/caldera-sched/caldera/pkg/cache/cachetest"
	"github.com/caldera-sched/caldera/pkg/gangbook"
)

// The priorities of the system priority classes, as the apiserver creates
// them.
const (
	sysNodeCritical    int32 = 2000001000
	sysClusterCritical int32 = 2000000000
)

// sysSource answers SortInfo from a table keyed by pod name.
type sysSource map[string]cache.SortInfo

func (f sysSource) SortInfo(p *v1.Pod) cache.SortInfo { return f[p.Name] }

// sysEntry is a queue entry for pod name of scheduler sched, entered into
// the scheduling queue at ts.
func sysEntry(tb testing.TB, name, sched string, prio int32, ts time.Time) *framework.QueuedPodInfo {
	tb.Helper()
	created := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("ns-" + name), CreationTimestamp: metav1.NewTime(created)},
		Spec:       v1.PodSpec{SchedulerName: sched, Priority: &prio, Containers: []v1.Container{{Name: "c"}}},
	}
	pi, err := framework.NewPodInfo(p)
	if err != nil {
		tb.Fatal(err)
	}
	return &framework.QueuedPodInfo{PodInfo: pi, QueueingParams: framework.QueueingParams{Timestamp: ts}}
}

// TestLessSystemAndPlainBeforeBatch: in one process, the default-scheduler
// profile's pods and pods of the system priority classes are never ordered
// behind Caldera's batch pods, however high the batch pods' queue; Caldera's
// order among its own pods below the system priorities is unchanged. Rows
// marked changed were ordered the other way before the classes
// (QueueSort): a plain pod counted as a priority-0 queue holding nothing.
func TestLessSystemAndPlainBeforeBatch(t *testing.T) {
	if SystemPriority != sysClusterCritical || sysNodeCritical < SystemPriority {
		t.Fatalf("SystemPriority = %d, want system-cluster-critical's %d, at most system-node-critical's %d", SystemPriority, sysClusterCritical, sysNodeCritical)
	}
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	const def, cal = "default-scheduler", "caldera-scheduler"
	type podSpec struct {
		sched string
		prio  int32
		ts    time.Duration // queue entry, after t0
		info  cache.SortInfo
	}
	// A batch pod's key: its queue, its group's priority, its group.
	batch := func(queuePrio int32, share float64, prio int32, group string) cache.SortInfo {
		return cache.SortInfo{QueuePriority: queuePrio, QueueShare: share, Priority: prio, Created: t0, Namespace: "ns", Name: group}
	}
	plain := func(prio int32) cache.SortInfo { return cache.SortInfo{Plain: true, Priority: prio} }
	specs := map[string]podSpec{
		// Plain profile (default-scheduler) pods, SortInfo as the cache
		// gives them: the pod's own priority, nothing else.
		"node-critical":    {def, sysNodeCritical, 3 * time.Minute, plain(sysNodeCritical)},
		"cluster-critical": {def, sysClusterCritical, 0, plain(sysClusterCritical)},
		"web-hi":           {def, 1000, 2 * time.Minute, plain(1000)},
		"web-early":        {def, 0, 0, plain(0)},
		"web":              {def, 0, time.Minute, plain(0)},
		"web-neg":          {def, -10, 0, plain(-10)},
		// Caldera's admitted batch pods.
		"batch-top": {cal, 0, 0, batch(100, 0, 0, "top")},       // a queue of priority 100
		"batch":     {cal, 1000, 0, batch(10, 0.2, 1000, "b")},  // priority 1000 in a queue of priority 10
		"batch-low": {cal, 5000, 0, batch(0, 0.5, 5000, "low")}, // a queue of priority 0, above its share
		"batch-q0":  {cal, 0, 0, batch(0, 0, 0, "q0")},          // a queue of priority 0 that holds nothing
		"batch-neg": {cal, 0, 0, batch(-5, 0, 9000, "neg")},     // a queue of negative priority
		// Caldera pods of system priority (a gang's priority is its
		// highest member's), in queues of priority 0 and 100.
		"caldera-sys":     {cal, sysClusterCritical, 0, batch(0, 0.9, sysClusterCritical, "sys")},
		"caldera-sys-top": {cal, sysClusterCritical, 0, batch(100, 0, sysClusterCritical, "systop")},
	}
	src := sysSource{}
	entries := map[string]*framework.QueuedPodInfo{}
	var all []fwk.QueuedEntityInfo
	for name, s := range specs {
		src[name] = s.info
		entries[name] = sysEntry(t, name, s.sched, s.prio, t0.Add(s.ts))
		all = append(all, entries[name])
	}
	q := &QueueSort{cache: src}

	for _, tc := range []struct {
		a, b    string
		want    bool
		changed bool // before the classes, Less(a, b) was !want
		why     string
	}{
		{"node-critical", "batch-top", true, true, "a system-node-critical plain pod before a batch pod of a priority-100 queue"},
		{"batch-top", "node-critical", false, true, "a system-node-critical plain pod before a batch pod of a priority-100 queue"},
		{"cluster-critical", "batch-top", true, true, "a system-cluster-critical plain pod before a batch pod of a priority-100 queue"},
		{"web", "batch", true, true, "a default-scheduler pod of priority 0 before a batch pod of priority 1000 in a queue of priority 10"},
		{"batch", "web", false, true, "a default-scheduler pod of priority 0 before a batch pod of priority 1000 in a queue of priority 10"},
		{"web-neg", "batch-top", true, true, "plain pods before batch pods, whatever their priorities: no key mixes queue and pod priority"},
		{"batch-neg", "web-neg", false, false, "plain pods before batch pods, whatever their priorities: no key mixes queue and pod priority"},
		{"web", "batch-q0", true, false, "plain before batch, as before at equal queue keys"},
		{"caldera-sys", "batch-top", true, true, "a Caldera pod of system priority before batch pods of any queue"},
		{"batch-top", "caldera-sys", false, true, "a Caldera pod of system priority before batch pods of any queue"},
		{"caldera-sys", "web-hi", true, true, "a Caldera pod of system priority before plain pods below it"},
		{"caldera-sys-top", "node-critical", false, true, "system pods by priority first: node-critical before cluster-critical, whatever the queue"},
		{"node-critical", "caldera-sys-top", true, true, "system pods by priority first: node-critical before cluster-critical, whatever the queue"},
		{"cluster-critical", "caldera-sys-top", true, true, "equal system priority: the plain pod first"},
		{"caldera-sys-top", "caldera-sys", true, false, "two Caldera pods of system priority: Caldera's order (queue priority)"},
		{"node-critical", "cluster-critical", true, false, "two plain system pods: PrioritySort"},
		{"batch-top", "batch", true, false, "two batch pods: queue priority first"},
		{"batch", "batch-low", true, false, "two batch pods: queue priority before pod priority"},
		{"batch-low", "batch", false, false, "two batch pods: queue priority before pod priority"},
		{"batch-q0", "batch-low", true, false, "two batch pods: equal queue priority, the lower share first"},
		{"web-hi", "web-early", true, false, "two plain pods: priority first"},
		{"web-early", "web", true, false, "two plain pods of equal priority: the earlier queue entry first"},
		{"web", "web-early", false, false, "two plain pods of equal priority: the earlier queue entry first"},
	} {
		if got := q.Less(entries[tc.a], entries[tc.b]); got != tc.want {
			t.Errorf("Less(%s, %s) = %v, want %v (%s; changed: %v)", tc.a, tc.b, got, tc.want, tc.why, tc.changed)
		}
	}

	// A strict weak order over every pair and triple of the table's pods.
	wantStrictWeakOrder(t, q, all)
}

// TestLessSystemGangWhole: with the real cache, a gang with one member of
// system priority is in the system class whole (its priority is its
// highest member's), so both members come before a default-scheduler pod
// and stay adjacent; a Caldera pod of priority 0 still comes after the
// default-scheduler pod.
func TestLessSystemGangWhole(t *testing.T) {
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	member := func(name string, prio int32) *v1.Pod {
		return &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: "ns", Name: name, UID: types.UID("ns-" + name), CreationTimestamp: metav1.NewTime(t0),
				Labels: map[string]string{gangbook.PodGroupLabel: "sys"},
			},
			Spec:   v1.PodSpec{SchedulerName: "caldera-scheduler", Priority: &prio, Containers: []v1.Container{{Name: "c"}}},
			Status: v1.PodStatus{Phase: v1.PodPending},
		}
	}
	members := []*v1.Pod{member("sys-0", sysClusterCritical), member("sys-1", 0)}
	pg := &v1alpha1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "sys", UID: "ns-pg-sys", CreationTimestamp: metav1.NewTime(t0)},
		Spec:       v1alpha1.PodGroupSpec{MinMember: 2},
	}
	c, f := cachetest.New(t, []*v1alpha1.PodGroup{pg}, members)
	f.Provider().NoteProfile("caldera-scheduler", true)
	f.Provider().NoteProfile("default-scheduler", false)
	q := &QueueSort{cache: c}

	web := sysEntry(t, "web", "default-scheduler", 1000, t0)
	solo := sysEntry(t, "solo", "caldera-scheduler", 0, t0)
	var gang []*framework.QueuedPodInfo
	for _, m := range members {
		pi, err := framework.NewPodInfo(m)
		if err != nil {
			t.Fatal(err)
		}
		gang = append(gang, &framework.QueuedPodInfo{PodInfo: pi, QueueingParams: framework.QueueingParams{Timestamp: t0}})
	}
	for _, m := range gang {
		if !q.Less(m, web) || q.Less(web, m) {
			t.Errorf("member %s of a gang of system priority is not before the default-scheduler pod", m.Pod.Name)
		}
		if !q.Less(m, solo) {
			t.Errorf("member %s of a gang of system priority is not before a Caldera pod of priority 0", m.Pod.Name)
		}
	}
	if !q.Less(web, solo) || q.Less(solo, web) {
		t.Error("the default-scheduler pod is not before a Caldera pod of priority 0")
	}
	if !q.Less(gang[0], gang[1]) || q.Less(gang[1], gang[0]) {
		t.Error("Less(sys-0, sys-1) = false: one gang's members are ordered by pod name")
	}
}
