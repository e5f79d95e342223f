// Package badinput_test feeds Caldera bad input against a real kube-apiserver
// and the real scheduler, and checks two things for every case: the user is
// told (an Event, a Queue condition, an API error or a startup error naming
// the problem), and nothing is lost (valid work next to the bad input still
// schedules, and the bad input schedules once it is corrected).
//
// docs/reliability.md lists every case with what the user sees; cases the
// API server rejects by itself (Queue weight and quantities, PodGroup
// minMember) are tested in test/integration/queueapi and test/integration/gang.
package badinput_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	qclient "github.com/caldera-sched/caldera/pkg/apis/generated/clientset/versioned"
	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/test/integration/harness"
)

const (
	timeout = 30 * time.Second
	// quiet is how long a case watches for something that must NOT happen,
	// after it has seen the scheduler act on the input.
	quiet = 3 * time.Second
)

// TestBadInput runs every case on one control plane. The scheduling cases
// share one scheduler; the startup cases run after it has stopped, since each
// of them tries to start a scheduler of its own.
func TestBadInput(t *testing.T) {
	env := harness.Start(t)
	b := &bad{env: env, qc: env.QueueClient()}
	t.Run("scheduling", func(t *testing.T) {
		env.StartScheduler(t)
		t.Run("queues", b.queueCases)
		t.Run("podgroups", b.podGroupCases)
	})
	t.Run("startup", b.startupCases)
}

// bad holds what the cases share.
type bad struct {
	env *harness.Env
	qc  qclient.Interface
}

// deleteQueue deletes a Queue now.
func (b *bad) deleteQueue(t *testing.T, name string) {
	t.Helper()
	if err := b.qc.SchedulingV1alpha1().Queues().Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting queue %s: %v", name, err)
	}
}

// setParent changes a Queue's spec.parent.
func (b *bad) setParent(t *testing.T, name, parent string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		q, err := b.qc.SchedulingV1alpha1().Queues().Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		q.Spec.Parent = parent
		_, err = b.qc.SchedulingV1alpha1().Queues().Update(t.Context(), q, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("setting the parent of queue %s to %q: %v", name, parent, err)
	}
}

// waitInvalidParent waits until the Queue's InvalidParent condition has the
// given status and reason and returns its message.
func (b *bad) waitInvalidParent(t *testing.T, name string, status metav1.ConditionStatus, reason string) string {
	t.Helper()
	var last metav1.Condition
	harness.WaitFor(t, timeout, func() (bool, error) {
		q, err := b.qc.SchedulingV1alpha1().Queues().Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range q.Status.Conditions {
			if c.Type == qapi.QueueConditionInvalidParent {
				last = c
				return c.Status == status && c.Reason == reason, nil
			}
		}
		return false, nil
	}, fmt.Sprintf("queue %s to report %s=%s/%s", name, qapi.QueueConditionInvalidParent, status, reason))
	return last.Message
}

// wantNote fails unless the Event's note contains every part.
func wantNote(t *testing.T, what, note string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(note, p) {
			t.Errorf("%s %q should contain %q", what, note, p)
		}
	}
}

func inQueue(q string) map[string]string { return map[string]string{qapi.QueueLabel: q} }
