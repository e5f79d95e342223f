package badinput_test

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/caldera-sched/caldera/test/integration/harness"
)

// podGroupCases are PodGroups and member pods that are wrong or incomplete in
// ways the API server accepts.
func (b *bad) podGroupCases(t *testing.T) {
	env := b.env

	t.Run("minMember above the member count", func(t *testing.T) {
		ns := env.Namespace(t)
		env.AddNodes(t, 1, "4", "8Gi")
		env.CreatePodGroup(t, harness.PodGroup(ns, "short", 3))
		pods := harness.Members(ns, "short", 3, "1")
		env.CreatePods(t, pods[:2]...)
		env.CreatePod(t, harness.Pod(ns, "valid").CPU("1").Obj())
		ev := env.WaitEvent(t, ns, "short", "Waiting", timeout)
		wantNote(t, "Waiting note", ev.Note, "waiting for members: 2/3")
		env.WaitBound(t, ns, timeout, "valid")
		// Never a partial gang, although two members would fit.
		env.ConsistentlyUnbound(t, ns, quiet, pods[0].Name, pods[1].Name)
		env.CreatePods(t, pods[2])
		env.WaitBoundCount(t, ns, v1alpha1.PodGroupLabel+"=short", 3, timeout)
	})

	t.Run("minResources larger than the cluster", func(t *testing.T) {
		ns := env.Namespace(t)
		env.AddNodes(t, 1, "4", "8Gi")
		env.CreatePodGroup(t, harness.PodGroup(ns, "huge", 2, harness.PGMinResources("100", "")))
		env.CreatePods(t, harness.Members(ns, "huge", 2, "1")...)
		env.CreatePodGroup(t, harness.PodGroup(ns, "small", 2))
		env.CreatePods(t, harness.Members(ns, "small", 2, "1")...)
		ev := env.WaitEvent(t, ns, "huge", "NotAdmitted", timeout)
		// A request that can never fit says so, without "remaining".
		wantNote(t, "NotAdmitted note", ev.Note, "cpu request 100 exceeds")
		if containsAny(ev.Note, "remaining", "idle") {
			t.Errorf("NotAdmitted note %q should say the request can never fit, not that room is short now", ev.Note)
		}
		env.WaitBoundCount(t, ns, v1alpha1.PodGroupLabel+"=small", 2, timeout)
		env.ConsistentlyUnbound(t, ns, quiet, "huge-0", "huge-1")

		// Correcting the PodGroup lets it in.
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			pg, err := env.PGClient.SchedulingV1alpha1().PodGroups(ns).Get(t.Context(), "huge", metav1.GetOptions{})
			if err != nil {
				return err
			}
			harness.PGMinResources("2", "")(pg)
			_, err = env.PGClient.SchedulingV1alpha1().PodGroups(ns).Update(t.Context(), pg, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		env.WaitBoundCount(t, ns, v1alpha1.PodGroupLabel+"=huge", 2, timeout)
	})

	t.Run("scheduleTimeoutSeconds zero or negative", func(t *testing.T) {
		ns := env.Namespace(t)
		env.AddNodes(t, 1, "4", "8Gi")
		// Taken literally, a zero wait would reject the first member in
		// Permit before its sibling arrives, forever: it means "the plugin
		// default" instead, and so does a negative value.
		for _, tc := range []struct {
			name    string
			seconds int32
		}{{"zero", 0}, {"negative", -5}} {
			env.CreatePodGroup(t, harness.PodGroup(ns, tc.name, 2, harness.PGTimeout(tc.seconds)))
			env.CreatePods(t, harness.Members(ns, tc.name, 2, "1")...)
		}
		for _, g := range []string{"zero", "negative"} {
			env.WaitBoundCount(t, ns, v1alpha1.PodGroupLabel+"="+g, 2, timeout)
			env.WaitEvent(t, ns, g, "Scheduled", timeout)
		}
	})

	t.Run("pod naming a PodGroup of another namespace", func(t *testing.T) {
		ns, other := env.Namespace(t), env.Namespace(t)
		env.AddNodes(t, 1, "4", "8Gi")
		env.CreatePodGroup(t, harness.PodGroup(other, "shared", 2))
		env.CreatePods(t, harness.Members(other, "shared", 2, "1")...)
		env.CreatePods(t, harness.Members(ns, "shared", 2, "1")...)
		// A pod's PodGroup is looked up in the pod's own namespace only.
		ev := env.WaitEvent(t, ns, "shared-0", "Waiting", timeout)
		wantNote(t, "Waiting note", ev.Note, "waiting for PodGroup "+ns+"/shared")
		env.WaitBoundCount(t, other, v1alpha1.PodGroupLabel+"=shared", 2, timeout)
		env.ConsistentlyUnbound(t, ns, quiet)
		env.CreatePodGroup(t, harness.PodGroup(ns, "shared", 2))
		env.WaitBound(t, ns, timeout, "shared-0", "shared-1")
	})

	t.Run("pod-group label changed after creation", func(t *testing.T) {
		ns := env.Namespace(t)
		env.AddNodes(t, 1, "4", "8Gi")
		env.CreatePodGroup(t, harness.PodGroup(ns, "a", 3))
		env.CreatePodGroup(t, harness.PodGroup(ns, "b", 2))
		env.CreatePods(t, harness.Members(ns, "a", 2, "1")...)
		// A member of a, labelled b by mistake.
		env.CreatePod(t, harness.Pod(ns, "x").CPU("1").Group("b").Obj())
		wantNote(t, "Waiting note", env.WaitEvent(t, ns, "a", "Waiting", timeout).Note, "waiting for members: 2/3")
		wantNote(t, "Waiting note", env.WaitEvent(t, ns, "b", "Waiting", timeout).Note, "waiting for members: 1/2")
		env.ConsistentlyUnbound(t, ns, quiet)

		b.relabel(t, ns, "x", "a")
		// The pod moves with its label: a is complete and binds whole; b is
		// left without members and stays Pending (its Events stop at the
		// last state that had members: a group without members has none).
		env.WaitBound(t, ns, timeout, "a-0", "a-1", "x")
		env.WaitPodGroupPhase(t, ns, "a", v1alpha1.PodGroupScheduling, timeout)
		env.WaitEvent(t, ns, "a", "Scheduled", timeout)
		env.WaitPodGroupPhase(t, ns, "b", v1alpha1.PodGroupPending, timeout)
	})

	t.Run("empty pod-group label", func(t *testing.T) {
		ns := env.Namespace(t)
		env.AddNodes(t, 1, "4", "8Gi")
		// An empty value names no PodGroup: the pod is a group of one.
		env.CreatePod(t, harness.Pod(ns, "blank").CPU("1").Labels(map[string]string{v1alpha1.PodGroupLabel: ""}).Obj())
		// Admitted at once, a plain pod gets no Admitted Event (the
		// admission pass writes one only after a NotAdmitted).
		env.WaitBound(t, ns, timeout, "blank")
	})
}

// relabel sets a pod's pod-group label.
func (b *bad) relabel(t *testing.T, ns, name, group string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		pod, err := b.env.Client.CoreV1().Pods(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		pod.Labels[v1alpha1.PodGroupLabel] = group
		_, err = b.env.Client.CoreV1().Pods(ns).Update(t.Context(), pod, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("relabelling pod %s/%s into %s: %v", ns, name, group, err)
	}
}

func containsAny(s string, parts ...string) bool {
	for _, p := range parts {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}
