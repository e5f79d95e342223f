package cache

import (
	"context"
	"fmt"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/pkg/convert"
	"github.com/caldera-sched/caldera/pkg/queue"
	"github.com/caldera-sched/caldera/pkg/resources"
)

// admissionWrite is an Event and, for gangs, the admitted-at annotation that
// the status leader writes for a decision.
type admissionWrite struct {
	unit     string
	pg       *GroupKey
	pod      *v1.Pod
	admitted bool
	// uid is the PodGroup's: a decision about one object is never written
	// on another created under its name since.
	uid types.UID
	// unadmit: remove the admitted-at annotation of a released gang.
	unadmit bool
	// check is the admission check a refused unit failed.
	check queue.Check
	// clearNomination: remove pod's nominated node (its unit is not
	// admitted); nothing else is written.
	clearNomination bool
	message         string
	// profile reports a gang's Events (group.profileLocked); a singleton's
	// are its pod's profile's.
	profile string
}

// admissionAction is the Event's action for a decision: the check a refused
// unit failed is in it. client-go's events library folds Events of one
// object with the same reason and action into one series that keeps its
// first note, so with one action for every refusal a unit refused for its
// queue's capability and then for fair share kept showing the capability
// message.
func admissionAction(admitted bool, check queue.Check) string {
	if admitted {
		return "Admission"
	}
	return "Admission" + check.String()
}

// writeAdmissions is the status leader's side of admission: Events, and the
// admitted-at annotation that lets a restarted scheduler know a gang was
// admitted without admitting it again past capacity.
func (c *Cache) writeAdmissions(ctx context.Context) {
	if c.adm == nil {
		return
	}
	c.mu.Lock()
	c.noticePendingLocked()
	c.mu.Unlock()
	c.dropGatedNominations()
	for {
		select {
		case w := <-c.adm.writes:
			c.writeAdmission(ctx, w)
		default:
			return
		}
	}
}

