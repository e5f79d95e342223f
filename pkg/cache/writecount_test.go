package cache

import (
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kfake "k8s.io/client-go/kubernetes/fake"
	pgfake "sigs.k8s.io/scheduler-plugins/pkg/generated/clientset/versioned/fake"

	"github.com/caldera-sched/caldera/pkg/dialect/upstream"
	"github.com/caldera-sched/caldera/pkg/dialect/volcano"
	"github.com/caldera-sched/caldera/pkg/queue"
)

// A backlog of 1000 pods in 100 gangs behind a queue's capability, whose
// head moves every round (the admitted gang runs and completes, the next is
// admitted): the verdicts of the gangs behind change their numbers every
// round ("remaining capability 4", then 1, ...) but not their meaning. Each
// such gang's PodGroup is written once for its verdict (status, and the
// annotation or condition that carries it), not once per moving number; a
// refresh comes at most every VerdictRefresh, longer than this test runs.
// Gangs of 6 and 3 one-cpu pods alternate, so the remaining capability
// moves.
func TestBacklogWritesFollowTheVerdictNotItsNumbers(t *testing.T) {
	const gangs, rounds = 100, 20
	size := func(i int) int32 { return []int32{6, 3}[i%2] }
	name := func(i int) string { return fmt.Sprintf("g%03d", i) }
	members := func(i int, member func(ns, name, group string, opts ...podOpt) *v1.Pod) []*v1.Pod {
		var out []*v1.Pod
		for j := range size(i) {
			out = append(out, member("ns", fmt.Sprintf("%s-%d", name(i), j), name(i), cpu("1"),
				createdAt(t0.Add(time.Duration(i)*time.Second))))
		}
		return out
	}
	// run plays the rounds; echo delivers the PodGroups as written to the
	// cache, as its informer would (each write comes back as an update);
	// writesOf counts the API writes to a PodGroup.
	run := func(t *testing.T, c *Cache, pods [][]*v1.Pod, echo func(), writesOf func(name string) int) {
		t.Helper()
		c.ApplyNode(logger, mkNode("n1", "100"))
		for _, ps := range pods {
			for _, p := range ps {
				podEvent(c, p)
			}
		}
		at := t0.Add(time.Hour)
		admittedEver := map[string]bool{}
		for r := range rounds {
			at = at.Add(time.Second)
			pass(c, at)
			syncStatus(c)
			echo()
			for i, ps := range pods {
				if u := unitOf(c, queue.GroupUnit("ns", name(i))); u != nil && u.Admitted && !admittedEver[name(i)] {
					admittedEver[name(i)] = true
					for _, p := range ps {
						podEvent(c, next(p, boundTo("n1"), phase(v1.PodRunning)))
					}
					for _, p := range ps {
						c.ApplyFinishedPod(logger, nil, next(p, boundTo("n1"), phase(v1.PodSucceeded)))
						c.onAnyPod(next(p, boundTo("n1"), phase(v1.PodSucceeded)), true)
					}
				}
			}
			if r == 0 && len(admittedEver) == 0 {
				t.Fatal("no gang admitted in the first round")
			}
		}
		if len(admittedEver) < rounds/2 {
			t.Fatalf("the head moved only %d times in %d rounds", len(admittedEver), rounds)
		}
		for i := range pods {
			if admittedEver[name(i)] {
				continue
			}
			// Two verdicts ("waiting behind" the head, then the
			// capability once the head is admitted), each in the status
			// (Volcano's condition) and the verdict annotation: at most
			// 4 writes; one per moving number would be 20 or more.
			if n := writesOf(name(i)); n > 4 {
				t.Errorf("%s, pending throughout: %d writes in %d rounds, want at most 4", name(i), n, rounds)
			}
		}
	}

	t.Run("scheduler-plugins", func(t *testing.T) {
		c, _, _ := newAdmissionCache(t, singletons, mkQueue("q", capability("10")))
		var objs []runtime.Object
		var pods [][]*v1.Pod
		for i := range gangs {
			pg := mkPG("ns", name(i), size(i), pgQueue("q"))
			objs = append(objs, pg)
			addPG(c, pg)
			pods = append(pods, members(i, memberOf))
		}
		pgc := pgfake.NewSimpleClientset(objs...)
		withPodGroups(c, pgc, nil)
		echo := func() {
			list, _ := pgc.SchedulingV1alpha1().PodGroups("ns").List(t.Context(), metav1.ListOptions{})
			for i := range list.Items {
				addPG(c, &list.Items[i])
			}
		}
		run(t, c, pods, echo, func(n string) int {
			w := 0
			for _, a := range pgc.Actions() {
				if o, ok := a.(interface{ GetName() string }); ok && o.GetName() == n && (a.GetVerb() == "patch" || a.GetVerb() == "update") {
					w++
				}
			}
			return w
		})
	})
	t.Run("upstream", func(t *testing.T) {
		c, h, _ := newAdmissionCache(t, singletons, mkQueue("q", capability("10")))
		var objs []runtime.Object
		var pods [][]*v1.Pod
		for i := range gangs {
			pg := mkUpstreamPG("ns", name(i), size(i), "q")
			pg.CreationTimestamp.Time = t0.Add(time.Duration(i) * time.Second)
			objs = append(objs, pg)
			c.SetGroup(logger, upstream.Spec(pg))
			pods = append(pods, members(i, upstreamMember))
		}
		kube := kfake.NewClientset(objs...)
		h.cs = kube
		addAdapter(c, upstreamObjects{kube})
		echo := func() {
			list, _ := kube.SchedulingV1beta1().PodGroups("ns").List(t.Context(), metav1.ListOptions{})
			for i := range list.Items {
				c.SetGroup(logger, upstream.Spec(&list.Items[i]))
			}
		}
		run(t, c, pods, echo, func(n string) int {
			w := 0
			for _, a := range kube.Actions() {
				if o, ok := a.(interface{ GetName() string }); ok && o.GetName() == n && a.GetResource().Resource == "podgroups" &&
					(a.GetVerb() == "patch" || a.GetVerb() == "update") {
					w++
				}
			}
			return w
		})
	})
	t.Run("volcano", func(t *testing.T) {
		c, _, _ := newAdmissionCache(t, singletons, mkQueue("q", capability("10")))
		var objs []any
		var pods [][]*v1.Pod
		for i := range gangs {
			pg := mkVolcanoPG("ns", name(i), size(i), "q", "")
			pg.CreationTimestamp.Time = t0.Add(time.Duration(i) * time.Second)
			objs = append(objs, pg)
			c.SetGroup(logger, volcano.Spec(pg))
			pods = append(pods, members(i, volcanoMember))
		}
		vcc := withVolcano(t, c, objs...)
		echo := func() {
			vcc.refresh(t)
			for _, pg := range vcc.pgs {
				c.SetGroup(logger, volcano.Spec(pg))
			}
		}
		run(t, c, pods, echo, func(n string) int { return vcc.patchesOf[n] })
	})
}
