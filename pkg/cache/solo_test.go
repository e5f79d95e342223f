package cache

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestSingletonAccountsOfOneName follows two singletons of one name (the
// second, another uid, delivered before the first's deletion) through
// their one unit: a singleton's own account is found through its unit's
// pod rather than listed, and must still move with the unit, stay found
// when the unit passes to the other pod or is dropped, and leave exactly
// what it held. Each step's answers are those of the code that listed
// every account.
func TestSingletonAccountsOfOneName(t *testing.T) {
	c, _, _ := newAdmissionCache(t, singletons, mkQueue("a"), mkQueue("b"))
	c.ApplyNode(logger, mkNode("n1", "16"))
	c.ApplyNamespace(mkNamespace("ns", "a"))
	first := single("ns", "s", boundTo("n1"))
	second := single("ns", "s", boundTo("n1"), func(p *v1.Pod) { p.UID = types.UID("uid-second") })
	steps := []struct {
		name string
		do   func()
		// the queue of each pod's account ("" for none), and the cores
		// allocated to queues a and b
		first, second string
		a, b          int64
	}{
		{"the first bound", func() { c.ApplyPod(logger, nil, first) }, "a", "", 1, 0},
		{"the second, same name", func() { c.ApplyPod(logger, nil, second) }, "a", "a", 2, 0},
		{"the namespace moves to b", func() { c.ApplyNamespace(mkNamespace("ns", "b")) }, "b", "b", 0, 2},
		{"the first deleted, the unit with it", func() { c.DeletePod(logger, first) }, "", "b", 0, 1},
		{"the namespace back to a", func() { c.ApplyNamespace(mkNamespace("ns", "a")) }, "", "b", 0, 1},
		{"the second updated", func() { c.ApplyPod(logger, second, next(second)) }, "", "a", 1, 0},
		{"the namespace to b again", func() { c.ApplyNamespace(mkNamespace("ns", "b")) }, "", "b", 0, 1},
		{"the second deleted", func() { c.DeletePod(logger, second) }, "", "", 0, 0},
	}
	for _, s := range steps {
		s.do()
		for _, p := range []struct {
			pod  *v1.Pod
			want string
		}{{first, s.first}, {second, s.second}} {
			if q, _, _ := askedOf(c, p.pod); q != p.want {
				t.Errorf("%s: pod %s accounted in %q, want %q", s.name, p.pod.UID, q, p.want)
			}
		}
		wantUsage(t, c, "a", s.a, 0)
		wantUsage(t, c, "b", s.b, 0)
		wantConsistent(t, c, s.name)
		if errs := indexErrors(c); len(errs) > 0 {
			t.Errorf("%s: %s", s.name, strings.Join(errs, "; "))
		}
	}
}
