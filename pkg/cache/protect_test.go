package cache

import (
	"fmt"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/caldera-sched/caldera/pkg/disruption"
)

// protectedNames are the pods the writer is handed to protect, sorted.
func protectedNames(c *Cache) []string {
	var out []string
	for _, p := range c.Protection().Take(1000) {
		out = append(out, p.Name)
	}
	slices.Sort(out)
	return out
}

// A gang's members are handed to the writer, once, when they are bound and
// lack an annotation that keeps autoscalers off their nodes; a pending
// member, a finished one, a member that has both keys, a singleton and a
// gang of one are not; a member deleted before the writer's pass is
// forgotten, and a failed patch is handed out again while the pod is a
// member.
func TestPodsToProtect(t *testing.T) {
	c, _ := newTestCache(t)
	c.ApplyNode(logger, mkNode("n1", "16"))
	addPG(c, mkPG("ns", "g", 2))
	addPG(c, mkPG("ns", "one", 1))
	m0, m1 := memberOf("ns", "m0", "g"), memberOf("ns", "m1", "g")
	add(c, m0)
	add(c, m1)
	if got := protectedNames(c); got != nil {
		t.Fatalf("pending members handed out: %v", got)
	}
	keyed := func(p *v1.Pod) {
		p.Annotations = map[string]string{disruption.KarpenterDoNotDisrupt: "false", disruption.ClusterAutoscalerSafeToEvict: "true"}
	}
	m2 := memberOf("ns", "m2", "g", keyed)
	add(c, m2)
	add(c, next(m0, boundTo("n1"), phase(v1.PodRunning)))
	add(c, next(m1, boundTo("n1"), phase(v1.PodRunning)))
	add(c, next(m2, boundTo("n1"), phase(v1.PodRunning)))
	add(c, next(memberOf("ns", "solo", "one"), boundTo("n1"), phase(v1.PodRunning)))
	add(c, single("ns", "s", boundTo("n1"), phase(v1.PodRunning)))
	if got, want := protectedNames(c), []string{"m0", "m1"}; !slices.Equal(got, want) {
		t.Fatalf("handed out %v, want %v", got, want)
	}
	if got := protectedNames(c); got != nil {
		t.Fatalf("handed out again: %v", got)
	}

	// m1's patch failed: it is handed out again. m0 is deleted first, and
	// an update of m1 that shows it protected takes it back.
	c.Protection().Retry(next(m0, boundTo("n1")))
	c.Protection().Retry(next(m1, boundTo("n1")))
	del(c, next(m0, boundTo("n1"), phase(v1.PodRunning)))
	c.Protection().Retry(next(m0, boundTo("n1")))
	if got, want := protectedNames(c), []string{"m1"}; !slices.Equal(got, want) {
		t.Fatalf("after the retry handed out %v, want %v", got, want)
	}
	c.Protection().Retry(next(m1, boundTo("n1")))
	add(c, next(m1, boundTo("n1"), phase(v1.PodRunning), keyed))
	if got := protectedNames(c); got != nil {
		t.Fatalf("a protected member handed out: %v", got)
	}
	// Finished, a member needs nothing.
	m3 := memberOf("ns", "m3", "g")
	add(c, next(m3, boundTo("n1"), phase(v1.PodRunning)))
	add(c, next(m3, boundTo("n1"), phase(v1.PodSucceeded)))
	if got := protectedNames(c); got != nil {
		t.Fatalf("a finished member handed out: %v", got)
	}
}

// Protection().Take hands out at most its limit, each member once, and keeps
// the rest for later calls.
func TestPodsToProtectBounded(t *testing.T) {
	c, _ := newTestCache(t)
	c.ApplyNode(logger, mkNode("n1", "1000"))
	const n = 60
	addPG(c, mkPG("ns", "g", n))
	for i := range n {
		add(c, next(memberOf("ns", fmt.Sprint("m", i), "g"), boundTo("n1"), phase(v1.PodRunning)))
	}
	seen := map[string]bool{}
	for call, want := range []int{25, 25, 10, 0} {
		got := c.Protection().Take(25)
		if len(got) != want {
			t.Fatalf("call %d handed out %d, want %d", call+1, len(got), want)
		}
		for _, p := range got {
			if seen[p.Name] {
				t.Fatalf("%s handed out twice", p.Name)
			}
			seen[p.Name] = true
		}
	}
	if len(seen) != n {
		t.Errorf("handed out %d distinct members, want %d", len(seen), n)
	}
}

// Members the initial list finds unprotected are a backlog the writer
// works through a few a pass; a gang bound after the start goes first.
func TestPodsToProtectFreshFirst(t *testing.T) {
	c, _ := newTestCache(t)
	c.membersSynced = newOnceSignal("test") // the initial list is being delivered
	c.ApplyNode(logger, mkNode("n1", "1000"))
	addPG(c, mkPG("ns", "old", 30))
	addPG(c, mkPG("ns", "new", 5))
	for i := range 30 {
		add(c, next(memberOf("ns", fmt.Sprint("old-", i), "old"), boundTo("n1"), phase(v1.PodRunning)))
	}
	c.membersSynced.fire()
	// An old member's later event leaves it in the backlog.
	add(c, next(memberOf("ns", "old-0", "old"), boundTo("n1"), phase(v1.PodRunning), label("old")))
	var fresh []string
	for i := range 5 {
		add(c, next(memberOf("ns", fmt.Sprint("new-", i), "new"), boundTo("n1"), phase(v1.PodRunning)))
		fresh = append(fresh, fmt.Sprint("new-", i))
	}
	var got []string
	for _, p := range c.Protection().Take(5) {
		got = append(got, p.Name)
	}
	slices.Sort(got)
	if !slices.Equal(got, fresh) {
		t.Errorf("first handed out %v, want the gang bound after the start %v", got, fresh)
	}
	if n := len(c.Protection().Take(100)); n != 30 {
		t.Errorf("then %d of the backlog, want 30", n)
	}
}
