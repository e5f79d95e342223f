// Package gangtable is the per-API gang behaviour table: the same
// scenarios, on the real apiserver with the shipped configuration (queue
// admission included), run once per gang API Caldera reads. Whatever API
// declared a gang — scheduler-plugins', Volcano's or Kubernetes' own — it
// fits whole, binds all or nothing, waits for its members, is held by its
// queue's capability, gets its queue's weighted share, is reclaimed from
// by a starved queue and preempted by a higher-priority gang of its queue
// alike. test/integration/volcano runs it for the first two,
// test/integration/upstreamgangs for the third.
package gangtable

import (
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/caldera-sched/caldera/test/integration/harness"
)

const (
	timeout = 30 * time.Second
	// quiet is how long a scenario watches for something that must not happen.
	quiet = 4 * time.Second
	// converge bounds a reclaim or preemption: evictions, then the
	// preemptor's binding; and the first division of a contended cluster.
	converge = 90 * time.Second
)

// Source is one gang API as the scenarios use it.
type Source struct {
	// Name names the API in the subtests' names.
	Name string
	// Queue creates a reclaimable queue of weight, with a cpu capability
	// unless cpu is "", removed when the test ends.
	Queue func(t *testing.T, name string, weight int32, cpu string)
	// Group creates a PodGroup of minMember in queue (none when ""),
	// whose members will each request cpu.
	Group func(t *testing.T, ns, name, queue string, minMember int32, cpu string)
	// Members builds n pods of group, named group-0 … group-(n-1), each
	// requesting cpu, joined to it as the API joins them.
	Members func(ns, group string, n int, cpu string) []*v1.Pod
	// StartScheduler starts the scheduler with the shipped configuration.
	StartScheduler func(t *testing.T)
}

// Run runs every scenario once per source, each in a namespace of its
// own with nodes of its own.
func Run(t *testing.T, env *harness.Env, sources ...Source) {
	for _, s := range sources {
		run(t, env, s)
	}
}

