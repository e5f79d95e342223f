package harness

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
)

// pollInterval is how often the polling helpers re-check their condition.
const pollInterval = 50 * time.Millisecond

// WaitFor polls cond every 50ms until it returns true, and fails the test
// with msg if that does not happen within timeout. An error from cond fails
// the test at once; return (false, nil) for conditions worth retrying.
func WaitFor(t testing.TB, timeout time.Duration, cond func() (bool, error), msg string) {
	t.Helper()
	waitFor(t, timeout, cond, func() string { return msg })
}

// waitFor is WaitFor with a message computed after the wait, so it can
// report the last observed state.
func waitFor(t testing.TB, timeout time.Duration, cond func() (bool, error), msg func() string) {
	t.Helper()
	ctx := context.Background()
	if c, ok := t.(interface{ Context() context.Context }); ok {
		ctx = c.Context()
	}
	waitForCtx(t, ctx, timeout, cond, msg)
}

// waitForCtx is waitFor under an explicit context; cleanup functions use it
// with context.Background(), since t.Context() is cancelled before they run.
func waitForCtx(t testing.TB, ctx context.Context, timeout time.Duration, cond func() (bool, error), msg func() string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, pollInterval, timeout, true, func(context.Context) (bool, error) {
		return cond()
	})
	if err != nil {
		if wait.Interrupted(err) {
			t.Fatalf("timed out after %v waiting for %s", timeout, msg())
		}
		t.Fatalf("waiting for %s: %v", msg(), err)
	}
}

// BoundPods counts the pods in ns matching the label selector (""
// selects all) that are bound to a node.
func (e *Env) BoundPods(t *testing.T, ns, selector string) int {
	t.Helper()
	return e.countPods(t, ns, selector, func(p *v1.Pod) bool { return p.Spec.NodeName != "" })
}

// countPods counts the pods in ns matching selector for which keep holds.
func (e *Env) countPods(t *testing.T, ns, selector string, keep func(*v1.Pod) bool) int {
	t.Helper()
	pods, err := e.Client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatalf("listing pods in %s: %v", ns, err)
	}
	n := 0
	for i := range pods.Items {
		if keep(&pods.Items[i]) {
			n++
		}
	}
	return n
}

// WaitBound waits until every named pod in ns is bound and returns the node
// each one is bound to.
func (e *Env) WaitBound(t *testing.T, ns string, timeout time.Duration, names ...string) map[string]string {
	t.Helper()
	nodes := map[string]string{}
	waitFor(t, timeout, func() (bool, error) {
		for _, name := range names {
			if nodes[name] != "" {
				continue
			}
			pod, err := e.Client.CoreV1().Pods(ns).Get(t.Context(), name, metav1.GetOptions{})
			if err != nil {
				return false, ignoreNotFound(err)
			}
			if pod.Spec.NodeName == "" {
				return false, nil
			}
			nodes[name] = pod.Spec.NodeName
		}
		return true, nil
	}, func() string {
		var missing []string
		for _, name := range names {
			if nodes[name] == "" {
				missing = append(missing, name)
			}
		}
		return fmt.Sprintf("pods in %s to be bound; still unbound: %v%s", ns, missing, e.describePods(ns, missing))
	})
	return nodes
}

// WaitBoundCount waits until exactly want pods in ns matching selector are bound.
func (e *Env) WaitBoundCount(t *testing.T, ns, selector string, want int, timeout time.Duration) {
	t.Helper()
	got := 0
	waitFor(t, timeout, func() (bool, error) {
		got = e.BoundPods(t, ns, selector)
		return got == want, nil
	}, func() string {
		return fmt.Sprintf("%d bound pods in %s matching %q (last count %d)", want, ns, selector, got)
	})
}

