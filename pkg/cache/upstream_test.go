package cache

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	sched "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
	"k8s.io/kubernetes/pkg/features"
	"k8s.io/utils/ptr"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/pkg/dialect/upstream"
	"github.com/caldera-sched/caldera/pkg/gangbook"
)

// upstream's PodGroups join the cache's per-dialect table (volcano_test.go).
func init() {
	dialects = append(dialects, gangAPI{
		name: "upstream",
		group: func(c *Cache, ns, name string, min int32, q, _ string) {
			c.SetGroup(logger, upstream.Spec(mkUpstreamPG(ns, name, min, q)))
		},
		member: upstreamMember,
	})
}

func mkUpstreamPG(ns, name string, min int32, q string) *sched.PodGroup {
	pg := &sched.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("upg-" + ns + "-" + name), CreationTimestamp: metav1.NewTime(t0)},
		Spec:       sched.PodGroupSpec{SchedulingPolicy: sched.PodGroupSchedulingPolicy{Gang: &sched.GangSchedulingPolicy{MinCount: min}}},
	}
	if q != "" {
		pg.Labels = map[string]string{qapi.QueueLabel: q}
	}
	return pg
}

// upstreamMember is a pod of ours in its group by spec.schedulingGroup.
func upstreamMember(ns, name, group string, opts ...podOpt) *v1.Pod {
	p := mkPod(ns, name, "", append([]podOpt{ours}, opts...)...)
	p.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: ptr.To(group)}
	return p
}

// A pod of an upstream PodGroup is a member of its group (the feed's
// slimmed copy of a finished one stays one: TestSlimJoinedPodKeepsUpstreamMembers)
// — unless kube-scheduler's own gang scheduling runs in this process,
// which then holds it alone: to Caldera it is a plain pod.
func TestUpstreamMembership(t *testing.T) {
	pod := upstreamMember("ns", "m0", "g")
	if key, ok := gangbook.GroupKeyOf(pod); !ok || key != (gangbook.GroupKey{Namespace: "ns", Name: "g"}) {
		t.Errorf("GroupKeyOf = %v, %v; want ns/g", key, ok)
	}
	if !gangbook.JoinsByName(pod) || implicitMember(pod) {
		t.Errorf("JoinsByName = %v, implicitMember = %v; want a member by name", gangbook.JoinsByName(pod), implicitMember(pod))
	}

	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.GenericWorkload, true)
	if key, ok := gangbook.GroupKeyOf(pod); ok {
		t.Errorf("with kube-scheduler's gang scheduling on, GroupKeyOf = %v; want a plain pod", key)
	}
}

// disruptionMode all reaches reclaim as one victim: ReclaimInput marks
// the running gang Whole; single leaves it a gang that keeps minCount.
func TestUpstreamDisruptionModeReachesReclaim(t *testing.T) {
	for _, all := range []bool{false, true} {
		c, _, _ := newAdmissionCache(t, singletons, mkQueue("rich"), mkQueue("starved"))
		enableEvictions(c, true, false)
		c.ApplyNode(logger, mkNode("n0", "4"))
		rich := mkUpstreamPG("ns", "r", 2, "rich")
		if all {
			rich.Spec.DisruptionMode = &sched.DisruptionMode{All: &sched.AllDisruptionMode{}}
		}
		c.SetGroup(logger, upstream.Spec(rich))
		c.SetGroup(logger, upstream.Spec(mkUpstreamPG("ns", "s", 2, "starved")))
		var running []*v1.Pod
		for i := range 4 {
			p := upstreamMember("ns", fmt.Sprint("r", i), "r", cpu("1"), boundTo("n0"), phase(v1.PodRunning))
			running = append(running, p)
			podEvent(c, p)
		}
		s := []*v1.Pod{upstreamMember("ns", "s0", "s", cpu("1")), upstreamMember("ns", "s1", "s", cpu("1"))}
		for _, p := range s {
			podEvent(c, p)
		}
		pass(c, t0)
		in, ok, why := c.ReclaimInput(s[0], running, func(*v1.Pod) bool { return false })
		if !ok {
			t.Fatalf("disruptionMode all %v: ReclaimInput: %s", all, why)
		}
		if len(in.Pods) != 4 || in.Pods[0].Group == "" {
			t.Fatalf("disruptionMode all %v: victims %+v, want the rich gang's 4", all, in.Pods)
		}
		if g := in.Groups[in.Pods[0].Group]; g.Whole != all || g.MinMember != 2 {
			t.Errorf("disruptionMode all %v: victim group %+v, want Whole %v, MinMember 2", all, g, all)
		}
	}
}

// BenchmarkGroupKeyOf measures the one rule on hot paths (queue order,
// PreEnqueue, event handlers) per way of joining a group: an upstream
// member also reads the process's GenericWorkload gate.
func BenchmarkGroupKeyOf(b *testing.B) {
	for _, bc := range []struct {
		name string
		pod  *v1.Pod
	}{
		{"label", memberOf("ns", "m0", "g")},
		{"upstream", upstreamMember("ns", "m0", "g")},
		{"plain", mkPod("ns", "p0", "", ours)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				_, _ = gangbook.GroupKeyOf(bc.pod)
			}
		})
	}
}
