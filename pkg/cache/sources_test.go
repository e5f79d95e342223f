package cache

import (
	"context"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	pgfake "sigs.k8s.io/scheduler-plugins/pkg/generated/clientset/versioned/fake"

	"github.com/caldera-sched/caldera/pkg/gang"
)

// A member that finishes leaves the scheduler's pod informer (a delete with
// its last unfinished state) and enters the finished-member informer, in
// either order. Both orders end with the same counts; when the scheduler's
// informer speaks first, the group's status waits for the other, so that no
// status shows the member missing.
func TestFinishedMemberInEitherOrder(t *testing.T) {
	running := gang.Counts{Members: 2, Active: 2, Placed: 2, Bound: 2, Running: 2}
	finished := gang.Counts{Members: 2, Active: 1, Placed: 1, Bound: 2, Running: 1, Succeeded: 1}
	for _, tc := range []struct {
		name          string
		finishedFirst bool
		// between: the counts after the first informer spoke.
		between gang.Counts
	}{
		{"finished-member informer first", true, finished},
		{"scheduler's informer first", false, gang.Counts{Members: 1, Active: 1, Placed: 1, Bound: 1, Running: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _, pods := gangOf(t, 2, 2)
			withPodGroups(c, pgfake.NewSimpleClientset(mkPG("ns", "g", 2)), nil)
			var live []*v1.Pod
			for _, p := range pods {
				r := next(p, boundTo("n1"), phase(v1.PodRunning))
				update(c, p, r)
				live = append(live, r)
			}
			wantCounts(t, c, key("ns", "g"), &running)
			syncStatus(c)

			done := next(live[0], phase(v1.PodSucceeded))
			if tc.finishedFirst {
				c.ApplyFinishedPod(logger, nil, done)
			} else {
				c.onUnfinishedPodDelete(logger, live[0])
				wantCounts(t, c, key("ns", "g"), &tc.between)
				syncStatus(c)
				if got := pgStatus(t, c); got.Running != 2 || got.Phase != v1alpha1.PodGroupRunning {
					t.Errorf("status written while a member may be finishing: %+v", got)
				}
			}
			wantCounts(t, c, key("ns", "g"), &tc.between)
			if tc.finishedFirst {
				c.onUnfinishedPodDelete(logger, live[0])
			} else {
				c.ApplyFinishedPod(logger, nil, done)
			}
			wantCounts(t, c, key("ns", "g"), &finished)
			syncStatus(c)
			if got := pgStatus(t, c); got.Running != 1 || got.Succeeded != 1 {
				t.Errorf("status = %+v, want 1 running and 1 succeeded", got)
			}
		})
	}
}

// A bound member deleted outright leaves at once; its group's status follows
// finishSettle later, when no finish can be on its way.
func TestDeletedBoundMemberLeavesAtOnce(t *testing.T) {
	c, _, pods := gangOf(t, 2, 1)
	withPodGroups(c, pgfake.NewSimpleClientset(mkPG("ns", "g", 1)), nil)
	r0 := next(pods[0], boundTo("n1"), phase(v1.PodRunning))
	update(c, pods[0], r0)
	syncStatus(c)
	del(c, r0)
	wantCounts(t, c, key("ns", "g"), &gang.Counts{Members: 1, Active: 1, Pending: 1})
	syncStatus(c)
	if got := pgStatus(t, c); got.Running != 1 {
		t.Errorf("status written within finishSettle of the delete: %+v", got)
	}
	c.mu.Lock()
	g := c.groups[key("ns", "g")]
	if d := time.Until(g.Finishing[r0.UID]); d <= 0 || d > finishSettle {
		t.Errorf("the delete holds status for %v, want within (0, %v]", d, finishSettle)
	}
	g.Finishing[r0.UID] = time.Now().Add(-time.Millisecond) // finishSettle has passed
	c.mu.Unlock()
	syncStatus(c)
	if got := pgStatus(t, c); got.Running != 0 {
		t.Errorf("status after finishSettle = %+v, want 0 running", got)
	}
	if g.Finishing != nil {
		t.Errorf("finishing not forgotten: %v", g.Finishing)
	}
	// An unbound member cannot be finishing: its delete holds nothing.
	del(c, pods[1])
	if _, ok := c.groups[key("ns", "g")]; ok && c.groups[key("ns", "g")].Finishing != nil {
		t.Errorf("an unbound member's delete held status: %v", c.groups[key("ns", "g")].Finishing)
	}
}

