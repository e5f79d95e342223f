package queues_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	qclient "github.com/caldera-sched/caldera/pkg/apis/generated/clientset/versioned"
	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/pkg/status"
	"github.com/caldera-sched/caldera/test/integration/harness"
)

// A pod its queue holds back runs no scheduling cycle, so before this it
// showed no condition at all. Now each waiting pod of a refused gang or
// singleton carries PodScheduled=False with reason WaitingForAdmission and
// the verdict as message — never reason Unschedulable, which is what
// cluster-autoscaler scales up for — within 5 s; the condition is not
// rewritten while the verdict stays; and it is gone once the pods are
// admitted and bound.
func TestWaitingPodsShowTheVerdict(t *testing.T) {
	env := harness.Start(t)
	qc, err := qclient.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	ns := env.Namespace(t)
	env.AddNodes(t, 1, "8", "16Gi")
	env.CreateQueue(t, "verdict", qapi.QueueSpec{Weight: 1, Capability: v1.ResourceList{v1.ResourceCPU: resource.MustParse("2")}})
	env.StartScheduler(t)
	inQueue := map[string]string{qapi.QueueLabel: "verdict"}

	pg := harness.PodGroup(ns, "held", 3)
	pg.Labels = inQueue
	env.CreatePodGroup(t, pg)
	env.CreatePods(t, harness.Members(ns, "held", 3, "1")...)
	env.CreatePod(t, harness.Pod(ns, "solo").CPU("3").Labels(inQueue).Obj())
	waiting := []string{"held-0", "held-1", "held-2", "solo"}

	told := map[string]v1.PodCondition{}
	harness.WaitFor(t, 5*time.Second, func() (bool, error) {
		for _, name := range waiting {
			p, err := env.Client.CoreV1().Pods(ns).Get(t.Context(), name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			c := scheduledCondition(p)
			if c == nil || c.Reason != status.ReasonWaitingForAdmission {
				return false, nil
			}
			told[name] = *c
		}
		return true, nil
	}, "every waiting pod's PodScheduled condition to give the admission verdict")
	for name, c := range told {
		if c.Status != v1.ConditionFalse || c.Reason == v1.PodReasonUnschedulable {
			t.Errorf("%s: PodScheduled %s/%s: a pod held by its queue must be False and not Unschedulable", name, c.Status, c.Reason)
		}
		if !strings.Contains(c.Message, "verdict") || !strings.Contains(c.Message, "capability") {
			t.Errorf("%s: the message should name the queue and the check: %q", name, c.Message)
		}
	}

	// The verdict stays: nothing is written again (one write per pod per
	// change of verdict).
	rv := map[string]string{}
	for _, name := range waiting {
		p, err := env.Client.CoreV1().Pods(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		rv[name] = p.ResourceVersion
	}
	env.ConsistentlyUnbound(t, ns, quiet, waiting...)
	for _, name := range waiting {
		p, err := env.Client.CoreV1().Pods(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.ResourceVersion != rv[name] {
			t.Errorf("%s was written while its verdict stayed: %s", name, describeScheduled(p))
		}
	}

	// The queue grows: both are admitted and bound, and no pod keeps the verdict.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		q, err := qc.SchedulingV1alpha1().Queues().Get(t.Context(), "verdict", metav1.GetOptions{})
		if err != nil {
			return err
		}
		q.Spec.Capability = v1.ResourceList{v1.ResourceCPU: resource.MustParse("8")}
		_, err = qc.SchedulingV1alpha1().Queues().Update(t.Context(), q, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	env.WaitBound(t, ns, timeout, waiting...)
	waitScheduled(t, env, ns, waiting)
}

// A gang short of members is held by CalderaGang: its pods say so in their
// condition, and lose it when the last member arrives and the gang runs.
func TestPodsOfAGangShortOfMembersShowIt(t *testing.T) {
	env := harness.Start(t)
	ns := env.Namespace(t)
	env.AddNodes(t, 1, "8", "16Gi")
	env.StartScheduler(t)
	env.CreatePodGroup(t, harness.PodGroup(ns, "short", 3))
	members := harness.Members(ns, "short", 3, "1")
	env.CreatePods(t, members[:2]...)
	harness.WaitFor(t, 5*time.Second, func() (bool, error) {
		for _, p := range members[:2] {
			got, err := env.Client.CoreV1().Pods(ns).Get(t.Context(), p.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			c := scheduledCondition(got)
			if c == nil || c.Reason != status.ReasonWaitingForMembers || c.Status != v1.ConditionFalse {
				return false, nil
			}
			if !strings.Contains(c.Message, "minMember 3") {
				return false, fmt.Errorf("%s: the message should give minMember: %q", p.Name, c.Message)
			}
		}
		return true, nil
	}, "the members' PodScheduled condition to say the gang waits for members")
	env.CreatePods(t, members[2])
	names := []string{members[0].Name, members[1].Name, members[2].Name}
	env.WaitBound(t, ns, timeout, names...)
	waitScheduled(t, env, ns, names)
}

// waitScheduled waits until every named pod has PodScheduled=True: bound,
// with no verdict of Caldera's left.
func waitScheduled(t *testing.T, env *harness.Env, ns string, names []string) {
	t.Helper()
	harness.WaitFor(t, timeout, func() (bool, error) {
		for _, name := range names {
			p, err := env.Client.CoreV1().Pods(ns).Get(t.Context(), name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if c := scheduledCondition(p); c == nil || c.Status != v1.ConditionTrue {
				return false, nil
			}
		}
		return true, nil
	}, "every pod bound with PodScheduled=True")
}

func scheduledCondition(p *v1.Pod) *v1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == v1.PodScheduled {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

func describeScheduled(p *v1.Pod) string {
	c := scheduledCondition(p)
	if c == nil {
		return "no PodScheduled condition"
	}
	return fmt.Sprintf("PodScheduled %s/%s: %s", c.Status, c.Reason, c.Message)
}

// Past admission, a gang the nodes cannot take (here: its members must
// not share a node, which admission's placement check does not model, and
// there is one node) gets why on its PodGroup's verdict annotation,
// where it stays after the Events expire; once a second node lets it
// start, the annotation is gone.
func TestAdmittedGangShowsWhyItCannotBePlaced(t *testing.T) {
	env := harness.Start(t)
	ns := env.Namespace(t)
	env.AddNodes(t, 1, "4", "8Gi")
	env.StartScheduler(t)
	env.CreatePodGroup(t, harness.PodGroup(ns, "apart", 2))
	members := harness.Members(ns, "apart", 2, "1")
	for _, m := range members {
		m.Spec.Affinity = &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{{
				TopologyKey:   v1.LabelHostname,
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{v1alpha1.PodGroupLabel: "apart"}},
			}},
		}}
	}
	env.CreatePods(t, members...)

	verdict := func() (string, bool) {
		pg, err := env.PGClient.SchedulingV1alpha1().PodGroups(ns).Get(t.Context(), "apart", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		v, ok := pg.Annotations[qapi.VerdictAnnotation]
		return v, ok
	}
	harness.WaitFor(t, timeout, func() (bool, error) {
		v, _ := verdict()
		return strings.HasPrefix(v, "admitted, but its members cannot be placed: ") && strings.Contains(v, "anti-affinity"), nil
	}, "PodGroup apart's verdict to say it is admitted but its members cannot be placed, for their anti-affinity")

	env.AddNodes(t, 1, "4", "8Gi")
	env.WaitBoundCount(t, ns, v1alpha1.PodGroupLabel+"=apart", 2, timeout)
	harness.WaitFor(t, timeout, func() (bool, error) {
		_, ok := verdict()
		return !ok, nil
	}, "PodGroup apart's verdict to be taken out once it started")
}
