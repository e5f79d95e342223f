package cache

import (
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/klog/v2"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/caldera-sched/caldera/pkg/admission"
	"github.com/caldera-sched/caldera/pkg/dialect/schedplugins"
	"github.com/caldera-sched/caldera/pkg/gang"
	"github.com/caldera-sched/caldera/pkg/resources"
)

func TestPodEventsMaintainCounts(t *testing.T) {
	p1 := mkPod("ns", "p1", "g")
	p2 := mkPod("ns", "p2", "g")
	type step struct {
		name string
		do   func(c *Cache)
		want *gang.Counts // nil: the group is not cached
	}
	cases := []struct {
		name  string
		pg    *v1alpha1.PodGroup
		steps []step
	}{{
		name: "lifecycle of one member without PodGroup",
		steps: []step{
			{"add pending", func(c *Cache) { add(c, p1) }, &gang.Counts{Members: 1, Active: 1, Pending: 1}},
			{"resync is idempotent", func(c *Cache) { update(c, p1, next(p1)) }, &gang.Counts{Members: 1, Active: 1, Pending: 1}},
			{"bound", func(c *Cache) { update(c, p1, next(p1, boundTo("n1"))) }, &gang.Counts{Members: 1, Active: 1, Placed: 1, Bound: 1}},
			{"running", func(c *Cache) { update(c, p1, next(p1, boundTo("n1"), phase(v1.PodRunning))) },
				&gang.Counts{Members: 1, Active: 1, Placed: 1, Bound: 1, Running: 1}},
			{"succeeded", func(c *Cache) { update(c, p1, next(p1, boundTo("n1"), phase(v1.PodSucceeded))) },
				&gang.Counts{Members: 1, Bound: 1, Succeeded: 1}},
			{"deleted: the group without PodGroup and members goes", func(c *Cache) { del(c, next(p1, boundTo("n1"), phase(v1.PodSucceeded))) }, nil},
		},
	}, {
		name: "failed member and tombstone delete",
		pg:   mkPG("ns", "g", 2),
		steps: []step{
			{"add two", func(c *Cache) { addAll(c, p1, p2) }, &gang.Counts{Members: 2, Active: 2, Pending: 2}},
			{"one bound and running", func(c *Cache) { update(c, p1, next(p1, boundTo("n1"), phase(v1.PodRunning))) },
				&gang.Counts{Members: 2, Active: 2, Pending: 1, Placed: 1, Bound: 1, Running: 1}},
			{"one failed unbound", func(c *Cache) { update(c, p2, next(p2, phase(v1.PodFailed))) },
				&gang.Counts{Members: 2, Active: 1, Placed: 1, Bound: 1, Running: 1, Failed: 1}},
			{"failed deleted through a tombstone", func(c *Cache) { delTombstone(c, next(p2, phase(v1.PodFailed))) },
				&gang.Counts{Members: 1, Active: 1, Placed: 1, Bound: 1, Running: 1}},
			{"running deleted: the PodGroup keeps the group", func(c *Cache) { del(c, p1) }, &gang.Counts{}},
			{"delete of an unknown pod is a no-op", func(c *Cache) { del(c, mkPod("ns", "ghost", "g")) }, &gang.Counts{}},
			{"a pod without the label is ignored", func(c *Cache) { add(c, mkPod("ns", "p1", "")) }, &gang.Counts{}},
		},
	}, {
		name: "a member that is re-added after delete counts once",
		steps: []step{
			{"add", func(c *Cache) { add(c, p1) }, &gang.Counts{Members: 1, Active: 1, Pending: 1}},
			{"add again", func(c *Cache) { add(c, next(p1)) }, &gang.Counts{Members: 1, Active: 1, Pending: 1}},
			{"delete", func(c *Cache) { del(c, p1) }, nil},
			{"delete again", func(c *Cache) { del(c, p1) }, nil},
			{"re-add", func(c *Cache) { add(c, p1) }, &gang.Counts{Members: 1, Active: 1, Pending: 1}},
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := newTestCache(t)
			if tc.pg != nil {
				addPG(c, tc.pg)
			}
			for _, s := range tc.steps {
				s.do(c)
				t.Run(s.name, func(t *testing.T) { wantCounts(t, c, key("ns", "g"), s.want) })
			}
		})
	}
}