// ConsistentlyUnbound asserts that none of the named pods in ns (all pods in
// ns when no name is given) gets bound during d: it polls every 50ms and fails
// the test as soon as one is bound.
//
// This is the one helper that deliberately lets time pass: proving that
// something does NOT happen needs an observation window. Keep d short and
// prefer event-driven checks (WaitUnschedulable, WaitEvent) first, so the
// window starts after the scheduler has already looked at the pods.
func (e *Env) ConsistentlyUnbound(t *testing.T, ns string, d time.Duration, names ...string) {
	t.Helper()
	ticker := time.NewTicker(pollInterval)
	defer ticker.Stop()
	deadline := time.Now().Add(d)
	for {
		pods, err := e.Client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatalf("listing pods in %s: %v", ns, err)
		}
		for i := range pods.Items {
			p := &pods.Items[i]
			if len(names) > 0 && !slices.Contains(names, p.Name) {
				continue
			}
			if p.Spec.NodeName != "" {
				t.Fatalf("expected pods in %s to stay unbound for %v, but %s was bound to %s", ns, d, p.Name, p.Spec.NodeName)
			}
		}
		if !time.Now().Before(deadline) {
			return
		}
		select {
		case <-ticker.C:
		case <-t.Context().Done():
			t.Fatalf("test context ended while watching pods in %s", ns)
		}
	}
}

// WaitUnschedulable waits until the named pod has condition
// PodScheduled=False with reason Unschedulable, i.e. the scheduler tried it
// and found no place for it.
func (e *Env) WaitUnschedulable(t *testing.T, ns, name string, timeout time.Duration) *v1.Pod {
	t.Helper()
	var last *v1.Pod
	waitFor(t, timeout, func() (bool, error) {
		pod, err := e.Client.CoreV1().Pods(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return false, ignoreNotFound(err)
		}
		last = pod
		for _, c := range pod.Status.Conditions {
			if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse && c.Reason == v1.PodReasonUnschedulable {
				return true, nil
			}
		}
		return false, nil
	}, func() string {
		return fmt.Sprintf("pod %s/%s to be marked Unschedulable (conditions: %v)", ns, name, podConditions(last))
	})
	return last
}

// WaitPodDeleted waits until the named pod no longer exists.
func (e *Env) WaitPodDeleted(t *testing.T, ns, name string, timeout time.Duration) {
	t.Helper()
	WaitFor(t, timeout, func() (bool, error) {
		_, err := e.Client.CoreV1().Pods(ns).Get(t.Context(), name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	}, fmt.Sprintf("pod %s/%s to be deleted", ns, name))
}

// SetPodPhase plays kubelet: it writes the pod's status.phase (retrying on
// conflicts). Running also marks the pod Ready and sets its start time.
func (e *Env) SetPodPhase(t *testing.T, ns, name string, phase v1.PodPhase) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		pod, err := e.Client.CoreV1().Pods(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		pod.Status.Phase = phase
		if phase == v1.PodRunning {
			now := metav1.Now()
			if pod.Status.StartTime == nil {
				pod.Status.StartTime = &now
			}
			setPodCondition(pod, v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: now})
		}
		_, err = e.Client.CoreV1().Pods(ns).UpdateStatus(t.Context(), pod, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("setting phase of pod %s/%s to %s: %v", ns, name, phase, err)
	}
}

// Events returns the events in ns about the object named involvedName, oldest
// first. The scheduler writes through the events.k8s.io/v1 API; the core v1
// API serves the same objects, so this one list covers events written through
// either API.
func (e *Env) Events(t *testing.T, ns, involvedName string) []eventsv1.Event {
	t.Helper()
	list, err := e.Client.EventsV1().Events(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing events in %s: %v", ns, err)
	}
	var out []eventsv1.Event
	for _, ev := range list.Items {
		if ev.Regarding.Name == involvedName {
			out = append(out, ev)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return eventTime(&out[i]).Before(eventTime(&out[j])) })
	return out
}

