package autoscaler_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/pkg/status"
	"github.com/caldera-sched/caldera/test/integration/harness"
)

// Queue scenarios with the autoscaler in the loop: which of admission's
// refusals reach Karpenter (docs/queues.md, "two kinds of refusal"), and
// who gets the room it adds.

const (
	// sentinelType is the cheapest KWOK instance type that holds a 10-cpu
	// pod (16 cpu less the provider's 100m): the one node a 10-cpu pod
	// alone needs.
	sentinelType = "c-16x-amd64-linux"
	// fairPool is the NodePool of the fair-order scenario, and fairLimit
	// its CPU limit: one 16-cpu node, room for one of two 2 x 6 cpu gangs.
	fairPool  = "fair"
	fairLimit = "16"
)

// capabilityBlockedGang proves that a gang its queue's own capability
// refuses — a quota refusal, which no node cures — never reaches the
// autoscaler: its pods are never marked Unschedulable and Karpenter makes
// no NodeClaim for them. A 10-cpu sentinel in the unbounded default queue
// is created at the same moment and does need a node; once it is bound on
// Karpenter's node, a wrongly Unschedulable gang would have been in the
// same provisioning batch, so the NodeClaims must be exactly the
// sentinel's. capability is the queue's cpu capability, below the gang's
// 24 cpu: "8" equals the static node's cpu, "12" is above today's
// cluster, so that the cluster's size, not the queue, bounds the queue's
// real capability until a node joins.
func capabilityBlockedGang(t *testing.T, env *harness.Env, k *harness.Karpenter, capability string) {
	t.Run("a gang over its queue's capability "+capability+" makes no node", func(t *testing.T) {
		startEmpty(t, k)
		queue := "capped-" + capability
		env.CreateQueue(t, queue, qapi.QueueSpec{Weight: 1, Capability: v1.ResourceList{v1.ResourceCPU: resource.MustParse(capability)}})
		ns := env.Namespace(t)
		seen := watchUnschedulable(t, env, ns, v1alpha1.PodGroupLabel+"=gang")

		members, created := createQueuedGang(t, env, ns, "gang", queue, 4, "6")
		sentinel := env.CreatePod(t, harness.Pod(ns, "sentinel").CPU("10").Obj())
		bound := env.WaitBound(t, ns, 60*time.Second, sentinel.Name)
		t.Logf("sentinel bound %v after creation", time.Since(created).Round(time.Millisecond))

		verdict := fmt.Sprintf("queue %s: cpu request 24 exceeds capability %s", queue, capability)
		waitVerdict(t, env, ns, "gang", verdict)
		for _, m := range members {
			waitReason(t, env, ns, m, status.ReasonWaitingForAdmission)
		}
		unschedulable, err := seen()
		if err != nil {
			t.Error(err)
		}
		for _, obs := range unschedulable {
			t.Errorf("the capped gang's pod was marked Unschedulable: %s", obs)
		}
		for _, m := range members {
			for _, ev := range env.Events(t, ns, m) {
				if ev.Reason == "FailedScheduling" || ev.Reason == "Nominated" {
					t.Errorf("%s has event %s from %s: %s", m, ev.Reason, ev.ReportingController, ev.Note)
				}
			}
		}
		assertOnlySentinelClaim(t, k, bound[sentinel.Name])
	})
}

// assertOnlySentinelClaim checks that Karpenter made one NodeClaim, of
// sentinelType, whose node is the one the sentinel is bound to.
func assertOnlySentinelClaim(t *testing.T, k *harness.Karpenter, sentinelNode string) {
	t.Helper()
	nodes := k.Nodes(t, pool)
	claims := k.NodeClaims(t, pool)
	var types []string
	for _, c := range claims {
		types = append(types, c.GetLabels()[v1.LabelInstanceTypeStable])
	}
	t.Logf("NodeClaims: %d %v", len(claims), types)
	if len(claims) != 1 || len(nodes) != 1 {
		t.Fatalf("want exactly the sentinel's NodeClaim and node, got %d NodeClaims %v and %d nodes %v", len(claims), types, len(nodes), names(nodes))
	}
	if types[0] != sentinelType || nodes[0].Name != sentinelNode {
		t.Errorf("NodeClaim of type %s, node %s; want %s hosting the sentinel (on %s)", types[0], nodes[0].Name, sentinelType, sentinelNode)
	}
}