func TestLabelChangeMovesMember(t *testing.T) {
	c, h := newTestCache(t)
	a, b := key("ns", "a"), key("ns", "b")
	hi := mkPod("ns", "hi", "a", priority(10), createdAt(t0.Add(-time.Minute)))
	lo := mkPod("ns", "lo", "a", priority(1))
	addAll(c, hi, lo)
	addPG(c, mkPG("ns", "b", 2))
	other := mkPod("ns", "other", "b")
	add(c, other)
	wantActivations(t, h)

	// hi moves from a to b: b reaches minMember and both pending members are activated.
	moved := next(hi, label("b"))
	update(c, hi, moved)
	wantCounts(t, c, a, &gang.Counts{Members: 1, Active: 1, Pending: 1})
	wantCounts(t, c, b, &gang.Counts{Members: 2, Active: 2, Pending: 2})
	if p := priorityOf(c, a); p == nil || *p != 1 {
		t.Errorf("group a priority = %v, want 1 once its priority-10 member left", p)
	}
	if p := priorityOf(c, b); p == nil || *p != 10 {
		t.Errorf("group b priority = %v, want 10", p)
	}
	wantActivations(t, h, names(moved, other))
	if got := c.SortInfo(lo); got.Priority != 1 || got.Name != "a" {
		t.Errorf("SortInfo(lo) = %+v, want priority 1 in group a", got)
	}
	if got, want := c.SortInfo(moved), c.SortInfo(other); got != want {
		t.Errorf("members of b sort apart: %+v vs %+v", got, want)
	}

	// The label goes away: the pod leaves b and no group remembers it.
	unlabelled := next(moved, label(""))
	update(c, moved, unlabelled)
	wantCounts(t, c, b, &gang.Counts{Members: 1, Active: 1, Pending: 1})
	if _, ok := c.memberOf[hi.UID]; ok {
		t.Errorf("memberOf still has the unlabelled pod")
	}
	// Its deletion must not touch b.
	del(c, unlabelled)
	wantCounts(t, c, b, &gang.Counts{Members: 1, Active: 1, Pending: 1})

	// b fell below minMember. The last member of a (no PodGroup) moves to b:
	// a is forgotten, and b, enqueueable again, has its members activated.
	loMoved := next(lo, label("b"))
	update(c, lo, loMoved)
	wantCounts(t, c, a, nil)
	wantCounts(t, c, b, &gang.Counts{Members: 2, Active: 2, Pending: 2})
	wantActivations(t, h, names(loMoved, other))
}

func TestNodesMaintainTotal(t *testing.T) {
	c, _ := newTestCache(t)
	total := func() int64 {
		c.mu.RLock()
		defer c.mu.RUnlock()
		return c.total[resources.CPU]
	}
	steps := []struct {
		name string
		do   func()
		want int64
	}{
		{"add n1", func() { c.ApplyNode(klog.Background(), mkNode("n1", "4")) }, 4000},
		{"add n2", func() { c.ApplyNode(klog.Background(), mkNode("n2", "2")) }, 6000},
		{"update n2 replaces its allocatable", func() { c.ApplyNode(klog.Background(), mkNode("n2", "500m")) }, 4500},
		{"delete n1", func() { c.DeleteNode(mkNode("n1", "4")) }, 500},
		{"delete unknown node", func() { c.DeleteNode(mkNode("n9", "4")) }, 500},
		{"delete n2", func() { c.DeleteNode(mkNode("n2", "1")) }, 0},
	}
	for _, s := range steps {
		s.do()
		if got := total(); got != s.want {
			t.Errorf("%s: total cpu = %dm, want %dm", s.name, got, s.want)
		}
	}
}

