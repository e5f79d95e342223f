package badinput_test

import (
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/test/integration/harness"
)

// queueCases are Queue hierarchies the API server accepts (CEL sees one
// object at a time) but the scheduler must refuse to admit into.
func (b *bad) queueCases(t *testing.T) {
	env := b.env
	for _, n := range []int{2, 3} {
		t.Run(fmt.Sprintf("parent cycle of length %d", n), func(t *testing.T) {
			ns := env.Namespace(t)
			env.AddNodes(t, 1, "4", "8Gi")
			// cyc<n>-0 -> cyc<n>-1 -> ... -> cyc<n>-0, and a child hanging
			// under the cycle.
			names := make([]string, n)
			for i := range names {
				names[i] = fmt.Sprintf("cyc%d-%d", n, i)
			}
			for i, name := range names {
				env.CreateQueue(t, name, qapi.QueueSpec{Weight: 1, Parent: names[(i+1)%n]})
			}
			under := fmt.Sprintf("cyc%d-under", n)
			env.CreateQueue(t, under, qapi.QueueSpec{Weight: 1, Parent: names[0]})

			env.CreatePod(t, harness.Pod(ns, "cyclic").CPU("1").Labels(inQueue(names[n-1])).Obj())
			env.CreatePod(t, harness.Pod(ns, "beneath").CPU("1").Labels(inQueue(under)).Obj())
			env.CreatePod(t, harness.Pod(ns, "valid").CPU("1").Obj())

			ev := env.WaitEvent(t, ns, "cyclic", "NotAdmitted", timeout)
			wantNote(t, "NotAdmitted note", ev.Note, "queue "+names[n-1], "parent cycle: ")
			ev = env.WaitEvent(t, ns, "beneath", "NotAdmitted", timeout)
			wantNote(t, "NotAdmitted note", ev.Note, "queue "+under, "is unusable", "parent cycle")
			for _, name := range names {
				msg := b.waitInvalidParent(t, name, metav1.ConditionTrue, qapi.ReasonParentCycle)
				// The message walks the whole cycle from the queue itself.
				if !strings.HasPrefix(msg, "parent cycle: "+name+" -> ") || strings.Count(msg, "->") != n {
					t.Errorf("queue %s: InvalidParent message %q should walk the %d-queue cycle from %s", name, msg, n, name)
				}
			}
			b.waitInvalidParent(t, under, metav1.ConditionTrue, qapi.ReasonParentNotFound)
			// Nothing lost: work outside the cycle still runs.
			env.WaitBound(t, ns, timeout, "valid")
			env.ConsistentlyUnbound(t, ns, quiet, "cyclic", "beneath")

			// Breaking the cycle lets both pods in and clears the conditions.
			b.setParent(t, names[n-1], "")
			env.WaitBound(t, ns, timeout, "cyclic", "beneath")
			for _, name := range append(names, under) {
				b.waitInvalidParent(t, name, metav1.ConditionFalse, qapi.ReasonParentValid)
			}
		})
	}

	t.Run("parent that does not exist", func(t *testing.T) {
		ns := env.Namespace(t)
		env.AddNodes(t, 1, "4", "8Gi")
		env.CreateQueue(t, "orphan", qapi.QueueSpec{Weight: 1, Parent: "orphan-dept"})
		pg := harness.PodGroup(ns, "lost", 2)
		pg.Labels = inQueue("orphan")
		env.CreatePodGroup(t, pg)
		env.CreatePods(t, harness.Members(ns, "lost", 2, "1")...)
		env.CreatePod(t, harness.Pod(ns, "valid").CPU("1").Obj())

		ev := env.WaitEvent(t, ns, "lost", "NotAdmitted", timeout)
		wantNote(t, "NotAdmitted note", ev.Note, `queue orphan: parent queue "orphan-dept" not found`)
		msg := b.waitInvalidParent(t, "orphan", metav1.ConditionTrue, qapi.ReasonParentNotFound)
		wantNote(t, "InvalidParent message", msg, `parent queue "orphan-dept" not found`)
		env.WaitBound(t, ns, timeout, "valid")
		env.ConsistentlyUnbound(t, ns, quiet, "lost-0", "lost-1")

		env.CreateQueue(t, "orphan-dept", qapi.QueueSpec{Weight: 1})
		env.WaitBound(t, ns, timeout, "lost-0", "lost-1")
		b.waitInvalidParent(t, "orphan", metav1.ConditionFalse, qapi.ReasonParentValid)
	})

	t.Run("deleting a parent with children", func(t *testing.T) {
		ns := env.Namespace(t)
		env.AddNodes(t, 1, "4", "8Gi")
		env.CreateQueue(t, "dept", qapi.QueueSpec{Weight: 1})
		env.CreateQueue(t, "dept-team", qapi.QueueSpec{Weight: 1, Parent: "dept"})
		env.CreatePod(t, harness.Pod(ns, "running").CPU("1").Labels(inQueue("dept-team")).Obj())
		env.WaitBound(t, ns, timeout, "running")
		env.SetPodPhase(t, ns, "running", v1.PodRunning)

		b.deleteQueue(t, "dept")
		msg := b.waitInvalidParent(t, "dept-team", metav1.ConditionTrue, qapi.ReasonParentNotFound)
		wantNote(t, "InvalidParent message", msg, `parent queue "dept" not found`)
		env.CreatePod(t, harness.Pod(ns, "late").CPU("1").Labels(inQueue("dept-team")).Obj())
		ev := env.WaitEvent(t, ns, "late", "NotAdmitted", timeout)
		wantNote(t, "NotAdmitted note", ev.Note, `queue dept-team: parent queue "dept" not found`)
		// Running work continues: nothing is evicted or unbound.
		env.ConsistentlyBoundCount(t, ns, 1, quiet)
		env.WaitBound(t, ns, timeout, "running")

		// Recreating the parent repairs the child.
		env.CreateQueue(t, "dept", qapi.QueueSpec{Weight: 1})
		env.WaitBound(t, ns, timeout, "late")
		b.waitInvalidParent(t, "dept-team", metav1.ConditionFalse, qapi.ReasonParentValid)
	})

	t.Run("unknown queue label on a single pod", func(t *testing.T) {
		ns := env.Namespace(t)
		env.AddNodes(t, 1, "4", "8Gi")
		env.CreatePod(t, harness.Pod(ns, "astray").CPU("1").Labels(inQueue("nowhere")).Obj())
		env.CreatePod(t, harness.Pod(ns, "valid").CPU("1").Obj())
		ev := env.WaitEvent(t, ns, "astray", "NotAdmitted", timeout)
		wantNote(t, "NotAdmitted note", ev.Note, "queue nowhere not found")
		env.WaitBound(t, ns, timeout, "valid")
		env.ConsistentlyUnbound(t, ns, quiet, "astray")
		env.CreateQueue(t, "nowhere", qapi.QueueSpec{Weight: 1})
		env.WaitBound(t, ns, timeout, "astray")
	})
}