func run(t *testing.T, env *harness.Env, d Source) {
	t.Run(d.Name+"/gang that fits is bound whole", func(t *testing.T) {
		ns := env.Namespace(t)
		env.AddNodes(t, 2, "4", "8Gi")
		d.StartScheduler(t)
		d.Group(t, ns, "fits", "", 4, "1")
		pods := env.CreatePods(t, d.Members(ns, "fits", 4, "1")...)
		env.WaitBound(t, ns, timeout, Names(pods)...)
	})
	t.Run(d.Name+"/gang of 6 where 4 fit binds none", func(t *testing.T) {
		ns := env.Namespace(t)
		env.AddNodes(t, 4, "1500m", "8Gi")
		d.StartScheduler(t)
		d.Group(t, ns, "toobig", "", 6, "1")
		env.CreatePods(t, d.Members(ns, "toobig", 6, "1")...)
		env.WaitEvent(t, ns, "toobig", "NotAdmitted", timeout)
		env.ConsistentlyUnbound(t, ns, quiet)
	})
	t.Run(d.Name+"/gang waits for its members", func(t *testing.T) {
		ns := env.Namespace(t)
		env.AddNodes(t, 2, "4", "8Gi")
		d.StartScheduler(t)
		d.Group(t, ns, "wait", "", 3, "1")
		pods := d.Members(ns, "wait", 3, "1")
		env.CreatePods(t, pods[:2]...)
		env.ConsistentlyUnbound(t, ns, quiet)
		env.CreatePod(t, pods[2])
		env.WaitBound(t, ns, timeout, Names(pods)...)
	})
	t.Run(d.Name+"/queue capability holds the second gang", func(t *testing.T) {
		ns := env.Namespace(t)
		env.AddNodes(t, 2, "4", "8Gi")
		q := "cap-" + ns
		d.Queue(t, q, 1, "4")
		d.StartScheduler(t)
		d.Group(t, ns, "a", q, 2, "1500m")
		a := env.CreatePods(t, d.Members(ns, "a", 2, "1500m")...)
		env.WaitBound(t, ns, timeout, Names(a)...)
		d.Group(t, ns, "b", q, 2, "1500m")
		b := env.CreatePods(t, d.Members(ns, "b", 2, "1500m")...)
		ev := env.WaitEvent(t, ns, "b", "NotAdmitted", timeout)
		if want := "queue " + q + ": cpu request 3 exceeds remaining capability 1"; ev.Note != want {
			t.Errorf("NotAdmitted note = %q, want %q", ev.Note, want)
		}
		env.ConsistentlyUnbound(t, ns, quiet, Names(b)...)
	})
	t.Run(d.Name+"/queues of weights 1 and 3 share 16 cpu as 4 and 12", func(t *testing.T) {
		ns := env.Namespace(t)
		env.AddNodes(t, 4, "4", "16Gi")
		light, heavy := "light-"+ns, "heavy-"+ns
		d.Queue(t, light, 1, "")
		d.Queue(t, heavy, 3, "")
		// Both queues' demand, 8 gangs of 2 each (16 cpu), is in place
		// before the scheduler starts, so its first pass divides the
		// cluster between them.
		for i := range 8 {
			for _, q := range []string{light, heavy} {
				g := fmt.Sprintf("%s%d", strings.SplitN(q, "-", 2)[0], i)
				d.Group(t, ns, g, q, 2, "1")
				env.CreatePods(t, d.Members(ns, g, 2, "1")...)
			}
		}
		d.StartScheduler(t)
		env.WaitBoundCount(t, ns, "", 16, converge)
		env.ConsistentlyBoundCount(t, ns, 16, quiet)
		l, h := 0, 0
		for i := range 8 {
			l += Running(t, env, ns, fmt.Sprintf("light%d", i))
			h += Running(t, env, ns, fmt.Sprintf("heavy%d", i))
		}
		t.Logf("bound: light %d cpu, heavy %d cpu", l, h)
		// One gang of 2 either way: admission divides in whole gangs.
		if l < 2 || l > 6 || h < 10 || h > 14 {
			t.Errorf("bound light=%d heavy=%d, want 4 and 12 (+-2: one gang)", l, h)
		}
	})
	t.Run(d.Name+"/a starved queue's gang reclaims a whole gang from a queue above its share", func(t *testing.T) {
		ns := env.Namespace(t)
		env.AddNodes(t, 2, "4", "16Gi")
		rich, starved := "rich-"+ns, "starved-"+ns
		d.Queue(t, rich, 1, "")
		d.Queue(t, starved, 1, "")
		d.StartScheduler(t)
		evicted := env.CountDeletions(t, ns)
		for _, g := range []string{"r1", "r2"} {
			d.Group(t, ns, g, rich, 4, "1")
			env.CreatePods(t, d.Members(ns, g, 4, "1")...)
		}
		env.WaitBoundCount(t, ns, "", 8, timeout)
		d.Group(t, ns, "s", starved, 4, "1")
		s := env.CreatePods(t, d.Members(ns, "s", 4, "1")...)
		env.WaitBound(t, ns, converge, Names(s)...)
		// The gang may bind before the last eviction's deletion reaches
		// the watch that counts them: wait for the count, then check it.
		harness.WaitDeletions(t, evicted, 4)
		if n := evicted(); n != 4 {
			t.Errorf("%d evictions, want one rich gang's 4", n)
		}
		r1, r2 := Running(t, env, ns, "r1"), Running(t, env, ns, "r2")
		if r1+r2 != 4 || r1 != 0 && r1 != 4 {
			t.Errorf("the rich gangs run %d and %d members, want one whole and the other gone", r1, r2)
		}
	})
	t.Run(d.Name+"/a gang preempts a lower-priority gang of its queue", func(t *testing.T) {
		ns := env.Namespace(t)
		env.AddNodes(t, 2, "4", "16Gi")
		q := "shared-" + ns
		d.Queue(t, q, 1, "")
		d.StartScheduler(t)
		evicted := env.CountDeletions(t, ns)
		d.Group(t, ns, "low", q, 8, "1")
		env.CreatePods(t, withPriority(d.Members(ns, "low", 8, "1"), 1)...)
		env.WaitBoundCount(t, ns, "", 8, timeout)
		d.Group(t, ns, "high", q, 4, "1")
		high := env.CreatePods(t, withPriority(d.Members(ns, "high", 4, "1"), 100)...)
		env.WaitBound(t, ns, converge, Names(high)...)
		// low's minimum is all 8: it goes whole, never in part. high binds
		// once 4 are gone, possibly before the watch has seen the rest.
		harness.WaitDeletions(t, evicted, 8)
		if n := evicted(); n != 8 {
			t.Errorf("%d evictions, want the low gang's 8", n)
		}
		if n := Running(t, env, ns, "low"); n != 0 {
			t.Errorf("the low gang runs %d members, want 0 (taken whole)", n)
		}
	})
}

// withPriority gives pods priority p through harness.PriorityClassName(p),
// which Env.CreatePod creates.
func withPriority(pods []*v1.Pod, p int32) []*v1.Pod {
	for _, pod := range pods {
		pod.Spec.PriorityClassName = harness.PriorityClassName(p)
		pod.Spec.Priority = ptr.To(p)
	}
	return pods
}

// Running counts group g's members (named g-<i>) that hold a node and are
// not being deleted.
func Running(t *testing.T, env *harness.Env, ns, g string) int {
	t.Helper()
	pods, err := env.Client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range pods.Items {
		if strings.HasPrefix(p.Name, g+"-") && p.Spec.NodeName != "" && p.DeletionTimestamp == nil {
			n++
		}
	}
	return n
}

// Names are the pods' names, for Env.WaitBound and friends.
func Names(pods []*v1.Pod) []string {
	out := make([]string, len(pods))
	for i, p := range pods {
		out[i] = p.Name
	}
	return out
}
