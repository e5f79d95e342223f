package cache

import (
	"encoding/json"
	"fmt"
	"maps"
	"testing"

	v1 "k8s.io/api/core/v1"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/caldera-sched/caldera/pkg/admission"
	qfake "github.com/caldera-sched/caldera/pkg/apis/generated/clientset/versioned/fake"
	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
)

// newListingCache is newAdmissionCache as a restart finds it: the
// scheduler's pod informer has not yet listed the gang members
// (MembersListed not called).
func newListingCache(tb testing.TB, opts admission.Options, queues ...*qapi.Queue) *Cache {
	c, _ := newUnlistedCache(tb)
	enableAdmission(c, opts, qfake.NewSimpleClientset())
	for _, q := range queues {
		c.SetQueue(q, false)
	}
	return c
}

// restartList is a restart's first list: PodGroups read before and after
// their members, admitted gangs started, short of members and with members
// beyond their minimum, a gang waiting for admission, members without a
// PodGroup, a member that finished, and singletons bound and pending.
type restartList struct {
	early, late []*v1alpha1.PodGroup
	pods        []*v1.Pod
	finished    *v1.Pod
}

func newRestartList() restartList {
	var l restartList
	l.early = []*v1alpha1.PodGroup{
		mkPG("ns", "started", 4, admittedAt, pgQueue("q0")),
		mkPG("ns", "short", 4, admittedAt, pgQueue("q0")),
		mkPG("ns", "extra", 2, admittedAt, pgQueue("q1")),
		mkPG("ns", "waits", 3, pgQueue("q1")),
	}
	l.late = []*v1alpha1.PodGroup{mkPG("ns", "late", 2, pgQueue("q0"))}
	members := func(group string, bound, pending int) {
		for i := range bound {
			node := boundTo(fmt.Sprint("n", i%4))
			l.pods = append(l.pods, memberOf("ns", fmt.Sprint(group, i), group, node, phase(v1.PodRunning)))
		}
		for i := range pending {
			l.pods = append(l.pods, memberOf("ns", fmt.Sprint(group, "-p", i), group, cpu("2")))
		}
	}
	members("started", 4, 0)
	members("short", 2, 1)
	members("extra", 2, 2)
	members("waits", 0, 3)
	members("late", 2, 0)
	members("nopg", 2, 0)
	for i := range 3 {
		l.pods = append(l.pods, single("ns", fmt.Sprint("s", i), boundTo("n1"), inQueue("q0"), phase(v1.PodRunning)))
	}
	for i := range 2 {
		l.pods = append(l.pods, single("ns", fmt.Sprint("s-p", i), inQueue("q1")))
	}
	l.finished = next(l.pods[0], phase(v1.PodSucceeded))
	return l
}

// feed delivers l to c as the informers do at start: nodes and the early
// PodGroups, the pods, a member finishing, the late PodGroups; then the
// scheduler's pod informer has listed.
func (l restartList) feed(c *Cache) {
	for i := range 4 {
		c.ApplyNode(logger, mkNode(fmt.Sprint("n", i), "16"))
	}
	for _, pg := range l.early {
		addPG(c, pg)
	}
	for _, p := range l.pods {
		c.ApplyPod(logger, nil, p)
	}
	c.DeletePod(logger, l.pods[0])
	c.ApplyFinishedPod(logger, nil, l.finished)
	for _, pg := range l.late {
		addPG(c, pg)
	}
	c.MembersListed(logger)
}

// seen is what a cache shows of itself: its dump (groups, queues, units
// in order), each pod's PreEnqueue answer and admission.
func (l restartList) seen(t *testing.T, c *Cache) string {
	t.Helper()
	raw, err := json.Marshal(c.snapshot(t0))
	if err != nil {
		t.Fatal(err)
	}
	var d any
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	out, err := json.MarshalIndent(withoutZeros(d), "", " ")
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	for _, p := range l.pods {
		member, ok, msg := c.Enqueueable(p)
		adm, why := c.Admitted(p)
		s += fmt.Sprintf("\n%s: enqueueable %v %v %q, admitted %v %q", p.Name, member, ok, msg, adm, why)
	}
	return s
}

// A restart's first list joins members to their groups without refreshing
// each group at each member (joinLocked): once MembersListed has run, and
// after an admission pass, the cache shows what a cache that refreshed at
// every member shows.
func TestRestartListRefreshesGroupsOnce(t *testing.T) {
	l := newRestartList()
	queues := func() []*qapi.Queue { return []*qapi.Queue{mkQueue("q0"), mkQueue("q1")} }
	listing := newListingCache(t, singletons, queues()...)
	synced, _, _ := newAdmissionCache(t, singletons, queues()...)
	l.feed(listing)
	l.feed(synced)
	if got, want := l.seen(t, listing), l.seen(t, synced); got != want {
		t.Fatalf("after the list, a restarted cache shows\n%s\nwant (refreshed at every member)\n%s", got, want)
	}
	pass(listing, t0)
	pass(synced, t0)
	if got, want := l.seen(t, listing), l.seen(t, synced); got != want {
		t.Fatalf("after a pass, a restarted cache shows\n%s\nwant (refreshed at every member)\n%s", got, want)
	}
}

// withoutZeros drops the zero numbers of d's objects: a resource list
// holds a resource at 0 or not at all depending on how its amounts came
// and went, and both say the same (resources.List.Equal).
func withoutZeros(d any) any {
	switch v := d.(type) {
	case map[string]any:
		for k, e := range v {
			if n, ok := e.(float64); ok && n == 0 {
				delete(v, k)
				continue
			}
			v[k] = withoutZeros(e)
		}
	case []any:
		for i, e := range v {
			v[i] = withoutZeros(e)
		}
	}
	return d
}

// A gang a restart finds with its minimum bound was told it was scheduled
// by the process that bound it: the new process posts no Scheduled Event
// for it (a failover posted one per running gang). A gang that binds after
// the list is told.
func TestRestartDoesNotRetellScheduledGangs(t *testing.T) {
	c := newListingCache(t, singletons, mkQueue("q"))
	c.ApplyNode(logger, mkNode("n1", "8"))
	addPG(c, mkPG("ns", "ran", 2, pgQueue("q"), admittedAt))
	addPG(c, mkPG("ns", "new", 2, pgQueue("q")))
	for _, p := range []*v1.Pod{
		next(memberOf("ns", "r0", "ran", cpu("1")), boundTo("n1"), phase(v1.PodRunning)),
		next(memberOf("ns", "r1", "ran", cpu("1")), boundTo("n1"), phase(v1.PodRunning)),
	} {
		podEvent(c, p)
	}
	n0, n1 := memberOf("ns", "n0", "new", cpu("1")), memberOf("ns", "n1", "new", cpu("1"))
	podEvent(c, n0)
	podEvent(c, n1)
	c.MembersListed(logger)
	told := func() map[string]string {
		out := map[string]string{}
		for _, w := range c.GroupStatusWork(t0) {
			if w.Notice.Reason != "" {
				out[w.Key.Name] = w.Notice.Reason
			}
		}
		return out
	}
	if got := told(); len(got) != 0 {
		t.Errorf("after the restart's list the groups were told %v, want nothing", got)
	}

	pass(c, t0)
	for _, p := range []*v1.Pod{n0, n1} {
		podEvent(c, next(p, boundTo("n1"), phase(v1.PodRunning)))
	}
	if got, want := told(), map[string]string{"new": "Scheduled"}; !maps.Equal(got, want) {
		t.Errorf("once the new gang bound the groups were told %v, want %v", got, want)
	}
}