// ---------------------------------------------------------------------------
// PreEnqueue.

func TestEnqueueable(t *testing.T) {
	probe := mkPod("ns", "probe", "g")
	pods := []*v1.Pod{mkPod("ns", "p1", "g"), mkPod("ns", "p2", "g"), mkPod("ns", "p3", "g")}
	cases := []struct {
		name   string
		setup  func(c *Cache)
		pod    *v1.Pod
		member bool
		ok     bool
		msg    string
	}{
		{name: "not a member", pod: mkPod("ns", "solo", ""), member: false, ok: true},
		{name: "nothing known", pod: probe, member: true, msg: "waiting for PodGroup ns/g"},
		{name: "members without PodGroup", setup: func(c *Cache) { addAll(c, pods...) }, pod: probe, member: true, msg: "waiting for PodGroup ns/g"},
		{name: "too few members", setup: func(c *Cache) { addPG(c, mkPG("ns", "g", 3)); addAll(c, pods[:2]...) },
			pod: probe, member: true, msg: "waiting for members: 2/3"},
		{name: "enough members", setup: func(c *Cache) { addPG(c, mkPG("ns", "g", 3)); addAll(c, pods...) }, pod: probe, member: true, ok: true},
		{name: "finished members do not count", setup: func(c *Cache) {
			addPG(c, mkPG("ns", "g", 3))
			addAll(c, pods...)
			update(c, pods[2], next(pods[2], boundTo("n"), phase(v1.PodSucceeded)))
		}, pod: probe, member: true, msg: "waiting for members: 2/3"},
		{name: "invalid PodGroup", setup: func(c *Cache) { addPG(c, mkPG("ns", "g", 0)); addAll(c, pods...) },
			pod: probe, member: true, msg: "PodGroup ns/g is invalid: spec.minMember is 0, must be at least 1"},
		{name: "PodGroup deleted after the gang was enqueueable", setup: func(c *Cache) {
			addPG(c, mkPG("ns", "g", 3))
			addAll(c, pods...)
			delPG(c, mkPG("ns", "g", 3))
		}, pod: probe, member: true, msg: "waiting for PodGroup ns/g"},
		{name: "another namespace's group of the same name", setup: func(c *Cache) { addPG(c, mkPG("other", "g", 1)); add(c, mkPod("other", "x", "g")) },
			pod: probe, member: true, msg: "waiting for PodGroup ns/g"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := newTestCache(t)
			if tc.setup != nil {
				tc.setup(c)
			}
			member, ok, msg := c.Enqueueable(tc.pod)
			if member != tc.member || ok != tc.ok || msg != tc.msg {
				t.Errorf("Enqueueable = (%v, %v, %q), want (%v, %v, %q)", member, ok, msg, tc.member, tc.ok, tc.msg)
			}
		})
	}
}