func (c *Cache) writeAdmission(ctx context.Context, w admissionWrite) {
	logger := klog.FromContext(ctx)
	if w.clearNomination {
		c.clearNomination(ctx, w.pod)
		return
	}
	if w.pg != nil {
		if pg, err := c.pgLister.PodGroups(w.pg.Namespace).Get(w.pg.Name); err != nil || pg.UID != w.uid {
			return // gone, or another object by now
		}
	}
	if w.unadmit {
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:null}}}`, qapi.AdmittedAtAnnotation)
		if _, err := c.pgClient.SchedulingV1alpha1().PodGroups(w.pg.Namespace).Patch(ctx, w.pg.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
			statusWriteErrors.WithLabelValues(WritePodGroupAnnotation).Inc()
			logger.Error(err, "Cannot clear admission on PodGroup", "podGroup", w.pg.String())
		}
		return
	}
	rec := c.recorder(w.profile)
	if w.pod != nil {
		rec = c.recorder(w.pod.Spec.SchedulerName)
	}
	reason, typ := "NotAdmitted", v1.EventTypeWarning
	if w.admitted {
		reason, typ = "Admitted", v1.EventTypeNormal
	}
	if w.pg == nil {
		if w.pod != nil {
			rec.Eventf(w.pod, nil, typ, reason, admissionAction(w.admitted, w.check), "%s", w.message)
		}
		return
	}
	pg, err := c.pgLister.PodGroups(w.pg.Namespace).Get(w.pg.Name)
	if err != nil {
		return
	}
	rec.Eventf(PodGroupRef(pg), nil, typ, reason, admissionAction(w.admitted, w.check), "%s", w.message)
	if !w.admitted || pg.Annotations[qapi.AdmittedAtAnnotation] != "" {
		return
	}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, qapi.AdmittedAtAnnotation, time.Now().UTC().Format(time.RFC3339))
	if _, err := c.pgClient.SchedulingV1alpha1().PodGroups(pg.Namespace).Patch(ctx, pg.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
		statusWriteErrors.WithLabelValues(WritePodGroupAnnotation).Inc()
		logger.Error(err, "Cannot record admission on PodGroup", "podGroup", w.pg.String())
	}
}

// syncQueueStatus writes each Queue's status when it changed.
func (c *Cache) syncQueueStatus(ctx context.Context) {
	if c.adm == nil {
		return
	}
	type counts struct{ pending, admitted, running, completed int32 }
	c.mu.RLock()
	a := c.adm
	per := map[string]*counts{}
	for _, u := range a.units {
		n := per[u.queue]
		if n == nil {
			n = &counts{}
			per[u.queue] = n
		}
		switch {
		case !u.admitted:
			n.pending++
		case u.gang != nil && u.gang.counts.Succeeded >= int(u.min) && u.gang.counts.Running == 0:
			n.completed++
		case u.gang != nil && u.gang.counts.Running > 0:
			n.running++
		case u.gang == nil && u.pod.Status.Phase == v1.PodRunning:
			n.running++
		default:
			n.admitted++
		}
	}
	// A queue's allocated counts its descendants' (see QueueStatus.Allocated).
	alloc := make(map[string]resources.List, len(a.usage))
	for name, u := range a.usage {
		alloc[name] = alloc[name].Add(u.allocated)
		for _, anc := range a.tree.Ancestors(name) {
			alloc[anc] = alloc[anc].Add(u.allocated)
		}
	}
	var want []*qapi.Queue
	names := make([]string, 0, len(a.queues))
	for name := range a.queues {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		q := a.queues[name]
		st := q.Status.DeepCopy()
		n := per[name]
		if n == nil {
			n = &counts{}
		}
		st.Pending, st.Admitted, st.Running, st.Completed = n.pending, n.admitted, n.running, n.completed
		st.Allocated = convert.ResourceList(alloc[name])
		share := 0.0
		if a.shares != nil {
			st.Deserved = convert.ResourceList(a.shares.Deserved(name))
			share = a.shares.Share(name)
			st.Share = queue.FormatShare(share)
		}
		setCondition(&st.Conditions, q.Generation, qapi.QueueConditionInvalidParent, a.tree.Problem(name))
		over := metav1.Condition{Type: qapi.QueueConditionOverDeserved, Status: metav1.ConditionFalse, Reason: qapi.ReasonWithinDeserved, Message: "allocated is within the deserved share"}
		if share > 1 {
			over.Status, over.Reason, over.Message = metav1.ConditionTrue, qapi.ReasonAboveDeserved, "allocated exceeds the deserved share "+st.Share
		}
		putCondition(&st.Conditions, q.Generation, over)
		if !statusEqual(&q.Status, st) {
			cp := q.DeepCopy()
			cp.Status = *st
			want = append(want, cp)
		}
	}
	c.mu.RUnlock()
	for _, q := range want {
		if _, err := a.qclient.SchedulingV1alpha1().Queues().UpdateStatus(ctx, q, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			statusWriteErrors.WithLabelValues(WriteQueueStatus).Inc()
			klog.FromContext(ctx).Error(err, "Cannot write Queue status", "queue", q.Name)
		}
	}
}

func setCondition(conds *[]metav1.Condition, gen int64, typ string, p *queue.Problem) {
	c := metav1.Condition{Type: typ, Status: metav1.ConditionFalse, Reason: qapi.ReasonParentValid, Message: "the queue's parent chain reaches the root"}
	if p != nil {
		c.Status, c.Message = metav1.ConditionTrue, p.Message
		c.Reason = qapi.ReasonParentNotFound
		if p.Kind == queue.ProblemCycle {
			c.Reason = qapi.ReasonParentCycle
		}
	}
	putCondition(conds, gen, c)
}

func putCondition(conds *[]metav1.Condition, gen int64, c metav1.Condition) {
	c.ObservedGeneration = gen
	for i := range *conds {
		old := &(*conds)[i]
		if old.Type != c.Type {
			continue
		}
		if old.Status == c.Status && old.Reason == c.Reason && old.Message == c.Message && old.ObservedGeneration == gen {
			return
		}
		c.LastTransitionTime = old.LastTransitionTime
		if old.Status != c.Status {
			c.LastTransitionTime = metav1.Now()
		}
		*old = c
		return
	}
	c.LastTransitionTime = metav1.Now()
	*conds = append(*conds, c)
}

func statusEqual(a, b *qapi.QueueStatus) bool {
	if a.Share != b.Share || a.Pending != b.Pending || a.Admitted != b.Admitted || a.Running != b.Running || a.Completed != b.Completed {
		return false
	}
	if !convert.Resources(a.Allocated).Equal(convert.Resources(b.Allocated)) || !convert.Resources(a.Deserved).Equal(convert.Resources(b.Deserved)) {
		return false
	}
	if len(a.Conditions) != len(b.Conditions) {
		return false
	}
	for i := range a.Conditions {
		x, y := a.Conditions[i], b.Conditions[i]
		if x.Type != y.Type || x.Status != y.Status || x.Reason != y.Reason || x.Message != y.Message || x.ObservedGeneration != y.ObservedGeneration {
			return false
		}
	}
	return true
}

// clearNomination removes pod's status.nominatedNodeName if its unit is
// still not admitted. The uid and resourceVersion in the patch are
// preconditions: a pod recreated under the name, or one that changed since
// (re-admitted and nominated afresh by a new plan), is left alone.
func (c *Cache) clearNomination(ctx context.Context, pod *v1.Pod) {
	c.mu.RLock()
	stale := false
	if a := c.adm; a.nominated[pod.UID] == pod {
		if acct := a.pods[pod.UID]; acct != nil {
			u := a.units[acct.unit]
			stale = u != nil && !u.admitted
		}
	}
	c.mu.RUnlock()
	if !stale {
		c.mu.Lock()
		delete(c.adm.clearing, pod.UID)
		c.mu.Unlock()
		return
	}
	patch := fmt.Sprintf(`{"metadata":{"uid":%q,"resourceVersion":%q},"status":{"nominatedNodeName":null}}`, pod.UID, pod.ResourceVersion)
	_, err := c.handle.ClientSet().CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "status")
	if err == nil || apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		klog.FromContext(ctx).V(3).Info("Cleared the nomination of a pod whose group is not admitted", "pod", klog.KObj(pod), "node", pod.Status.NominatedNodeName)
		return
	}
	statusWriteErrors.WithLabelValues(WritePodNomination).Inc()
	klog.FromContext(ctx).Error(err, "Cannot clear the nomination of a pod whose group is not admitted", "pod", klog.KObj(pod))
	c.mu.Lock()
	delete(c.adm.clearing, pod.UID) // queued again at the next period
	c.mu.Unlock()
}

// dropGatedNominations removes from the scheduler's memory the nominations
// of pods whose unit is not admitted. CalderaReclaim nominates a gang's
// other members to the nodes its plan frees only in memory (they are never
// written to the API, so clearNomination cannot reach them), and
// kube-scheduler keeps such a nomination through pod updates until the pod
// runs a cycle; a released gang, gated in PreEnqueue, runs none, and its
// members kept that room from every pod of lower or equal priority. The
// nominator is the scheduling queue every profile shares. O(nodes +
// nominated pods) per status period; the nominator is asked without the
// cache's lock.
func (c *Cache) dropGatedNominations() {
	c.mu.RLock()
	nodes := make([]string, 0, len(c.nodes))
	for n := range c.nodes {
		nodes = append(nodes, n)
	}
	c.mu.RUnlock()
	var nominated []*v1.Pod
	for _, n := range nodes {
		for _, pi := range c.handle.NominatedPodsForNode(n) {
			nominated = append(nominated, pi.GetPod())
		}
	}
	if len(nominated) == 0 {
		return
	}
	var drop []*v1.Pod
	c.mu.RLock()
	for _, p := range nominated {
		acct := c.adm.pods[p.UID]
		if acct == nil || acct.bound {
			continue
		}
		if u := c.adm.units[acct.unit]; u != nil && !u.admitted {
			drop = append(drop, p)
		}
	}
	c.mu.RUnlock()
	for _, p := range drop {
		c.handle.DeleteNominatedPodIfExists(p)
	}
}