// fairOrderForNewRoom proves that queue order, not the autoscaler, decides
// who gets new room. Queues fair-a and fair-b have equal weights; fair-a
// already runs 4 cpu on the static node, so its share is higher. Each then
// submits a gang of 2 x 6 cpu, fair-a's first (older, and its queue's name
// sorts first: every tie-break but the share favours it), both limited to
// the NodePool fairPool, whose CPU limit lets Karpenter add room for one
// gang only. When the room appears fair-b's gang must bind whole while
// fair-a's stays pending, holding no node; once fair-b's gang is gone,
// fair-a's binds on the same room without a new node.
func fairOrderForNewRoom(t *testing.T, env *harness.Env, k *harness.Karpenter) {
	t.Run("two queues wanting new room get it in fair-share order", func(t *testing.T) {
		startEmpty(t, k)
		k.CreateNodePool(t, harness.NodePoolOptions{Name: fairPool, CPULimit: fairLimit, ConsolidateAfter: 5 * time.Second})
		env.CreateQueue(t, "fair-a", qapi.QueueSpec{Weight: 1})
		env.CreateQueue(t, "fair-b", qapi.QueueSpec{Weight: 1})
		ns := env.Namespace(t)
		running := harness.Pod(ns, "a-running").CPU("4").Labels(map[string]string{qapi.QueueLabel: "fair-a"}).Obj()
		env.CreatePod(t, running)
		env.WaitBound(t, ns, 30*time.Second, running.Name)

		created := time.Now()
		a := createPoolGang(t, env, ns, "a-gang", "fair-a")
		b := createPoolGang(t, env, ns, "b-gang", "fair-b")
		for _, m := range append(slices.Clone(a), b...) {
			env.WaitUnschedulable(t, ns, m, 30*time.Second)
		}
		t.Logf("both gangs Unschedulable %v after creation", time.Since(created).Round(time.Millisecond))

		bound := waitOneGangBound(t, env, ns, a, b)
		t.Logf("fair-b's gang bound %v after creation, on %v", time.Since(created).Round(time.Millisecond), bound)
		for _, m := range a {
			if n := bound[m]; n != "" {
				t.Fatalf("fair-a's member %s bound to %s before fair-b's gang: the higher share got the new room", m, n)
			}
		}
		waitVerdict(t, env, ns, "a-gang", "members not placeable")
		assertHoldsNothing(t, env, ns, "a-gang", a)
		claims := fairClaims(t, k)

		freed := time.Now()
		env.DeleteGroup(t, ns, "b-gang")
		boundA := env.WaitBound(t, ns, 30*time.Second, a...)
		t.Logf("fair-b's gang deleted -> fair-a's gang bound in %v, on %v", time.Since(freed).Round(time.Millisecond), boundA)
		if after := fairClaims(t, k); !slices.Equal(after, claims) {
			t.Errorf("NodeClaims %v after fair-a's gang bound, want the same %v: the freed room was enough", after, claims)
		}
	})
}

// createPoolGang creates a PodGroup name of queue and its two 6-cpu
// members, which only fairPool's nodes may take, and returns the members.
func createPoolGang(t *testing.T, env *harness.Env, ns, name, queue string) []string {
	t.Helper()
	pg := harness.PodGroup(ns, name, 2)
	pg.Labels = map[string]string{qapi.QueueLabel: queue}
	env.CreatePodGroup(t, pg)
	var out []string
	for _, m := range harness.Members(ns, name, 2, "6") {
		m.Spec.NodeSelector = map[string]string{harness.NodePoolLabel: fairPool}
		env.CreatePod(t, m)
		out = append(out, m.Name)
	}
	return out
}

// createQueuedGang creates PodGroup name of queue, minMember n, then its n
// members of cpu each, and returns the members and when the PodGroup was
// created: the time a test measures the gang's binding from.
func createQueuedGang(t *testing.T, env *harness.Env, ns, name, queue string, n int, cpu string) ([]string, time.Time) {
	t.Helper()
	pg := harness.PodGroup(ns, name, int32(n))
	pg.Labels = map[string]string{qapi.QueueLabel: queue}
	env.CreatePodGroup(t, pg)
	created := time.Now()
	var members []string
	for _, m := range harness.Members(ns, name, n, cpu) {
		env.CreatePod(t, m)
		members = append(members, m.Name)
	}
	return members, created
}

// waitOneGangBound waits until every pod of want is bound or any pod of
// other is, and returns the bound pods' nodes: it fails at once if other
// got the room, rather than timing out on want.
func waitOneGangBound(t *testing.T, env *harness.Env, ns string, other, want []string) map[string]string {
	t.Helper()
	bound := map[string]string{}
	harness.WaitFor(t, 60*time.Second, func() (bool, error) {
		pods, err := env.Client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, p := range pods.Items {
			if p.Spec.NodeName != "" {
				bound[p.Name] = p.Spec.NodeName
			}
		}
		n := 0
		for _, m := range want {
			if bound[m] != "" {
				n++
			}
		}
		return n == len(want) || slices.ContainsFunc(other, func(m string) bool { return bound[m] != "" }), nil
	}, fmt.Sprintf("the gang %v or any of %v to bind", want, other))
	return bound
}