func TestMembersActivatedWhenEnqueueable(t *testing.T) {
	p := func(name string, opts ...podOpt) *v1.Pod { return mkPod("ns", name, "g", opts...) }
	p1, p2, p3, p4 := p("p1"), p("p2"), p("p3"), p("p4")
	type step struct {
		do   func(c *Cache)
		want [][]string // Activate calls made by this step
	}
	cases := []struct {
		name  string
		steps []step
	}{{
		name: "PodGroup arrives after its pods",
		steps: []step{
			{do: func(c *Cache) { addAll(c, p1, p2, p3) }},
			{do: func(c *Cache) { addPG(c, mkPG("ns", "g", 3)) }, want: [][]string{names(p1, p2, p3)}},
			{do: func(c *Cache) { addPG(c, mkPG("ns", "g", 3, scheduleTimeout(5))) }}, // PodGroup update
			// A member beyond minMember: the queue may have refused it
			// before this cache counted the others.
			{do: func(c *Cache) { add(c, p4) }, want: [][]string{names(p4)}},
			{do: func(c *Cache) { update(c, p4, next(p4)) }},
			{do: func(c *Cache) { update(c, p1, next(p1, phase(v1.PodRunning), boundTo("n"))) }},
		},
	}, {
		name: "last member arrives",
		steps: []step{
			{do: func(c *Cache) { addPG(c, mkPG("ns", "g", 3)) }},
			{do: func(c *Cache) { add(c, p1) }},
			{do: func(c *Cache) { add(c, p2) }},
			{do: func(c *Cache) { update(c, p2, next(p2)) }},
			{do: func(c *Cache) { add(c, p3) }, want: [][]string{names(p1, p2, p3)}},
			{do: func(c *Cache) { add(c, p4) }, want: [][]string{names(p4)}},
			{do: func(c *Cache) { add(c, p("bound-late", boundTo("n"))) }},
			{do: func(c *Cache) { addPG(c, mkPG("ns", "g", 3)) }},
		},
	}, {
		name: "only pending members are activated",
		steps: []step{
			{do: func(c *Cache) { addPG(c, mkPG("ns", "g", 3)) }},
			{do: func(c *Cache) {
				add(c, p("bound", boundTo("n")))
				add(c, p("done", boundTo("n"), phase(v1.PodSucceeded))) // finished: does not count
				add(c, p1)
			}},
			{do: func(c *Cache) { add(c, p2) }, want: [][]string{names(p1, p2)}},
		},
	}, {
		name: "minMember lowered",
		steps: []step{
			{do: func(c *Cache) { addPG(c, mkPG("ns", "g", 5)); addAll(c, p1, p2, p3) }},
			{do: func(c *Cache) { addPG(c, mkPG("ns", "g", 3)) }, want: [][]string{names(p1, p2, p3)}},
		},
	}, {
		// kube-scheduler does not watch PodGroups: a gang that was rejected
		// (too large) is retried when a smaller minimum may fit, not when
		// only its status changes.
		name: "minMember or minResources changed on an enqueueable gang, status written",
		steps: []step{
			{do: func(c *Cache) { addPG(c, mkPG("ns", "g", 3)); addAll(c, p1, p2, p3) }, want: [][]string{names(p1, p2, p3)}},
			{do: func(c *Cache) { add(c, p4) }, want: [][]string{names(p4)}},
			{do: func(c *Cache) { addPG(c, mkPG("ns", "g", 2)) }, want: [][]string{names(p1, p2, p3, p4)}},
			{do: func(c *Cache) {
				pg := mkPG("ns", "g", 2)
				pg.Status.Phase, pg.Status.Running = v1alpha1.PodGroupScheduling, 1
				addPG(c, pg)
			}},
			{do: func(c *Cache) {
				pg := mkPG("ns", "g", 2)
				pg.Spec.MinResources = v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}
				addPG(c, pg)
			}, want: [][]string{names(p1, p2, p3, p4)}},
		},
	}, {
		name: "a gang that drops below minMember is activated again when it recovers",
		steps: []step{
			{do: func(c *Cache) { addPG(c, mkPG("ns", "g", 2)); add(c, p1) }},
			{do: func(c *Cache) { add(c, p2) }, want: [][]string{names(p1, p2)}},
			{do: func(c *Cache) { del(c, p2) }},
			{do: func(c *Cache) { add(c, p3) }, want: [][]string{names(p1, p3)}},
		},
	}, {
		name: "PodGroup recreated",
		steps: []step{
			{do: func(c *Cache) { addPG(c, mkPG("ns", "g", 2)) }},
			{do: func(c *Cache) { addAll(c, p1, p2) }, want: [][]string{names(p1, p2)}},
			{do: func(c *Cache) { delPG(c, mkPG("ns", "g", 2)) }},
			{do: func(c *Cache) { addPG(c, mkPG("ns", "g", 2)) }, want: [][]string{names(p1, p2)}},
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, h := newTestCache(t)
			for i, s := range tc.steps {
				s.do(c)
				t.Run(fmt.Sprint("step", i), func(t *testing.T) { wantActivations(t, h, s.want...) })
			}
		})
	}
}