// WaitEvent waits for an event with the given reason about involvedName in ns
// and returns it.
func (e *Env) WaitEvent(t *testing.T, ns, involvedName, reason string, timeout time.Duration) eventsv1.Event {
	t.Helper()
	var found eventsv1.Event
	var seen []string
	waitFor(t, timeout, func() (bool, error) {
		seen = seen[:0]
		for _, ev := range e.Events(t, ns, involvedName) {
			if ev.Reason == reason {
				found = ev
				return true, nil
			}
			seen = append(seen, ev.Reason+": "+ev.Note)
		}
		return false, nil
	}, func() string {
		return fmt.Sprintf("event %q about %s/%s (seen: %q)", reason, ns, involvedName, seen)
	})
	return found
}

// WaitPodGroupPhase waits until the PodGroup's status.phase is phase.
func (e *Env) WaitPodGroupPhase(t *testing.T, ns, name string, phase v1alpha1.PodGroupPhase, timeout time.Duration) *v1alpha1.PodGroup {
	t.Helper()
	var last *v1alpha1.PodGroup
	waitFor(t, timeout, func() (bool, error) {
		pg, err := e.PGClient.SchedulingV1alpha1().PodGroups(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return false, ignoreNotFound(err)
		}
		last = pg
		return pg.Status.Phase == phase, nil
	}, func() string {
		status := "not found"
		if last != nil {
			status = fmt.Sprintf("%+v", last.Status)
		}
		return fmt.Sprintf("PodGroup %s/%s to reach phase %s (last status: %s)", ns, name, phase, status)
	})
	return last
}

// describePods summarizes the named pods' scheduling conditions for failure
// messages.
func (e *Env) describePods(ns string, names []string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out := ""
	for _, name := range names {
		pod, err := e.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			out += fmt.Sprintf("\n  %s: %v", name, err)
			continue
		}
		out += fmt.Sprintf("\n  %s: conditions %v", name, podConditions(pod))
	}
	return out
}

func podConditions(pod *v1.Pod) []string {
	if pod == nil {
		return nil
	}
	var out []string
	for _, c := range pod.Status.Conditions {
		out = append(out, fmt.Sprintf("%s=%s(%s: %s)", c.Type, c.Status, c.Reason, c.Message))
	}
	return out
}

func setPodCondition(pod *v1.Pod, cond v1.PodCondition) {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == cond.Type {
			pod.Status.Conditions[i] = cond
			return
		}
	}
	pod.Status.Conditions = append(pod.Status.Conditions, cond)
}

func eventTime(ev *eventsv1.Event) time.Time {
	switch {
	case !ev.EventTime.IsZero():
		return ev.EventTime.Time
	case ev.Series != nil:
		return ev.Series.LastObservedTime.Time
	case !ev.DeprecatedLastTimestamp.IsZero():
		return ev.DeprecatedLastTimestamp.Time
	default:
		return ev.CreationTimestamp.Time
	}
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// ConsistentlyBoundCount asserts that the number of bound pods in ns stays
// want for d (an observation window, like ConsistentlyUnbound).
func (e *Env) ConsistentlyBoundCount(t *testing.T, ns string, want int, d time.Duration) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), pollInterval, d, true, func(ctx context.Context) (bool, error) {
		if got := e.BoundPods(t, ns, ""); got != want {
			return false, fmt.Errorf("%d bound pods in %s, want %d", got, ns, want)
		}
		return false, nil
	})
	if err != nil && !wait.Interrupted(err) {
		t.Fatalf("expected %d bound pods for %v: %v", want, d, err)
	}
}

// WaitAttempted waits until the scheduler has tried the gang: the status
// writer records the first attempt as status.scheduleStartTime.
func (e *Env) WaitAttempted(t *testing.T, ns, pg string, timeout time.Duration) {
	t.Helper()
	WaitFor(t, timeout, func() (bool, error) {
		got, err := e.PGClient.SchedulingV1alpha1().PodGroups(ns).Get(t.Context(), pg, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return !got.Status.ScheduleStartTime.IsZero(), nil
	}, "PodGroup "+pg+" to record its first scheduling attempt")
}