// assertHoldsNothing checks that the gang pg is not admitted and that its
// members are neither bound nor nominated to a node.
func assertHoldsNothing(t *testing.T, env *harness.Env, ns, pg string, members []string) {
	t.Helper()
	got, err := env.PGClient.SchedulingV1alpha1().PodGroups(ns).Get(t.Context(), pg, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if at, ok := got.Annotations[qapi.AdmittedAtAnnotation]; ok {
		t.Errorf("%s admitted at %s with no room for it", pg, at)
	}
	for _, m := range members {
		p, err := env.Client.CoreV1().Pods(ns).Get(t.Context(), m, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Spec.NodeName != "" || p.Status.NominatedNodeName != "" {
			t.Errorf("%s holds a node: bound to %q, nominated to %q", m, p.Spec.NodeName, p.Status.NominatedNodeName)
		}
	}
}

// fairClaims returns fairPool's NodeClaims as "name(instance type)",
// sorted, checks that their instance types stay within fairLimit, and logs
// them. The instance type, not the claim's status, gives the cpu: KWOK's
// provider reports as capacity what the claim's pods request.
func fairClaims(t *testing.T, k *harness.Karpenter) []string {
	t.Helper()
	var out []string
	var cpu resource.Quantity
	for _, c := range k.NodeClaims(t, fairPool) {
		it := c.GetLabels()[v1.LabelInstanceTypeStable]
		out = append(out, c.GetName()+"("+it+")")
		i := slices.IndexFunc(k.InstanceTypes, func(x harness.KWOKInstanceType) bool { return x.Name == it })
		if i < 0 {
			t.Fatalf("NodeClaim %s of unknown instance type %q", c.GetName(), it)
		}
		cpu.Add(resource.MustParse(k.InstanceTypes[i].CPU))
	}
	slices.Sort(out)
	t.Logf("NodeClaims of %s: %d %v, %s cpu", fairPool, len(out), out, cpu.String())
	if cpu.Cmp(resource.MustParse(fairLimit)) > 0 {
		t.Errorf("NodeClaims of %s hold %s cpu, above its limit %s", fairPool, cpu.String(), fairLimit)
	}
	return out
}

// waitVerdict waits until PodGroup pg's verdict annotation contains want:
// the admission pass's verdict, rewritten when it changes.
func waitVerdict(t *testing.T, env *harness.Env, ns, pg, want string) {
	t.Helper()
	var last string
	harness.WaitFor(t, 30*time.Second, func() (bool, error) {
		got, err := env.PGClient.SchedulingV1alpha1().PodGroups(ns).Get(t.Context(), pg, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		last = got.Annotations[qapi.VerdictAnnotation]
		return strings.Contains(last, want), nil
	}, fmt.Sprintf("PodGroup %s's verdict to say %q", pg, want))
	t.Logf("PodGroup %s's verdict: %s", pg, last)
}

// waitReason waits until pod name's PodScheduled condition is False with
// reason.
func waitReason(t *testing.T, env *harness.Env, ns, name, reason string) {
	t.Helper()
	harness.WaitFor(t, 30*time.Second, func() (bool, error) {
		p, err := env.Client.CoreV1().Pods(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range p.Status.Conditions {
			if c.Type == v1.PodScheduled {
				return c.Status == v1.ConditionFalse && c.Reason == reason, nil
			}
		}
		return false, nil
	}, fmt.Sprintf("%s's PodScheduled reason to be %s", name, reason))
}

// watchUnschedulable watches the pods of ns matching selector from now on
// and returns a function listing, once per pod and message, every state in
// which one was seen PodScheduled=False/Unschedulable (a condition can be
// overwritten later; the watch sees every write), and an error if the
// watch ended early, leaving later writes unseen.
func watchUnschedulable(t *testing.T, env *harness.Env, ns, selector string) func() ([]string, error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w, err := env.Client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatalf("watching pods in %s: %v", ns, err)
	}
	var mu sync.Mutex
	var seen []string
	var ended error
	go func() {
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*v1.Pod)
			if !ok || ev.Type == watch.Deleted {
				continue
			}
			for _, c := range p.Status.Conditions {
				if c.Type != v1.PodScheduled || c.Status != v1.ConditionFalse || c.Reason != v1.PodReasonUnschedulable {
					continue
				}
				obs := fmt.Sprintf("%s since %s: %s", p.Name, c.LastTransitionTime.Format(time.RFC3339), c.Message)
				mu.Lock()
				if !slices.Contains(seen, obs) {
					seen = append(seen, obs)
				}
				mu.Unlock()
			}
		}
		if ctx.Err() == nil {
			mu.Lock()
			ended = fmt.Errorf("the watch of pods %s in %s ended early", selector, ns)
			mu.Unlock()
		}
	}()
	return func() ([]string, error) {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(seen), ended
	}
}