// ---------------------------------------------------------------------------
// PreFilter.

func TestPreFilter(t *testing.T) {
	gpu := v1.ResourceName("nvidia.com/gpu")
	backoff := gang.Backoff{Base: time.Hour, Max: 4 * time.Hour}
	members := func(cpus ...string) func(c *Cache) {
		return func(c *Cache) {
			for i, q := range cpus {
				add(c, mkPod("ns", fmt.Sprint("m", i), "g", cpu(q)))
			}
		}
	}
	probe := mkPod("ns", "m0", "g")
	cases := []struct {
		name   string
		setup  func(c *Cache)
		pod    *v1.Pod
		at     time.Time
		member bool
		code   admission.PreFilterCode
		msg    string
	}{
		{name: "not a member", pod: mkPod("ns", "solo", ""), at: t0, code: admission.PreFilterOK},
		{name: "no PodGroup", setup: members("1"), pod: probe, at: t0, member: true, code: admission.PreFilterNoGroup, msg: "waiting for PodGroup ns/g"},
		{name: "fits", setup: func(c *Cache) {
			c.ApplyNode(klog.Background(), mkNode("n1", "4"))
			addPG(c, mkPG("ns", "g", 3))
			members("1", "1", "2")(c)
		}, pod: probe, at: t0, member: true, code: admission.PreFilterOK},
		{name: "larger than the cluster", setup: func(c *Cache) {
			c.ApplyNode(klog.Background(), mkNode("n1", "4"))
			addPG(c, mkPG("ns", "g", 3))
			members("2", "2", "2")(c)
		}, pod: probe, at: t0, member: true, code: admission.PreFilterTooLarge,
			msg: "PodGroup ns/g needs 6 cpu for its 3 minimum members, more than the cluster's total allocatable 4"},
		{name: "counts the minMember smallest members", setup: func(c *Cache) {
			c.ApplyNode(klog.Background(), mkNode("n1", "2500m"))
			addPG(c, mkPG("ns", "g", 2))
			members("8", "1", "1500m")(c)
		}, pod: probe, at: t0, member: true, code: admission.PreFilterOK},
		{name: "the smallest members are too large", setup: func(c *Cache) {
			c.ApplyNode(klog.Background(), mkNode("n1", "2"))
			addPG(c, mkPG("ns", "g", 2))
			members("8", "1", "1500m")(c)
		}, pod: probe, at: t0, member: true, code: admission.PreFilterTooLarge,
			msg: "PodGroup ns/g needs 2500m cpu for its 2 minimum members, more than the cluster's total allocatable 2"},
		{name: "finished members do not count", setup: func(c *Cache) {
			c.ApplyNode(klog.Background(), mkNode("n1", "2"))
			addPG(c, mkPG("ns", "g", 2))
			members("1", "1", "1")(c)
			old := mkPod("ns", "m1", "g")
			update(c, old, next(old, boundTo("n1"), phase(v1.PodSucceeded), cpu("100")))
			huge := mkPod("ns", "m2", "g")
			update(c, huge, next(huge, phase(v1.PodFailed)))
		}, pod: probe, at: t0, member: true, code: admission.PreFilterOK},
		{name: "minResources beyond the cluster", setup: func(c *Cache) {
			c.ApplyNode(klog.Background(), mkNode("n1", "64"))
			addPG(c, mkPG("ns", "g", 1, minResources(v1.ResourceList{gpu: resource.MustParse("2")})))
			members("1")(c)
		}, pod: probe, at: t0, member: true, code: admission.PreFilterTooLarge,
			msg: "PodGroup ns/g needs 2 nvidia.com/gpu for its 1 minimum members, more than the cluster's total allocatable 0"},
		{name: "cluster grew", setup: func(c *Cache) {
			c.ApplyNode(klog.Background(), mkNode("n1", "4"))
			addPG(c, mkPG("ns", "g", 3))
			members("2", "2", "2")(c)
			c.PreFilter(probe, t0)
			c.ApplyNode(klog.Background(), mkNode("n2", "2"))
		}, pod: probe, at: t0, member: true, code: admission.PreFilterOK},
		{name: "cluster shrank", setup: func(c *Cache) {
			c.ApplyNode(klog.Background(), mkNode("n1", "4"))
			c.ApplyNode(klog.Background(), mkNode("n2", "2"))
			addPG(c, mkPG("ns", "g", 3))
			members("2", "2", "2")(c)
			c.PreFilter(probe, t0)
			c.ApplyNode(klog.Background(), mkNode("n2", "1"))
		}, pod: probe, at: t0, member: true, code: admission.PreFilterTooLarge,
			msg: "PodGroup ns/g needs 6 cpu for its 3 minimum members, more than the cluster's total allocatable 5"},
		{name: "backing off", setup: func(c *Cache) {
			c.ApplyNode(klog.Background(), mkNode("n1", "64"))
			addPG(c, mkPG("ns", "g", 2))
			members("1", "1")(c)
			c.Unschedulable(logger, probe, t0, backoff, "0/1 nodes are available: 1 Insufficient cpu.")
		}, pod: mkPod("ns", "m1", "g"), at: t0.Add(59 * time.Minute), member: true, code: admission.PreFilterBackoff,
			msg: "PodGroup ns/g is backing off until 2030-01-02T04:04:05Z after: 2/2 members unschedulable: 0/1 nodes are available: 1 Insufficient cpu."},
		{name: "backoff over", setup: func(c *Cache) {
			c.ApplyNode(klog.Background(), mkNode("n1", "64"))
			addPG(c, mkPG("ns", "g", 2))
			members("1", "1")(c)
			c.Unschedulable(logger, probe, t0, backoff, "no fit")
		}, pod: probe, at: t0.Add(time.Hour), member: true, code: admission.PreFilterOK},
		{name: "second failure doubles the backoff", setup: func(c *Cache) {
			c.ApplyNode(klog.Background(), mkNode("n1", "64"))
			addPG(c, mkPG("ns", "g", 2))
			members("1", "1")(c)
			c.Unschedulable(logger, probe, t0, backoff, "no fit")
			c.Unschedulable(logger, probe, t0.Add(time.Hour), backoff, "still no fit")
		}, pod: probe, at: t0.Add(2*time.Hour + 59*time.Minute), member: true, code: admission.PreFilterBackoff,
			msg: "PodGroup ns/g is backing off until 2030-01-02T06:04:05Z after: 2/2 members unschedulable: still no fit"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := newTestCache(t)
			if tc.setup != nil {
				tc.setup(c)
			}
			member, code, msg := c.PreFilter(tc.pod, tc.at)
			if member != tc.member || code != tc.code || msg != tc.msg {
				t.Errorf("PreFilter = (%v, %v, %q)\n          want (%v, %v, %q)", member, code, msg, tc.member, tc.code, tc.msg)
			}
		})
	}
}

func TestPreFilterRecordsFirstAttempt(t *testing.T) {
	c, _ := newTestCache(t)
	addPG(c, mkPG("ns", "g", 1))
	p := mkPod("ns", "p", "g")
	add(c, p)
	c.ApplyNode(klog.Background(), mkNode("n", "8"))
	c.PreFilter(p, t0.Add(1500*time.Millisecond))
	c.PreFilter(p, t0.Add(time.Minute))
	c.mu.Lock()
	got := schedplugins.Status(v1alpha1.PodGroupStatus{}, c.adm.ProgressLocked(c.groups[key("ns", "g")])).ScheduleStartTime.Time
	c.mu.Unlock()
	if want := t0.Add(time.Second); !got.Equal(want) {
		t.Errorf("ScheduleStartTime = %v, want the first attempt truncated to seconds, %v", got, want)
	}
}

// ---------------------------------------------------------------------------
// Reserve, Permit, Unreserve, Unschedulable.