// Events of the scheduler's informer that arrive after the finished-member
// informer delivered the pod are older than what it said: a pod never leaves a
// terminal phase.
func TestLateUnfinishedEventsAfterFinish(t *testing.T) {
	c, _, pods := gangOf(t, 1, 1)
	r := next(pods[0], boundTo("n1"), phase(v1.PodRunning))
	c.onUnfinishedPod(logger, r)
	c.ApplyFinishedPod(logger, nil, next(r, phase(v1.PodFailed)))
	c.onUnfinishedPod(logger, r) // the scheduler's informer lags
	want := gang.Counts{Members: 1, Bound: 1, Failed: 1}
	wantCounts(t, c, key("ns", "g"), &want)
	c.onUnfinishedPodDelete(logger, r)
	wantCounts(t, c, key("ns", "g"), &want)
	// A finished pod delivered by the scheduler's informer (it has none)
	// is left to the other: a pod without the other's word stays as it was.
	c.onUnfinishedPod(logger, next(mkPod("ns", "other", "g"), phase(v1.PodSucceeded)))
	wantCounts(t, c, key("ns", "g"), &want)
	// And a pod without a phase, which both selectors match, is unfinished.
	c.ApplyFinishedPod(logger, nil, next(mkPod("ns", "nophase", "g"), phase("")))
	wantCounts(t, c, key("ns", "g"), &want)
}

// Until the scheduler's pod informer has delivered its initial list, a
// group's members may be missing: gang pods wait in PreEnqueue and no status
// is written. Then the waiting pods of enqueueable groups are activated.
func TestGangPodsWaitForTheMemberList(t *testing.T) {
	h := newFakeHandle()
	c := newEmpty(context.Background(), h)
	c.queueSeen.Store(true)
	withPodGroups(c, pgfake.NewSimpleClientset(mkPG("ns", "g", 2)), nil)
	addPG(c, mkPG("ns", "g", 2))
	p0, p1 := mkPod("ns", "p0", "g"), mkPod("ns", "p1", "g")
	add(c, p0)
	add(c, p1)
	h.activations()

	if member, ok, msg := c.Enqueueable(p0); !member || ok || msg != "waiting for the scheduler's pod informer to list gang members" {
		t.Errorf("Enqueueable before the list = %v %v %q, want a refusal that says why", member, ok, msg)
	}
	syncStatus(c)
	if got := pgStatus(t, c); got.Phase != "" {
		t.Errorf("status written before the list: %+v", got)
	}
	if len(c.dirty) == 0 {
		t.Error("the group is no longer dirty: its status would never be written")
	}

	c.membersListed(klog.Background())
	if got, want := h.activations(), [][]string{{"ns/p0", "ns/p1"}}; !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("activations after the list = %v, want %v", got, want)
	}
	if _, ok, msg := c.Enqueueable(p0); !ok {
		t.Errorf("Enqueueable after the list refused: %s", msg)
	}
	syncStatus(c)
	if got := pgStatus(t, c); got.Phase != v1alpha1.PodGroupPending {
		t.Errorf("status after the list = %+v, want phase Pending", got)
	}
}

func pgStatus(t *testing.T, c *Cache) v1alpha1.PodGroupStatus {
	t.Helper()
	pg, err := podGroupClient(c).SchedulingV1alpha1().PodGroups("ns").Get(context.Background(), "g", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pg.Status
}
