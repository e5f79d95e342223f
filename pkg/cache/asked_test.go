package cache

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/caldera-sched/caldera/pkg/admission"
)

// askedOf is the queue pod's account is charged to and the queue it asks
// for when that has no Queue (admission.State.AskedOf); ok is false when
// the pod has no account.
func askedOf(c *Cache, pod *v1.Pod) (q, asked string, ok bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	acct := c.adm.AccountLocked(pod.UID)
	if acct == nil {
		return "", "", false
	}
	return acct.Queue, c.adm.AskedOf(acct), true
}

// TestAskedQueueOfAccountsWithoutUnit follows the queue an account without
// a unit asks for (a member of a PodGroup that does not exist) as Queues
// and its namespace's label come and go: the account is charged to
// MissingQueue while the queue it names has no Queue, and moves to it when
// it is created. The name asked for is kept beside the account, not in it.
func TestAskedQueueOfAccountsWithoutUnit(t *testing.T) {
	type step struct {
		do                func(c *Cache)
		wantQ, wantAsked  string
		wantAlloc, wantMQ int64 // cpu cores allocated to wantQ and to MissingQueue
	}
	setQ := func(name string, deleted bool) func(*Cache) {
		return func(c *Cache) { c.SetQueue(mkQueue(name), deleted) }
	}
	label := func(q string) func(*Cache) { return func(c *Cache) { c.ApplyNamespace(mkNamespace("ns", q)) } }
	cases := []struct {
		name  string
		pod   *v1.Pod
		nsQ   string
		steps []step
	}{
		{
			name: "pod label names the queue",
			pod:  memberOf("ns", "m0", "nopg", inQueue("tenant-x"), boundTo("n1")),
			steps: []step{
				{nil, admission.MissingQueue, "tenant-x", 1, 1},
				{setQ("tenant-x", false), "tenant-x", "", 1, 0},
				{setQ("tenant-x", true), admission.MissingQueue, "tenant-x", 1, 1},
			},
		},
		{
			name: "namespace label names the queue",
			pod:  memberOf("ns", "m0", "nopg", boundTo("n1")),
			nsQ:  "tenant-ns",
			steps: []step{
				{nil, admission.MissingQueue, "tenant-ns", 1, 1},
				{label("default"), "default", "", 1, 0},
				{label("tenant-ns"), admission.MissingQueue, "tenant-ns", 1, 1},
				{setQ("tenant-ns", false), "tenant-ns", "", 1, 0},
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, _, _ := newAdmissionCache(t, singletons, mkQueue("default"))
			c.ApplyNode(logger, mkNode("n1", "16"))
			if tc.nsQ != "" {
				c.ApplyNamespace(mkNamespace("ns", tc.nsQ))
			}
			podEvent(c, tc.pod)
			for i, s := range tc.steps {
				if s.do != nil {
					s.do(c)
				}
				q, asked, ok := askedOf(c, tc.pod)
				if !ok || q != s.wantQ || asked != s.wantAsked {
					t.Errorf("step %d: account in %q asking %q (accounted %v), want %q asking %q", i, q, asked, ok, s.wantQ, s.wantAsked)
				}
				wantUsage(t, c, s.wantQ, s.wantAlloc, 0)
				wantUsage(t, c, admission.MissingQueue, s.wantMQ, 0)
				wantConsistent(t, c, tc.name)
			}
			c.mu.RLock()
			acct := c.adm.AccountLocked(tc.pod.UID)
			c.mu.RUnlock()
			podDelete(c, tc.pod)
			if _, _, ok := askedOf(c, tc.pod); ok {
				t.Error("the deleted pod is still accounted")
			}
			c.mu.RLock()
			defer c.mu.RUnlock()
			if got := c.adm.AskedOf(acct); got != "" {
				t.Errorf("the deleted pod's account still asks for %q: kept beside it for good", got)
			}
			wantUsage(t, c, admission.MissingQueue, 0, 0)
		})
	}
}
